package notify_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// countingStore counts the store calls a submission makes.
type countingStore struct {
	*notifytest.Store
	mu    sync.Mutex
	calls storeCalls
	// beforeTransition, when set, is called once, at the start of the next Transition (a
	// test's hook to act while the creator writes its refusal).
	beforeTransition func()
}

type storeCalls struct{ admits, gets, transits, settles int }

func (s *countingStore) count(n *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*n++
}

func (s *countingStore) snapshot() storeCalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *countingStore) Admit(ctx context.Context, rec notify.Record) (notify.Record, bool, error) {
	s.count(&s.calls.admits)
	return s.Store.Admit(ctx, rec)
}

func (s *countingStore) Get(ctx context.Context, key string) (notify.Record, error) {
	s.count(&s.calls.gets)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) Transition(ctx context.Context, prev, next notify.Record) error {
	s.count(&s.calls.transits)
	if hook := s.beforeTransition; hook != nil {
		s.beforeTransition = nil
		hook()
	}
	return s.Store.Transition(ctx, prev, next)
}

func (s *countingStore) Settle(ctx context.Context, rec notify.Record, at time.Time) (notify.Record, error) {
	s.count(&s.calls.settles)
	return s.Store.Settle(ctx, rec, at)
}

// guardedIntake is newService with a fake guard, a counting store and a sleep that only moves
// the fake clock.
func guardedIntake() (intakeFixture, *notifytest.Guard, *countingStore) {
	f := newService()
	guard := &notifytest.Guard{}
	store := &countingStore{Store: f.store}
	f.in.Guard, f.in.Store, f.in.Sleep = guard, store, notifytest.SleepOn(f.clock)
	return f, guard, store
}

// TestCreatorCountsFirstAndPutsTheDecision: the creator counts, then puts the record with its
// decision in it (decided, no mark); a replay is the put after the key's count, which finds the
// key counted: never counted again, never refused, even under a full window.
func TestCreatorCountsFirstAndPutsTheDecision(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	req := parse(t, body(nil), "k")
	first, err := f.in.Submit(ctx, req)
	if err != nil || first.Replayed || first.Record.State != notify.StateAccepted {
		t.Fatalf("first: %+v %v", first, err)
	}
	if stored, _ := f.store.Get(ctx, "k"); stored.DecidedAt.IsZero() || stored.Version != 1 {
		t.Errorf("stored %+v; want version 1 put decided (decided_at)", stored)
	}
	if c := store.snapshot(); c != (storeCalls{admits: 1}) || guard.Calls != 1 {
		t.Errorf("first admission: store calls %+v, %d guard calls; want the count and the put, no mark, no read", c, guard.Calls)
	}
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: time.Minute}
	for range 3 {
		before := store.snapshot()
		again, err := f.in.Submit(ctx, req)
		if err != nil || !again.Replayed || again.Record.State != notify.StateAccepted {
			t.Fatalf("replay under a full window: %+v %v", again, err)
		}
		want := before
		want.admits++
		if c := store.snapshot(); c != want {
			t.Errorf("replay: store calls %+v -> %+v, want only the put", before, c)
		}
	}
	if n, _ := guard.Counts(); n != 1 {
		t.Errorf("counted %d for one key, want 1", n)
	}
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("%d dispatch messages, want 1", n)
	}
}

// TestCreatorDeadBetweenCountAndPut: a count whose put never came (the creator died or timed
// out) is the key's count: the repeat counts nothing more and puts the record admitted.
func TestCreatorDeadBetweenCountAndPut(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	req := parse(t, body(nil), "k")
	dead := &failingAdmit{Store: store, err: errors.New("creator timed out")}
	f.in.Store = dead
	if _, err := f.in.Submit(ctx, req); err == nil {
		t.Fatal("a failed put answered without an error")
	}
	f.in.Store = store
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: time.Minute}
	sub, err := f.in.Submit(ctx, req)
	if err != nil || sub.Replayed || sub.Record.DecidedAt.IsZero() {
		t.Fatalf("repeat: %+v %v; want the key admitted on its first count", sub, err)
	}
	if n, _ := guard.Counts(); n != 1 || len(f.queue.Sent()) != 1 {
		t.Errorf("counted %d, %d dispatch messages; want 1 and 1", n, len(f.queue.Sent()))
	}
}

// failingAdmit is a store whose put fails with err.
type failingAdmit struct {
	notify.Store
	err error
}

func (s *failingAdmit) Admit(context.Context, notify.Record) (notify.Record, bool, error) {
	return notify.Record{}, false, s.err
}

func TestGuardRefusalIsStoredAndAnsweredToEveryRepeat(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: 50 * time.Minute}
	req := parse(t, body(nil), "k")
	sub, err := f.in.Submit(ctx, req)
	var refused *notify.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, notify.ErrRateLimited) || refused.RetryAfter != 50*time.Minute || refused.CountryCode != "" {
		t.Fatalf("err = %v, want a destination_hour refusal of 50m, in no country (no allow-list)", err)
	}
	rec, err := f.in.Status(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != notify.StateRefused || rec.Reason != notify.ReasonRefusedDestinationHour || rec.Version != 2 ||
		!rec.RetryAt.Equal(t0.Add(50*time.Minute)) || rec.Sealed != nil || !rec.NextActionAt.IsZero() || sub.Record.State != notify.StateRefused {
		t.Errorf("stored %+v, want refused v2, REFUSED_DESTINATION_HOUR, retry at +50m, no sealed payload, nothing due", rec)
	}
	if len(f.queue.Sent()) != 0 {
		t.Error("a refused admission was queued for dispatch")
	}
	// A repeat of the key, later: the same refusal, its Retry-After counting down, no new count.
	guard.Refuse = nil
	f.clock.Advance(10 * time.Minute)
	again, err := f.in.Submit(ctx, req)
	if !errors.As(err, &refused) || refused.Reason != notify.RefusedDestinationHour || refused.RetryAfter != 40*time.Minute || !again.Replayed {
		t.Fatalf("repeat: %+v %v, want the same refusal with 40m left", again, err)
	}
	f.clock.Advance(time.Hour)
	if _, err := f.in.Submit(ctx, req); !errors.As(err, &refused) || refused.RetryAfter != 0 {
		t.Fatalf("repeat after the window: %v, want the refusal with Retry-After 0 (a refused key stays refused)", err)
	}
	// The repeat after the window counted its key (once: the third found it counted), a count
	// for a request not admitted, which errs toward refusing; nothing was ever marked.
	if n, _ := guard.Counts(); n != 1 || store.snapshot().settles != 0 {
		t.Errorf("refused key: %d counts, %d settles; want 1 and none", n, store.snapshot().settles)
	}
}

func TestPrefixRefusalReleasesTheDestinationCount(t *testing.T) {
	f, guard, _ := guardedIntake()
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: 30 * time.Second, DestinationCounted: true}
	_, err := f.in.Submit(context.Background(), parse(t, body(nil), "k"))
	if !errors.Is(err, notify.ErrPrefixRateLimited) {
		t.Fatalf("err = %v, want a prefix refusal", err)
	}
	if admitted, released := guard.Counts(); admitted != 1 || released != 1 {
		t.Errorf("counted %d, released %d; want the prefix refusal's destination count released", admitted, released)
	}
	rec, _ := f.in.Status(context.Background(), "k")
	if rec.Reason != notify.ReasonRefusedPrefixVelocity {
		t.Errorf("reason %s, want %s", rec.Reason, notify.ReasonRefusedPrefixVelocity)
	}
}

// TestDuplicateWaitsForTheCreatorsRefusal holds the creator between its put and its refusal's
// write until a duplicate is waiting, and holds the duplicate's sleep until the creator has answered: the duplicate
// must answer the creator's refusal, not an admission of its own.
func TestDuplicateWaitsForTheCreatorsRefusal(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationDay, RetryAfter: 3 * time.Hour}
	req := parse(t, body(nil), "k")
	waiting, creatorDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.in.Sleep = func(ctx context.Context, d time.Duration) error {
		once.Do(func() { close(waiting) })
		<-creatorDone
		f.clock.Advance(d)
		return nil
	}
	type answer struct {
		sub notify.Submitted
		err error
	}
	dup := make(chan answer, 1)
	var early *answer
	store.beforeTransition = func() {
		go func() {
			sub, err := f.in.Submit(ctx, req)
			dup <- answer{sub, err}
		}()
		select {
		case <-waiting:
		case a := <-dup:
			early = &a // answered without waiting for the creator: wrong, reported below
		}
	}
	_, err := f.in.Submit(ctx, req)
	close(creatorDone)
	d := early
	if d == nil {
		a := <-dup
		d = &a
	}
	if !errors.Is(err, notify.ErrRateLimited) || !errors.Is(d.err, notify.ErrRateLimited) {
		t.Fatalf("creator %v, duplicate %v; want the same destination_day refusal", err, d.err)
	}
	if !d.sub.Replayed || store.snapshot().settles != 0 {
		t.Errorf("duplicate replayed=%v, settles %d; want a replay that never settled", d.sub.Replayed, store.snapshot().settles)
	}
}

// TestDuplicateAfterTheBoundTakesOverTheCount lets a duplicate arrive after the bound while
// the creator, refused, has put the record undecided and not yet written its refusal, and lets
// the duplicate's count admit (the window reopened between the two counts): the duplicate
// takes the creator's place, counts and marks it; the creator's refusal then loses and it
// answers the admission, late. One count, one answer.
func TestDuplicateAfterTheBoundTakesOverTheCount(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: time.Minute}
	req := parse(t, body(nil), "k")
	var dup notify.Submitted
	var dupErr error
	store.beforeTransition = func() {
		guard.Refuse = nil
		f.clock.Advance(notify.DefaultDecisionBound + notify.SkewMargin)
		dup, dupErr = f.in.Submit(ctx, req)
	}
	sub, err := f.in.Submit(ctx, req)
	if err != nil || dupErr != nil {
		t.Fatalf("creator %v, duplicate %v; want both admitted", err, dupErr)
	}
	if sub.Replayed || !sub.LateDecision || !dup.Replayed || sub.Record.State != notify.StateAccepted || sub.Record.DecidedAt.IsZero() {
		t.Errorf("creator %+v, duplicate replayed=%v; want the duplicate's marked admission, the creator late", sub, dup.Replayed)
	}
	if n, _ := guard.Counts(); n != 1 {
		t.Errorf("counted %d, want 1", n)
	}
	if c := store.snapshot(); c.settles != 1 {
		t.Errorf("%d marks, want the duplicate's", c.settles)
	}
	// The duplicate decided it and sent it at once; the creator sends its own too.
	if n := len(f.queue.Sent()); n != 2 {
		t.Errorf("%d dispatch messages, want 2", n)
	}
}

// TestDuplicateAfterTheBoundRefusesAsTheCreatorWould: taking over a refused count refuses; both
// answer the one stored refusal and nothing is queued.
func TestDuplicateAfterTheBoundRefusesAsTheCreatorWould(t *testing.T) {
	ctx := context.Background()
	f, guard, store := guardedIntake()
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: time.Minute}
	req := parse(t, body(nil), "k")
	var dupErr error
	store.beforeTransition = func() {
		f.clock.Advance(notify.DefaultDecisionBound + notify.SkewMargin)
		_, dupErr = f.in.Submit(ctx, req)
	}
	sub, err := f.in.Submit(ctx, req)
	if !errors.Is(err, notify.ErrRateLimited) || !errors.Is(dupErr, notify.ErrRateLimited) {
		t.Fatalf("creator %v, duplicate %v; want both refused", err, dupErr)
	}
	if !sub.LateDecision || sub.Record.State != notify.StateRefused {
		t.Errorf("creator %+v; want the duplicate's refusal, late", sub)
	}
	if n := len(f.queue.Sent()); n != 0 {
		t.Errorf("%d dispatch messages, want none", n)
	}
}

// TestDuplicateInsideTheCountAnswersTheFirstPut: a duplicate that runs whole while the creator
// is inside its count puts the record first; the creator's put then finds it and answers that
// decision. Admitted or refused, one count at most, one answer, one message at most.
func TestDuplicateInsideTheCountAnswersTheFirstPut(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(map[bool]string{false: "admitted", true: "refused"}[refuse], func(t *testing.T) {
			ctx := context.Background()
			f, guard, _ := guardedIntake()
			if refuse {
				guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationDay, RetryAfter: time.Hour}
			}
			req := parse(t, body(nil), "k")
			var dup notify.Submitted
			var dupErr error
			guard.Before = func() {
				guard.Before = nil
				dup, dupErr = f.in.Submit(ctx, req)
			}
			sub, err := f.in.Submit(ctx, req)
			if !sub.Replayed || dup.Replayed || sub.Record.NotificationID != dup.Record.NotificationID {
				t.Fatalf("creator %+v, duplicate %+v; want the duplicate's record, replayed to the creator", sub, dup)
			}
			if refuse != errors.Is(err, notify.ErrRateLimited) || refuse != errors.Is(dupErr, notify.ErrRateLimited) || (!refuse && (err != nil || dupErr != nil)) {
				t.Fatalf("creator %v, duplicate %v; want the same answer (refused: %v)", err, dupErr, refuse)
			}
			n, _ := guard.Counts()
			if want := map[bool]int{false: 1, true: 0}[refuse]; n != want || len(f.queue.Sent()) != want {
				t.Errorf("counted %d, %d dispatch messages; want %d and %d", n, len(f.queue.Sent()), want, want)
			}
		})
	}
}

// TestRecordWithoutDecisionBoundIsDecided: a record written before the guard decided per key
// (or with the guard off) has no DecideBy; its replays neither wait nor settle. The replay's
// count (the key was never counted) is one count for a request not admitted, once per key.
func TestRecordWithoutDecisionBoundIsDecided(t *testing.T) {
	ctx := context.Background()
	f := newService()
	req := parse(t, body(nil), "k")
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	guard, store := &notifytest.Guard{}, &countingStore{Store: f.store}
	f.in.Guard, f.in.Store = guard, store
	again, err := f.in.Submit(ctx, req)
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if c := store.snapshot(); c != (storeCalls{admits: 1}) {
		t.Errorf("replay of an old record: store calls %+v, want the one put", c)
	}
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n, _ := guard.Counts(); n != 1 {
		t.Errorf("two replays counted %d, want 1 (the key once)", n)
	}
}

func TestRefuseOnlyWithAGuardReason(t *testing.T) {
	rec := notify.NewRecord(parse(t, body(nil), "k"), notify.Admission{NotificationID: "n", Sealed: []byte("s")}, t0, notify.DefaultPolicy())
	if _, err := rec.Refuse(&notify.RefusedError{Reason: notify.RefusedCountry}, t0, t0); !errors.Is(err, notify.ErrInvalidTransition) {
		t.Errorf("a country refusal stored on a record: %v", err)
	}
	dispatching, err := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "t", LeaseUntil: t0.Add(time.Minute)}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dispatching.Refuse(&notify.RefusedError{Reason: notify.RefusedDestinationHour}, t0, t0); !errors.Is(err, notify.ErrInvalidTransition) {
		t.Errorf("a leased record refused: %v", err)
	}
}
