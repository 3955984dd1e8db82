package providerevents_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// The sample events' fictional numbers (US 555-01xx): they must never be stored or logged.
const (
	destination = "+15555550100"
	origination = "+15555550188"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// fakeReceipts is an in-memory providerevents.Writer with the store's merge rule.
type fakeReceipts struct {
	mu   sync.Mutex
	byID map[string]providerevents.Receipt
	puts int
	Err  error
}

func newFakeReceipts() *fakeReceipts { return &fakeReceipts{byID: map[string]providerevents.Receipt{}} }

func (f *fakeReceipts) Put(_ context.Context, rc providerevents.Receipt) (providerevents.Receipt, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if f.Err != nil {
		return providerevents.Receipt{}, false, f.Err
	}
	old, ok := f.byID[rc.AttemptRef]
	if ok && !providerevents.Supersedes(rc, old) {
		return old, false, nil
	}
	f.byID[rc.AttemptRef] = rc
	return rc, true, nil
}

func (f *fakeReceipts) get(ref string) (providerevents.Receipt, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rc, ok := f.byID[ref]
	return rc, ok
}

// keysOf finds keys by scanning a notifytest.Store, as the by_notification index does.
type keysOf struct {
	store *notifytest.Store
	Err   error
}

func (k keysOf) KeyByNotificationID(_ context.Context, id string) (string, error) {
	if k.Err != nil {
		return "", k.Err
	}
	for _, r := range k.store.All() {
		if r.NotificationID == id {
			return r.IdempotencyKey, nil
		}
	}
	return "", fmt.Errorf("keysOf %s: %w", id, notify.ErrNotFound)
}

// racing makes the first n Transition calls lose: before each, race (when set) changes the
// record as a concurrent writer would; without it the call just reports a conflict.
type racing struct {
	*notifytest.Store
	mu    sync.Mutex
	n     int
	calls int
	race  func(ctx context.Context, s *notifytest.Store, prev notify.Record)
}

func (r *racing) Transition(ctx context.Context, prev, next notify.Record) error {
	r.mu.Lock()
	r.calls++
	lose := r.calls <= r.n
	r.mu.Unlock()
	if lose {
		if r.race != nil {
			r.race(ctx, r.Store, prev)
		}
		return fmt.Errorf("racing: %w", notify.ErrConflict)
	}
	return r.Store.Transition(ctx, prev, next)
}

// fixture is a Recorder over fakes, with its log and metric lines captured.
type fixture struct {
	rec      *providerevents.Recorder
	receipts *fakeReceipts
	store    *notifytest.Store
	clock    *notifytest.Clock
	out      *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{receipts: newFakeReceipts(), store: notifytest.NewStore(), clock: notifytest.NewClock(t0), out: &bytes.Buffer{}}
	f.rec = &providerevents.Recorder{
		Receipts:      f.receipts,
		Keys:          keysOf{store: f.store},
		Notifications: f.store,
		Clock:         f.clock,
		Log:           obs.NewLogger(&lockedWriter{w: f.out}, slog.LevelDebug),
		Metrics:       &obs.Metrics{W: &lockedWriter{w: f.out}, Function: "provider-events"},
	}
	return f
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// admit stores a record for notification id and moves it to state at attempt 1 (or to
// retry_scheduled and on to attempt 2 for the states that need a second attempt).
func (f *fixture) admit(t *testing.T, key, id string, path ...notify.Change) notify.Record {
	t.Helper()
	req := notify.Request{
		IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: destination, Locale: "en", Params: map[string]string{notify.ParamCode: "123456"}, ExpiresAt: t0.Add(15 * time.Minute),
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: id, Sealed: []byte("sealed"), DestinationFP: "fp"}, t0, notify.DefaultPolicy())
	if _, _, err := f.store.Admit(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	for _, ch := range path {
		next, err := rec.Apply(ch, f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.Transition(context.Background(), rec, next); err != nil {
			t.Fatal(err)
		}
		rec = next
	}
	return rec
}

// Transitions a test record goes through.
var (
	lease    = notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: t0.Add(time.Minute)}
	accepted = notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "msg-1", Provider: "simulator"}
	// acceptedEUM is accepted by End User Messaging as the message of eumEvent.
	acceptedEUM = notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "aws-msg-1", Provider: "endusersms"}
	timedOut    = notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout}
	throttled   = notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonProviderThrottled, NextActionAt: t0.Add(time.Second)}
	notFound    = notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonReconciledNotFound, NextActionAt: t0.Add(time.Second)}
	delivered   = notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered}
	undelivered = notify.Change{To: notify.StateUndelivered, Reason: notify.ReasonReceiptFailed}
)

func receipt(ref string, status sms.ReceiptStatus) providerevents.Receipt {
	return providerevents.Receipt{AttemptRef: ref, MessageID: "msg-1", Status: status, At: t0.Add(5 * time.Second), Provider: "simulator", Detail: "x"}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// neighbour returns rc as another provider of the chain would report it: its own provider
// name and message ID, under our attempt reference.
func neighbour(rc providerevents.Receipt) providerevents.Receipt {
	rc.Provider, rc.MessageID = "simulator2", "simulator2-00000001"
	return rc
}
