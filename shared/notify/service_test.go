package notify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

type intakeFixture struct {
	in    *notify.Service
	store *notifytest.Store
	queue *notifytest.Queue
	clock *notifytest.Clock
}

func newService() intakeFixture {
	f := intakeFixture{store: notifytest.NewStore(), queue: &notifytest.Queue{}, clock: notifytest.NewClock(t0)}
	f.in = &notify.Service{
		Store: f.store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: notifytest.Sealer{}, Queue: f.queue,
		Clock: f.clock, Policy: notify.DefaultPolicy(), NewID: notifytest.IDs("n"),
	}
	return f
}

func parse(t *testing.T, b []byte, key string) notify.Request {
	t.Helper()
	req, err := notify.ParseRequest(b, key, t0, notify.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestSubmitReplayAndReuse(t *testing.T) {
	ctx := context.Background()
	f := newService()
	req := parse(t, body(nil), "k")
	first, err := f.in.Submit(ctx, req)
	if err != nil || first.Replayed || first.Record.State != notify.StateAccepted {
		t.Fatalf("first: %+v %v", first, err)
	}
	f.clock.Advance(time.Second)
	again, err := f.in.Submit(ctx, req)
	if err != nil || !again.Replayed || again.Record.NotificationID != first.Record.NotificationID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	// A replay inside the enqueue grace presumes the first message on its way.
	if got := len(f.queue.Sent()); got != 1 {
		t.Errorf("enqueued %d, want 1", got)
	}
	before := f.store.All()
	other := parse(t, body(func(m map[string]any) { m["to"] = "+14155550199" }), "k")
	if _, err := f.in.Submit(ctx, other); !errors.Is(err, notify.ErrKeyReuse) {
		t.Fatalf("reuse: %v", err)
	}
	if diff := cmp.Diff(before, f.store.All()); diff != "" {
		t.Errorf("key reuse changed the store:\n%s", diff)
	}
	if want := (notify.Message{IdempotencyKey: "k", NotificationID: "n-0001", Version: 1}); f.queue.Sent()[0] != want {
		t.Errorf("message %+v, want %+v", f.queue.Sent()[0], want)
	}
}

func TestSubmitEnqueueFailureKeepsRecord(t *testing.T) {
	ctx := context.Background()
	f := newService()
	f.queue.Err = errors.New("sqs down")
	req := parse(t, body(nil), "k")
	if _, err := f.in.Submit(ctx, req); !errors.Is(err, notify.ErrEnqueue) {
		t.Fatalf("err = %v, want ErrEnqueue", err)
	}
	if len(f.store.All()) != 1 {
		t.Fatal("record lost when the queue failed")
	}
	f.queue.Err = nil
	out, err := f.in.Submit(ctx, req)
	if err != nil || !out.Replayed || len(f.queue.Sent()) != 1 {
		t.Fatalf("retry after queue failure: %+v %v (sent %d)", out, err, len(f.queue.Sent()))
	}
}

// TestReplayRedispatch checks when a replay of an accepted record sends the dispatch message
// again: only once the first one can be presumed lost (the record stayed accepted past the
// enqueue grace, or admission answered 503), and then only one of the replays that follow.
func TestReplayRedispatch(t *testing.T) {
	grace := notify.DefaultPolicy().SweepAfter
	cases := []struct {
		name      string
		queueDown bool          // the first submission's enqueue fails (503)
		wait      time.Duration // between the first submission and the replays
		replays   int
		want      int // messages on the queue at the end
	}{
		{name: "inside the grace", wait: grace - time.Second, replays: 3, want: 1},
		{name: "past the grace: one replay re-sends", wait: grace, replays: 3, want: 2},
		{name: "after a 503: the next replay re-sends at once", queueDown: true, wait: time.Second, replays: 3, want: 1},
		{name: "no replay", wait: grace, replays: 0, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newService()
			req := parse(t, body(nil), "k")
			if tc.queueDown {
				f.queue.Err = errors.New("sqs down")
			}
			if _, err := f.in.Submit(ctx, req); (err != nil) != tc.queueDown {
				t.Fatalf("first submission: %v", err)
			}
			f.queue.Err = nil
			f.clock.Advance(tc.wait)
			for range tc.replays {
				if out, err := f.in.Submit(ctx, req); err != nil || !out.Replayed {
					t.Fatalf("replay: %+v %v", out, err)
				}
			}
			if got := len(f.queue.Sent()); got != tc.want {
				t.Errorf("queue holds %d messages, want %d", got, tc.want)
			}
			if rec := f.store.All()[0]; rec.Version != 1 || rec.State != notify.StateAccepted {
				t.Errorf("record %s v%d: a re-send must not be a transition", rec.State, rec.Version)
			}
		})
	}
}

func TestSubmitExpiredAtAdmissionIsNotEnqueued(t *testing.T) {
	f := newService()
	req := parse(t, body(func(m map[string]any) { m["expires_at"] = t0.Add(30 * time.Second).Format(time.RFC3339) }), "k")
	out, err := f.in.Submit(context.Background(), req)
	if err != nil || out.Record.State != notify.StateExpired {
		t.Fatalf("%+v %v", out, err)
	}
	if len(f.queue.Sent()) != 0 {
		t.Error("an expired record was enqueued")
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	f := newService()
	if _, err := f.in.Cancel(ctx, "missing"); !errors.Is(err, notify.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := f.in.Submit(ctx, parse(t, body(nil), "k")); err != nil {
		t.Fatal(err)
	}
	rec, err := f.in.Cancel(ctx, "k")
	if err != nil || rec.State != notify.StateCancelled || rec.Reason != notify.ReasonCancelled {
		t.Fatalf("cancel: %+v %v", rec, err)
	}
	cur, err := f.in.Cancel(ctx, "k")
	if !errors.Is(err, notify.ErrNotCancellable) || cur.State != notify.StateCancelled {
		t.Fatalf("second cancel: %+v %v", cur, err)
	}
	if got, _ := f.in.Status(ctx, "k"); got.Version != 2 {
		t.Errorf("version %d after one cancel", got.Version)
	}
}

// racingStore moves the record under Cancel's feet once, as a dispatch worker would.
type racingStore struct {
	*notifytest.Store
	raced bool
}

func (s *racingStore) Transition(ctx context.Context, prev, next notify.Record) error {
	if !s.raced {
		s.raced = true
		lease, err := prev.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: next.UpdatedAt.Add(time.Minute)}, next.UpdatedAt)
		if err != nil {
			return err
		}
		if err := s.Store.Transition(ctx, prev, lease); err != nil {
			return err
		}
	}
	return s.Store.Transition(ctx, prev, next)
}

func TestCancelLosesRaceToWorker(t *testing.T) {
	ctx := context.Background()
	f := newService()
	rs := &racingStore{Store: f.store}
	f.in.Store = rs
	if _, err := f.in.Submit(ctx, parse(t, body(nil), "k")); err != nil {
		t.Fatal(err)
	}
	cur, err := f.in.Cancel(ctx, "k")
	if !errors.Is(err, notify.ErrNotCancellable) || cur.State != notify.StateDispatching {
		t.Fatalf("cancel after a worker took the lease: %+v %v", cur, err)
	}
}

type refuseAll struct{}

func (refuseAll) Check(string, string, map[string]string) error {
	return errors.New("3 segments, budget 2: https://shop.example/r/abc")
}

func TestSubmitRefusesUnrenderableMessage(t *testing.T) {
	f := newService()
	f.in.Messages = refuseAll{}
	_, err := f.in.Submit(context.Background(), parse(t, body(nil), "k"))
	var ve *notify.ValidationError
	if !errors.As(err, &ve) || ve.Kind != notify.ProblemInvalid || !hasField(ve, "params") {
		t.Fatalf("err = %v, want a params ValidationError", err)
	}
	if strings.Contains(err.Error(), "shop.example") {
		t.Errorf("error %q quotes the params", err)
	}
	if len(f.store.All()) != 0 || len(f.queue.Sent()) != 0 {
		t.Error("an unrenderable request was stored or queued")
	}
}

func TestSubmitJSONParsesAtTheIntakesClock(t *testing.T) {
	ctx := context.Background()
	f := newService()
	sub, err := f.in.SubmitJSON(ctx, body(nil), "k")
	if err != nil || sub.Key != "k" || sub.Record.IdempotencyKey != "k" || len(f.queue.Sent()) != 1 {
		t.Fatalf("SubmitJSON: %+v %v (sent %d)", sub, err, len(f.queue.Sent()))
	}
	// Far past the request's expires_at the same body is refused by the intake's clock, and
	// nothing is stored.
	f.clock.Advance(24 * time.Hour)
	var ve *notify.ValidationError
	if _, err := f.in.SubmitJSON(ctx, body(nil), "k2"); !errors.As(err, &ve) || ve.Kind != notify.ProblemInvalid {
		t.Fatalf("late body: err %v, want a validation error", err)
	}
	if len(f.store.All()) != 1 {
		t.Errorf("%d records stored, want 1", len(f.store.All()))
	}
}

func TestStatusAndCancelCheckTheKey(t *testing.T) {
	ctx := context.Background()
	f := newService()
	for _, key := range []string{"", "a b", "+447700900123", strings.Repeat("k", notify.MaxKeyLen+1)} {
		var ve *notify.ValidationError
		if _, err := f.in.Status(ctx, key); !errors.As(err, &ve) || ve.Kind != notify.ProblemInvalidKey || len(ve.Fields) != 1 || ve.Fields[0].Field != "key" {
			t.Errorf("Status(%q): err %v, want an invalid-key validation error", key, err)
		}
		if _, err := f.in.Cancel(ctx, key); !errors.As(err, &ve) || ve.Kind != notify.ProblemInvalidKey {
			t.Errorf("Cancel(%q): err %v, want an invalid-key validation error", key, err)
		}
	}
	if _, err := f.in.Status(ctx, "order-404"); !errors.Is(err, notify.ErrNotFound) {
		t.Errorf("Status of a valid unknown key: %v, want ErrNotFound", err)
	}
}
