// Package workercore holds what the three background workers' assemblies share (dispatch,
// reconcile, sweeper), the wiring of package shared/workercore: their configuration, the
// store, the queues and the settings. It links
// no SMS adapter: the sweeper needs the provider's timings, not the provider; packages
// wire/dispatch and wire/reconcile build the provider themselves.
package workercore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// Wiring is what building a worker needs from outside: the functions' configuration, the AWS
// SDK configuration and the SMS provider's configuration. The Lambda functions fill it in
// from the environment (FromEnv); the benchmarks and the workers' tests fill it in themselves
// and call the same Build functions.
type Wiring struct {
	// Config is the functions' configuration (config.Load).
	Config config.Config
	// AWS is the SDK configuration. Endpoints come from its usual resolution
	// (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, ...) unless overridden below.
	AWS aws.Config
	// DynamoDBEndpoint and SQSEndpoint override the endpoints; empty in AWS.
	DynamoDBEndpoint string
	SQSEndpoint      string
	// SMS is the provider's configuration (config.LoadSMS). Its Timeout bounds each provider
	// call and its Visibility is the lookup window: they become Settings' ProviderTimeout and
	// Visibility, so the adapter and the worker agree.
	SMS config.SMS
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

// FromEnv reads, through env, the configuration a worker with needs has and the SMS
// provider's variables.
func FromEnv(awsCfg aws.Config, env func(string) string, out io.Writer, need config.Need) (Wiring, error) {
	cfg, err := config.Load(env, need)
	if err != nil {
		return Wiring{}, err
	}
	smsCfg, err := config.LoadSMS(env)
	if err != nil {
		return Wiring{}, err
	}
	return Wiring{Config: cfg, AWS: awsCfg, SMS: smsCfg, Out: out}, nil
}

// Parts are the pieces every worker is built from.
type Parts struct {
	Store    *dynamostore.Store
	Queue    *sqsqueue.Queue
	Clock    notify.Clock
	Settings workercore.Settings
	Log      *slog.Logger
	Metrics  *obs.Metrics
}

// Parts builds the pieces of the worker function names, after checking the settings (and
// that TTL cannot remove a record a worker may still hold).
func (w Wiring) Parts(function string) (Parts, error) {
	s := workercore.SettingsFromConfig(w.Config, w.SMS)
	if err := errors.Join(s.Validate(), workercore.CheckRetention(w.Config.Policy, s)); err != nil {
		return Parts{}, fmt.Errorf("wire.%s: %w", function, err)
	}
	out := w.Out
	if out == nil {
		out = os.Stdout
	}
	p := Parts{
		Store:    dynamostore.New(awsclient.DynamoDB(w.AWS, w.DynamoDBEndpoint), w.Config.NotificationsTable),
		Queue:    sqsqueue.New(awsclient.SQS(w.AWS, w.SQSEndpoint), w.Config.DispatchQueueURL, w.Config.ReconcileQueueURL),
		Clock:    w.Clock,
		Settings: s,
		Log:      obs.NewLogger(out, w.Config.LogLevel),
		Metrics:  &obs.Metrics{W: out, Function: function, Namespace: w.Config.MetricsNamespace},
	}
	if p.Clock == nil {
		p.Clock = notify.SystemClock{}
	}
	return p, nil
}
