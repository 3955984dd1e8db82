// Package stacktest runs intake and the workers in one process against DynamoDB Local, moto
// SQS and the SMS simulator, built by the same wiring as the Lambda functions (the shared/wire
// packages), for the workers' fault tests (infra/workerfaults) and the audit kit (infra/audittest);
// and SDK middleware that lets a committed write's response be lost (CommitThenFail).
package stacktest

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/invocation"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/reconcile"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/sweeper"
	"github.com/resetnotify/resetnotify/shared/tables"
	dispatchwire "github.com/resetnotify/resetnotify/shared/wire/dispatch"
	reconcilewire "github.com/resetnotify/resetnotify/shared/wire/reconcile"
	sweeperwire "github.com/resetnotify/resetnotify/shared/wire/sweeper"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// StackOptions shape a Stack. The zero value is a working pipeline: a simulator that accepts
// everything, a 1 s provider timeout, no visibility window, and short backoff.
type StackOptions struct {
	// Sim configures the in-process simulator.
	Sim smssim.Config
	// SMSTimeout bounds each provider call (default 1s).
	SMSTimeout time.Duration
	// Visibility is the lookup visibility window (default 0, the simulator's default).
	Visibility time.Duration
	// Policy is the admission policy (default notify.DefaultPolicy with SweepAfter 1s, so the
	// sweeper finds a record whose message was lost within seconds).
	Policy *notify.Policy
	// Worker overrides the workers' configuration (default: backoff base 100 ms, max 2 s).
	Worker *config.Worker
	// SMSURL, when set, replaces the simulator's URL for the workers (e.g. a closed port).
	SMSURL string
	// Sim2, when set, starts a second simulator in its second-provider mode (provider
	// simulator2) and gives the workers the chain simulator,simulator2.
	Sim2 *smssim.Config
	// SMS2URL, when set, replaces the second simulator's URL for the workers.
	SMS2URL string
	// APIOptions are added to the AWS configuration of every client the stack builds (the
	// store, the workers, intake, the receipts): SDK middleware such as CommitThenFail.
	APIOptions []func(*middleware.Stack) error
}

// Stack is the dispatch pipeline wired as in AWS, against the local emulators: a fresh
// notifications table in DynamoDB Local, fresh dispatch and reconcile queues in moto, an
// in-process simulator, intake's admission service, and the three workers built with the
// same wiring as the Lambda functions. It skips the test when the emulators are not
// configured (see testenv).
type Stack struct {
	// Names are the tables' names: Table is Names.Notifications.
	Names        tables.Names
	Table        string
	DispatchURL  string
	ReconcileURL string
	DynamoDB     *dynamodb.Client
	SQS          *sqs.Client
	Store        *dynamostore.Store
	Sim          *smssim.Server
	SimURL       string
	// Sim2 is the second simulated provider, when StackOptions.Sim2 asked for one.
	Sim2       *smssim.Server
	Sim2URL    string
	Intake     *notify.Service
	Dispatcher *dispatch.Dispatcher
	Reconciler *reconcile.Reconciler
	Sweeper    *sweeper.Sweeper
	// Receipts is the receipts table, which the reconcile worker reads, and Recorder is
	// provider-events' recorder over it and the notifications table.
	Receipts *providerevents.Store
	Recorder *providerevents.Recorder
	// Logs holds the workers' JSON log lines and metric lines.
	Logs *testenv.SyncBuffer
}

// NewStack builds a Stack for t; everything it creates is removed when t ends.
func NewStack(t testing.TB, o StackOptions) *Stack {
	t.Helper()
	plainDDB := testenv.DynamoDB(t)
	sqsClient := testenv.SQS(t)
	awsCfg := testenv.Config()
	awsCfg.APIOptions = append(awsCfg.APIOptions, o.APIOptions...)
	ddb := awsclient.DynamoDB(awsCfg, os.Getenv(emulator.EnvDynamoDBEndpoint))
	s := &Stack{DynamoDB: ddb, SQS: sqsClient, Logs: &testenv.SyncBuffer{}}

	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit"), Receipts: testenv.UniqueName(t, "receipts")}
	createTables(t, plainDDB, names)
	s.Names, s.Table = names, names.Notifications
	s.Store = dynamostore.New(ddb, s.Table)
	s.Receipts = providerevents.NewStore(ddb, names.Receipts, 0, nil)
	s.DispatchURL = testenv.Queue(t, sqsClient, testenv.UniqueName(t, "dispatch"))
	s.ReconcileURL = testenv.Queue(t, sqsClient, testenv.UniqueName(t, "reconcile"))
	s.Sim, s.SimURL = smssimtest.Start(t, o.Sim)
	if o.Sim2 != nil {
		cfg2 := *o.Sim2
		cfg2.Provider = config.SMSSimulator2
		s.Sim2, s.Sim2URL = smssimtest.Start(t, cfg2)
	}

	policy := notify.DefaultPolicy()
	policy.SweepAfter = time.Second
	if o.Policy != nil {
		policy = *o.Policy
	}
	key := make([]byte, config.SealLocalKeyLen)
	for i := range key {
		key[i] = byte(i + 1)
	}
	s.buildWorkers(t, awsCfg, o, policy, key)
	s.buildIntake(t, policy, key)
	s.Recorder = &providerevents.Recorder{
		Receipts: s.Receipts, Keys: s.Store, Notifications: s.Store, Clock: notify.SystemClock{},
		Log: obs.NewLogger(s.Logs, slog.LevelInfo), Metrics: &obs.Metrics{W: s.Logs, Function: providerevents.Component},
	}
	return s
}

// createTables creates the tables names, and removes them when t ends.
func createTables(t testing.TB, db *dynamodb.Client, names tables.Names) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tablesetup.Create(ctx, db, names); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range []string{names.Notifications, names.Audit, names.Receipts} {
			if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)}); err != nil {
				t.Errorf("delete table %s: %v", n, err)
			}
		}
	})
}

// buildWorkers builds the three workers with the Lambda functions' wiring (shared/wire).
func (s *Stack) buildWorkers(t testing.TB, awsCfg aws.Config, o StackOptions, policy notify.Policy, key []byte) {
	t.Helper()
	wcfg := config.Worker{BackoffBase: 100 * time.Millisecond, BackoffMax: 2 * time.Second}
	if o.Worker != nil {
		wcfg = *o.Worker
	}
	smsURL := s.SimURL
	if o.SMSURL != "" {
		smsURL = o.SMSURL
	}
	timeout := o.SMSTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	w := workercorewire.Wiring{
		Config: config.Config{
			NotificationsTable: s.Table, DispatchQueueURL: s.DispatchURL, ReconcileQueueURL: s.ReconcileURL,
			Policy: policy, SealLocalKey: key, Worker: wcfg,
			// Transitions reads every transition from the workers' log: the happy path's
			// (lease, sent) are logged at debug level.
			LogLevel: slog.LevelDebug,
		},
		AWS:              awsCfg,
		DynamoDBEndpoint: os.Getenv(emulator.EnvDynamoDBEndpoint),
		SQSEndpoint:      os.Getenv(emulator.EnvSQSEndpoint),
		SMS:              s.smsConfig(o, smsURL, timeout),
		Receipts:         s.Receipts,
		Out:              s.Logs,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if s.Dispatcher, err = dispatchwire.Build(ctx, w); err != nil {
		t.Fatal(err)
	}
	// The stack's intake admits any E.164 number (it has no allow-list), so dispatch re-checks
	// with the same rules: none.
	s.Dispatcher.Countries = notify.Countries{}
	if s.Reconciler, err = reconcilewire.Build(ctx, w); err != nil {
		t.Fatal(err)
	}
	if s.Sweeper, err = sweeperwire.Build(w); err != nil {
		t.Fatal(err)
	}
	// The schedule runs every minute in AWS; here the test decides when it runs, and acts on
	// anything already due.
	s.Sweeper.Settings.SweepGrace = 0
}

// smsConfig is the workers' provider configuration: the simulator at smsURL, and the second
// simulator after it when the stack has one.
func (s *Stack) smsConfig(o StackOptions, smsURL string, timeout time.Duration) provider.Config {
	cfg := provider.Config{Kind: provider.Simulator, Chain: []string{provider.Simulator}, SimulatorURL: smsURL, Timeout: timeout, Visibility: o.Visibility}
	if s.Sim2 != nil {
		cfg.Chain = append(cfg.Chain, provider.Simulator2)
		cfg.Simulator2URL = s.Sim2URL
		if o.SMS2URL != "" {
			cfg.Simulator2URL = o.SMS2URL
		}
	}
	return cfg
}

// buildIntake builds intake's admission service over the stack's store and dispatch queue.
func (s *Stack) buildIntake(t testing.TB, policy notify.Policy, key []byte) {
	t.Helper()
	keys, err := seal.NewStaticKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := seal.NewFingerprinter([]byte("stack-test-pepper-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	fingerprints, err := seal.NewRequestFingerprinter([]byte("stack-test-fingerprint-key-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	s.Intake = &notify.Service{
		Store: s.Store, Sealer: seal.New(keys), Hasher: hasher, Fingerprints: fingerprints,
		Queue: sqsqueue.New(s.SQS, s.DispatchURL, ""),
		Clock: notify.SystemClock{}, Policy: policy,
		NewID: func() string { return ulid.Make().String() },
		Actor: invocation.For("intake"),
	}
}

// Submit admits req through the intake service (conditional put and dispatch message).
func (s *Stack) Submit(t testing.TB, req notify.Request) notify.Record {
	t.Helper()
	out, err := s.Intake.Submit(context.Background(), req)
	if err != nil {
		t.Fatalf("submit %s: %v", req.IdempotencyKey, err)
	}
	return out.Record
}

// Get returns the stored record for key.
func (s *Stack) Get(t testing.TB, key string) notify.Record {
	t.Helper()
	rec, err := s.Store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return rec
}

// PumpOnce receives one batch from each queue and runs it through its worker, as the event
// source mappings would. It returns how many messages it handled.
func (s *Stack) PumpOnce(ctx context.Context) (int, error) {
	total := 0
	for _, q := range []struct {
		url string
		h   workercore.BatchHandler
	}{{s.DispatchURL, s.Dispatcher.Handle}, {s.ReconcileURL, s.Reconciler.Handle}} {
		res, err := pump.Once(ctx, s.SQS, q.url, q.h, pump.Options{Region: emulator.Region, VisibilityTimeout: 30 * time.Second})
		total += res.Received
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// RunUntil pumps both queues, and runs the sweeper when sweep is set, until done reports true
// or timeout passes (then the test fails). Between empty rounds it waits a little, since
// delayed messages become visible on their own schedule.
func (s *Stack) RunUntil(t testing.TB, timeout time.Duration, sweep bool, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		if sweep {
			if _, err := s.Sweeper.Sweep(ctx); err != nil && ctx.Err() == nil {
				t.Fatalf("sweep: %v", err)
			}
		}
		n, err := s.PumpOnce(ctx)
		if err != nil && ctx.Err() == nil {
			t.Fatalf("pump: %v", err)
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not done after %s", timeout)
		case <-tick.C:
		}
	}
}

// Step is one transition a worker logged.
type Step struct {
	State  notify.State
	Reason notify.Reason
}

// String is "state/REASON".
func (s Step) String() string { return string(s.State) + "/" + string(s.Reason) }

// Transitions returns, in order, the transitions the workers logged for key.
func (s *Stack) Transitions(key string) []Step {
	var out []Step
	sc := bufio.NewScanner(strings.NewReader(s.Logs.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg    string `json:"msg"`
			Key    string `json:"idempotency_key"`
			State  string `json:"state"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "transition" || line.Key != key {
			continue
		}
		out = append(out, Step{notify.State(line.State), notify.Reason(line.Reason)})
	}
	return out
}
