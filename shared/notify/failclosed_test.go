package notify_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// TestGuardFailureAnswersUnavailableAndSendsNothing: a guard whose storage fails answers
// ErrGuardUnavailable, leaves the record undecided and queues nothing. A repeat once the guard
// is back counts it (the creator's count, in its place) and sends it at once; over the limits,
// it refuses it and nothing is ever queued.
func TestGuardFailureAnswersUnavailableAndSendsNothing(t *testing.T) {
	for _, over := range []bool{false, true} {
		t.Run(map[bool]string{false: "within the limits", true: "over the limits"}[over], func(t *testing.T) {
			ctx := context.Background()
			f, guard, _ := guardedIntake()
			guard.Err = errors.New("guard table throttled")
			req := parse(t, body(nil), "k")
			sub, err := f.in.Submit(ctx, req)
			if !errors.Is(err, notify.ErrGuardUnavailable) || !sub.Record.Undecided() {
				t.Fatalf("guard failure: %+v %v; want ErrGuardUnavailable and an undecided record", sub, err)
			}
			if n := len(f.queue.Sent()); n != 0 {
				t.Fatalf("%d dispatch messages after a guard failure, want none", n)
			}
			// Due at once, so the sweeper hands it to dispatch (which counts it) without a repeat.
			if rec, _ := f.store.Get(ctx, "k"); !rec.NextActionAt.Equal(t0) {
				t.Errorf("next_action_at %s after a guard failure, want now (%s)", rec.NextActionAt, t0)
			}
			guard.Err = nil
			if over {
				guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationDay, RetryAfter: time.Hour}
			}
			again, err := f.in.Submit(ctx, req)
			if over {
				if !errors.Is(err, notify.ErrRateLimited) || again.Record.State != notify.StateRefused || len(f.queue.Sent()) != 0 {
					t.Fatalf("repeat over the limits: %+v %v, %d messages; want refused, none", again, err, len(f.queue.Sent()))
				}
				return
			}
			if err != nil || !again.Replayed || again.Record.DecidedAt.IsZero() {
				t.Fatalf("repeat: %+v %v; want a marked admission", again, err)
			}
			if n, _ := guard.Counts(); n != 1 {
				t.Errorf("counted %d, want 1", n)
			}
			// At once: the repeat waited out the bound (the failed creator might still decide),
			// not the sweep grace.
			if n := len(f.queue.Sent()); n != 1 || f.clock.Now().Sub(t0) > notify.DefaultDecisionBound+notify.SkewMargin {
				t.Errorf("%d dispatch messages after %s; want 1 within the bound", n, f.clock.Now().Sub(t0))
			}
			// The repeat claimed the send: a later replay does not send it again.
			if _, err := f.in.Submit(ctx, req); err != nil || len(f.queue.Sent()) != 1 {
				t.Errorf("a later replay: %v, %d dispatch messages; want 1", err, len(f.queue.Sent()))
			}
		})
	}
}

// TestKilledCreatorIsCountedByTheRepeat: a creator that died between the put and the count
// leaves an undecided record. A repeat after the bound counts it; over the limits it refuses
// it, so no repeat and no passing of time admits it uncounted.
func TestKilledCreatorIsCountedByTheRepeat(t *testing.T) {
	ctx := context.Background()
	f, guard, _ := guardedIntake()
	req := parse(t, body(nil), "k")
	rec := putOnly(t, f, req)
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: 30 * time.Second}
	f.clock.Advance(time.Hour) // long past the bound: still not admitted by rule
	sub, err := f.in.Submit(ctx, req)
	if !errors.Is(err, notify.ErrPrefixRateLimited) || sub.Record.State != notify.StateRefused || sub.Record.NotificationID != rec.NotificationID {
		t.Fatalf("repeat: %+v %v; want the killed creator's record refused", sub, err)
	}
	if n := len(f.queue.Sent()); n != 0 {
		t.Errorf("%d dispatch messages, want none", n)
	}
}

// putOnly stores req's first record as a creator would, and does nothing more (it dies).
func putOnly(t *testing.T, f intakeFixture, req notify.Request) notify.Record {
	t.Helper()
	rec := notify.NewRecord(req, notify.Admission{NotificationID: "n-killed", Sealed: []byte("s"), RequestFingerprint: f.in.Fingerprints.RequestFP(req.Canonical())}, f.clock.Now(), notify.DefaultPolicy())
	rec.DecideBy = rec.CreatedAt.Add(notify.DefaultDecisionBound)
	if _, created, err := f.store.Admit(context.Background(), rec); err != nil || !created {
		t.Fatalf("put: %v", err)
	}
	return rec
}

// TestDuplicatesReadAtMostTwice: duplicates of a request whose creator decides while they
// wait cost the put and at most two reads each, and all answer the creator's decision.
func TestDuplicatesReadAtMostTwice(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	req := parse(t, body(nil), "k")
	const n = 16
	release := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	guard.Before = func() {
		guard.Before = nil
		for i := range n {
			wg.Go(func() { _, errs[i] = f.in.Submit(ctx, req) })
		}
		<-release
	}
	// A sleep that does not move the clock: a duplicate still finding the record undecided
	// after its two reads takes over (which counts nothing more), and never reads again.
	f.in.Sleep = func(context.Context, time.Duration) error { return nil }
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(release)
	}()
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("duplicate: %v", err)
		}
	}
	c := store.snapshot()
	if c.admits != n+1 || c.gets > 2*n {
		t.Errorf("store calls %+v for %d duplicates; want %d puts and at most %d reads", c, n, n+1, 2*n)
	}
	if k, _ := guard.Counts(); k != 1 {
		t.Errorf("counted %d, want 1", k)
	}
}

// refusesFirst refuses its first count for the prefix, after taking the destination's count
// (DestinationCounted), running during it the hook during; every later count admits.
type refusesFirst struct {
	mu              sync.Mutex
	calls, released int
	during          func()
}

func (g *refusesFirst) Admit(context.Context, notify.Destination, string, time.Time) error {
	g.mu.Lock()
	g.calls++
	first := g.calls == 1
	g.mu.Unlock()
	if !first {
		return nil
	}
	g.during()
	return &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: time.Minute, DestinationCounted: true}
}

func (g *refusesFirst) Release(context.Context, notify.Destination, string, time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released++
	return nil
}

// TestLostRefusalKeepsTheCount: a creator whose count is refused by the prefix (after taking the
// destination's count) while a duplicate admits and puts the record first answers that
// admission, and keeps the destination count: it is the admitted key's count (the same count
// ID), and releasing it would leave an admitted notification uncounted.
func TestLostRefusalKeepsTheCount(t *testing.T) {
	ctx := context.Background()
	f, _, _ := guardedIntake()
	guard := &refusesFirst{}
	f.in.Guard = guard
	req := parse(t, body(nil), "k")
	var dupErr error
	guard.during = func() {
		_, dupErr = f.in.Submit(ctx, req)
	}
	sub, err := f.in.Submit(ctx, req)
	if err != nil || dupErr != nil || !sub.Replayed || sub.Record.State != notify.StateAccepted {
		t.Fatalf("creator %+v %v, duplicate %v; want both admitted, the creator replayed", sub, err, dupErr)
	}
	if guard.released != 0 {
		t.Errorf("released %d counts of an admitted notification, want 0", guard.released)
	}
}
