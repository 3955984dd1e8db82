package workercore_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/reconcile"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/sweeper"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// t0 is the tests' "now"; the fake clock starts there.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// The secrets of every test request. No log line or metric may ever contain them.
const (
	secretPhone = "+447700900123"
	secretURL   = "https://shop.example/reset/SECRETTOKEN"
	providerSim = "fake-provider"
)

type fixture struct {
	store    *workercoretest.DueStore
	clock    *notifytest.Clock
	sender   *workercoretest.Sender
	lookup   *workercoretest.Lookup
	sched    *notifytest.Queue
	logs     *testenv.SyncBuffer
	metrics  *testenv.SyncBuffer
	settings workercore.Settings
	d        *dispatch.Dispatcher
	r        *reconcile.Reconciler
	s        *sweeper.Sweeper
}

// testSettings are DefaultSettings with small bounds, so exhaustion is quick to reach.
func testSettings() workercore.Settings {
	s := workercore.DefaultSettings()
	s.MaxAttempts = 3
	s.MaxReconciles = 3
	s.Parallelism = 4
	return s
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		store:    workercoretest.NewDueStore(),
		clock:    notifytest.NewClock(t0),
		sender:   &workercoretest.Sender{},
		lookup:   &workercoretest.Lookup{},
		logs:     &testenv.SyncBuffer{},
		metrics:  &testenv.SyncBuffer{},
		settings: testSettings(),
	}
	f.sched = &notifytest.Queue{Clock: f.clock}
	f.build(t)
	t.Cleanup(func() { f.noSecrets(t) })
	return f
}

// build (re)creates the workers from the fixture's fakes and settings. The logger has no
// redaction guard, so a test fails if worker code itself ever logs a secret.
func (f *fixture) build(t *testing.T) {
	t.Helper()
	if err := f.settings.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	metrics := &obs.Metrics{W: f.metrics, Function: "test", Now: f.clock.Now}
	f.d = &dispatch.Dispatcher{
		Store: f.store, Opener: notifytest.Sealer{}, Renderer: render.New(0), Sender: f.sender,
		Provider: providerSim, Base: workercore.Base{Queue: f.sched, Clock: f.clock, Settings: f.settings,
			Log: log, Metrics: metrics, Random: rand.New(rand.NewPCG(1, 2)).Float64},
	}
	f.r = &reconcile.Reconciler{
		Store: f.store, Lookup: sms.OnlyLookup(f.lookup), Provider: providerSim, Base: workercore.Base{Queue: f.sched,
			Clock: f.clock, Settings: f.settings, Log: log, Metrics: metrics, Random: rand.New(rand.NewPCG(3, 4)).Float64},
	}
	f.s = &sweeper.Sweeper{Store: f.store, Base: workercore.Base{Queue: f.sched, Clock: f.clock, Settings: f.settings, Log: log, Metrics: metrics}}
}

func (f *fixture) noSecrets(t *testing.T) {
	t.Helper()
	for name, out := range map[string]string{"logs": f.logs.String(), "metrics": f.metrics.String()} {
		for _, s := range []string{secretPhone, strings.TrimPrefix(secretPhone, "+"), "SECRETTOKEN", "Reset your password"} {
			if strings.Contains(out, s) {
				t.Errorf("%s contain a secret (%q)", name, s)
			}
		}
	}
}

// request returns a valid request for key whose token expires expiresIn after t0.
func request(key string, expiresIn time.Duration) notify.Request {
	return notify.Request{
		IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS,
		Purpose: notify.PurposePasswordReset, To: secretPhone, Locale: "en",
		Params: map[string]string{notify.ParamResetURL: secretURL}, ExpiresAt: t0.Add(expiresIn),
	}
}

// admit stores an accepted record for req, as intake would, and returns it.
func (f *fixture) admit(t *testing.T, req notify.Request) notify.Record {
	t.Helper()
	sealed, err := notifytest.Sealer{}.Seal(context.Background(), req.IdempotencyKey, req.Secret())
	if err != nil {
		t.Fatal(err)
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: "n-" + req.IdempotencyKey, Sealed: sealed, DestinationFP: "fp"}, f.clock.Now(), notify.DefaultPolicy())
	if _, _, err := f.store.Admit(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// admitKey admits a request for key whose token expires in 10 minutes (deadline in 9).
func (f *fixture) admitKey(t *testing.T, key string) notify.Record {
	t.Helper()
	return f.admit(t, request(key, 10*time.Minute))
}

func (f *fixture) get(t *testing.T, key string) notify.Record {
	t.Helper()
	rec, err := f.store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// put replaces the stored record for rec's key by rec, bypassing the version check, to set up
// a state directly.
func (f *fixture) put(t *testing.T, rec notify.Record) {
	t.Helper()
	cur := f.get(t, rec.IdempotencyKey)
	rec.Version = cur.Version + 1
	if err := f.store.Transition(context.Background(), cur, rec); err != nil {
		t.Fatal(err)
	}
}

// move applies a change to the stored record at the clock's time.
func (f *fixture) move(t *testing.T, key string, ch notify.Change) notify.Record {
	t.Helper()
	cur := f.get(t, key)
	next, err := cur.Apply(ch, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(context.Background(), cur, next); err != nil {
		t.Fatal(err)
	}
	return next
}

// lease moves the stored record to dispatching now, as a worker taking the lease would.
func (f *fixture) lease(t *testing.T, key string) notify.Record {
	t.Helper()
	return f.move(t, key, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease",
		LeaseUntil: f.clock.Now().Add(f.settings.Lease), Provider: providerSim})
}

func (f *fixture) dispatch(t *testing.T, m notify.Message) {
	t.Helper()
	if err := f.d.Dispatch(context.Background(), m); err != nil {
		t.Fatalf("Dispatch(%+v): %v", m, err)
	}
}

func (f *fixture) reconcile(t *testing.T, m notify.Message) {
	t.Helper()
	if err := f.r.Reconcile(context.Background(), m); err != nil {
		t.Fatalf("Reconcile(%+v): %v", m, err)
	}
}

// sweep runs the sweeper at the clock's time.
func (f *fixture) sweep(t *testing.T) sweeper.SweepReport {
	t.Helper()
	rep, err := f.s.Sweep(context.Background())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	return rep
}

// drain hands every scheduled message to its worker, advancing the clock to each message's
// delay first, until nothing is scheduled or rounds run out. It returns the rounds used.
func (f *fixture) drain(t *testing.T, rounds int) int {
	t.Helper()
	for i := range rounds {
		batch := f.sched.Take()
		if len(batch) == 0 {
			return i
		}
		for _, s := range batch {
			f.clock.Set(maxTime(f.clock.Now(), s.At))
			switch s.Queue {
			case notify.DispatchQueue:
				f.dispatch(t, s.Message)
			case notify.ReconcileQueue:
				f.reconcile(t, s.Message)
			}
		}
	}
	t.Fatalf("still scheduling after %d rounds", rounds)
	return rounds
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// state is a record's state and reason, for compact comparisons.
type state struct {
	State  notify.State
	Reason notify.Reason
}

func stateOf(r notify.Record) state { return state{r.State, r.Reason} }

// deadlineOf is the dispatch deadline of a request under the default policy.
func deadlineOf(req notify.Request) time.Time { return notify.DefaultPolicy().Deadline(req.ExpiresAt) }
