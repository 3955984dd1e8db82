package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dynamostore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/sms/provider"
	"github.com/resetnotify/resetnotify/shared/sqsqueue"
)

// Wiring is what building a worker needs from outside: the functions' configuration, the AWS
// SDK configuration and the SMS provider's configuration. The Lambda functions build their
// workers from it with WiringFromEnv and the New*FromConfig functions, and the local stack
// builds the very same workers by filling it in itself.
type Wiring struct {
	// Config is the functions' configuration (config.FromEnv).
	Config config.Config
	// AWS is the SDK configuration. Endpoints come from its usual resolution
	// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, ...) unless overridden below.
	AWS aws.Config
	// DynamoDBEndpoint and SQSEndpoint override the endpoints; empty in AWS.
	DynamoDBEndpoint string
	SQSEndpoint      string
	// SMS is the provider's configuration (provider.ConfigFromEnv). Its Timeout bounds each
	// provider call and its Visibility is the lookup window: they become Settings'
	// ProviderTimeout and Visibility, so the adapter and the worker agree.
	SMS provider.Config
	// Receipts reads delivery events recorded by provider-events. The reconcile worker reads
	// them first for every provider, and a provider without a lookup API (endusersms)
	// reconciles through them alone. Optional.
	Receipts sms.ReceiptReader
	// HTTPClient is the HTTP adapters' client; nil means their own.
	HTTPClient *http.Client
	// Clock tells the time; nil means the system clock.
	Clock notify.Clock
	// Out receives the JSON logs and EMF metric lines; nil means os.Stdout.
	Out io.Writer
}

// WiringFromEnv reads the configuration a function with needs has, the SMS provider's
// variables (when needSMS) and the SDK's default configuration.
func WiringFromEnv(ctx context.Context, need config.Need, needSMS bool) (Wiring, error) {
	cfg, err := config.FromEnv(need)
	if err != nil {
		return Wiring{}, err
	}
	w := Wiring{Config: cfg}
	if needSMS {
		if w.SMS, err = provider.ConfigFromEnv(os.Getenv); err != nil {
			return Wiring{}, err
		}
	}
	if w.AWS, err = awsconfig.LoadDefaultConfig(ctx); err != nil {
		return Wiring{}, fmt.Errorf("worker.wiring: aws config: %w", err)
	}
	return w, nil
}

// SettingsFromConfig returns DefaultSettings with what the configuration sets applied: the
// policy's MaxAttempts, the Worker fields that are set, and the provider's timeout and
// visibility window. MinValidity is never below the provider's minimum validity: with less
// time left the provider refuses the send without a call, and leasing for it would spend an
// attempt (retry_scheduled, even failed / ATTEMPTS_EXHAUSTED) on a record that should expire.
func SettingsFromConfig(c config.Config, p provider.Config) Settings {
	s := DefaultSettings()
	if c.Policy.MaxAttempts > 0 {
		s.MaxAttempts = c.Policy.MaxAttempts
	}
	if c.Worker.MaxReconciles > 0 {
		s.MaxReconciles = c.Worker.MaxReconciles
	}
	if c.Worker.Lease > 0 {
		s.Lease = c.Worker.Lease
	}
	if c.Worker.MinValidity > 0 {
		s.MinValidity = c.Worker.MinValidity
	}
	if c.Worker.BackoffBase > 0 {
		s.BackoffBase = c.Worker.BackoffBase
	}
	if c.Worker.BackoffMax > 0 {
		s.BackoffMax = c.Worker.BackoffMax
	}
	if c.Policy.SweepAfter > 0 {
		s.RequeueAfter = c.Policy.SweepAfter
	}
	s.MinValidity = max(s.MinValidity, p.MinValidity())
	if p.Timeout > 0 {
		s.ProviderTimeout = p.Timeout
	}
	s.Visibility = p.Visibility
	return s
}

// parts are the pieces every worker is built from.
type parts struct {
	store     *dynamostore.Store
	scheduler *sqsqueue.Queue
	clock     notify.Clock
	settings  Settings
	out       io.Writer
}

func (w Wiring) parts(function string) (parts, error) {
	s := SettingsFromConfig(w.Config, w.SMS)
	if err := errors.Join(s.Validate(), CheckRetention(w.Config.Policy, s)); err != nil {
		return parts{}, fmt.Errorf("worker.%s: %w", function, err)
	}
	p := parts{
		store:     dynamostore.New(awsclient.DynamoDB(w.AWS, w.DynamoDBEndpoint), w.Config.NotificationsTable),
		scheduler: sqsqueue.New(awsclient.SQS(w.AWS, w.SQSEndpoint), w.Config.DispatchQueueURL, w.Config.ReconcileQueueURL),
		clock:     w.Clock,
		settings:  s,
		out:       w.Out,
	}
	if p.clock == nil {
		p.clock = notify.SystemClock{}
	}
	if p.out == nil {
		p.out = os.Stdout
	}
	return p, nil
}

// provider builds the SMS provider of a function that calls it, with its secrets read from
// SSM at cold start (provider.ResolveSecrets).
func (w Wiring) provider(ctx context.Context, function string) (provider.Provider, error) {
	cfg, err := provider.ResolveSecrets(ctx, w.SMS, ssm.NewFromConfig(w.AWS))
	if err != nil {
		return provider.Provider{}, fmt.Errorf("worker.%s: %w", function, err)
	}
	deps := provider.Deps{AWS: w.AWS, Receipts: w.Receipts, HTTPClient: w.HTTPClient, Clock: w.Clock}
	p, err := provider.New(cfg, deps)
	if err != nil {
		return provider.Provider{}, fmt.Errorf("worker.%s: %w", function, err)
	}
	return p, nil
}

// NewDispatcherFromConfig builds the dispatch worker: the DynamoDB store, the opener (KMS in
// AWS, the local key otherwise), the renderer with the configured segment budget, the
// provider's Sender, and the SQS queue.
func NewDispatcherFromConfig(ctx context.Context, w Wiring) (*Dispatcher, error) {
	p, err := w.parts("dispatch")
	if err != nil {
		return nil, err
	}
	keys, err := seal.Source(kms.NewFromConfig(w.AWS), w.Config.SealKMSKeyID, w.Config.SealLocalKey)
	if err != nil {
		return nil, fmt.Errorf("worker.dispatch: %s: %w", config.EnvSealLocalKey, err)
	}
	prov, err := w.provider(ctx, "dispatch")
	if err != nil {
		return nil, err
	}
	return &Dispatcher{
		Store: p.store, Opener: seal.New(keys), Renderer: render.New(w.Config.Worker.MaxSegments),
		Sender: prov.Sender, Provider: prov.Name, Base: Base{Queue: p.scheduler, Clock: p.clock,
			Settings: p.settings, Log: obs.NewLogger(p.out, w.Config.LogLevel),
			Metrics: &obs.Metrics{W: p.out, Function: "dispatch"}},
	}, nil
}

// NewReconcilerFromConfig builds the reconcile worker. It takes only the provider's
// LookupOnly; the Sender the provider package also builds is dropped here and never reachable
// from the Reconciler.
func NewReconcilerFromConfig(ctx context.Context, w Wiring) (*Reconciler, error) {
	p, err := w.parts("reconcile")
	if err != nil {
		return nil, err
	}
	prov, err := w.provider(ctx, "reconcile")
	if err != nil {
		return nil, err
	}
	return &Reconciler{
		Store: p.store, Lookup: prov.Lookup, Receipts: w.Receipts, Provider: prov.Name, Base: Base{Queue: p.scheduler,
			Clock: p.clock, Settings: p.settings, Log: obs.NewLogger(p.out, w.Config.LogLevel),
			Metrics: &obs.Metrics{W: p.out, Function: "reconcile"}},
	}, nil
}

// NewSweeperFromConfig builds the sweeper. It needs the provider's timeout and visibility
// window (to time reconciliation of a lease that ran out) but no provider adapter.
func NewSweeperFromConfig(_ context.Context, w Wiring) (*Sweeper, error) {
	p, err := w.parts("sweeper")
	if err != nil {
		return nil, err
	}
	return &Sweeper{
		Store: p.store, Base: Base{Queue: p.scheduler, Clock: p.clock, Settings: p.settings,
			Log: obs.NewLogger(p.out, w.Config.LogLevel), Metrics: &obs.Metrics{W: p.out, Function: "sweeper"}},
	}, nil
}
