package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// One decision per key. With the guard on, admission is:
//
//  1. the conditional put of the record (accepted, DecideBy = now + the decision bound). A
//     duplicate gets the stored record from the same call;
//  2. the creator alone counts the admission (Guard.Admit: the destination's and the prefix's
//     counters, concurrently). Admitted: the dispatch message is sent, nothing more is written.
//     Refused: the creator moves the record accepted → refused (reason and RetryAt) in one
//     conditional write that also requires the record not settled, so a repeat of the key gets
//     the same 429 and the audit trail says why it stopped;
//  3. a duplicate that finds the record undecided waits (polling with consistent reads, backing
//     off) until it is no longer accepted or DecideBy has passed; then it settles the record as
//     admitted (DecidedAt, no transition), unless the creator's refusal won that race.
//
// So every request with a key gets the same final answer. A creator slower than the bound that
// also has concurrent duplicates loses to their settle and answers admitted with them
// (Submitted.LateDecision): the guard's refusal is lost for that one record. A duplicate never
// settles before DecideBy, so two identical requests cannot bypass the guard. A creator that
// dies between the put and its decision leaves an accepted record: a duplicate after the bound
// finds it admitted, and the sweeper dispatches it after the policy's SweepAfter.

// DefaultDecisionBound is how long a duplicate waits at most for the creator's decision when
// Intake.DecisionBound is not set.
const DefaultDecisionBound = 500 * time.Millisecond

// The waiting duplicate's polls: first after firstPoll, doubling up to maxPoll; after
// maxPolls (a clock that does not move) it gives up with an error.
const (
	firstPoll = 10 * time.Millisecond
	maxPoll   = 100 * time.Millisecond
	maxPolls  = 1000
)

// refusalReasons pairs each guard refusal with the reason code stored on the refused record.
var refusalReasons = map[RefusalReason]Reason{
	RefusedDestinationHour: ReasonRefusedDestinationHour,
	RefusedDestinationDay:  ReasonRefusedDestinationDay,
	RefusedPrefixVelocity:  ReasonRefusedPrefixVelocity,
	RefusedPrefixBlocked:   ReasonRefusedPrefixBlocked,
}

// Refuse returns the next version of r refused by the guard at now: state refused with the
// refusal's reason, RetryAt the end of the window that refused it (since, plus RetryAfter).
func (r Record) Refuse(refused *RefusedError, since, now time.Time) (Record, error) {
	reason, ok := refusalReasons[refused.Reason]
	if !ok {
		return Record{}, fmt.Errorf("notify.refuse %s: %s is stored on no record: %w", r.NotificationID, refused.Reason, ErrInvalidTransition)
	}
	return r.Apply(Change{To: StateRefused, Reason: reason, Actor: r.Actor, RetryAt: since.Add(refused.RetryAfter)}, now)
}

// RefusalOf returns the refusal a refused record holds, as it stands at now: Retry-After until
// its RetryAt (0 once passed). ok is false for a record in any other state.
func RefusalOf(rec Record, countryCode string, now time.Time) (*RefusedError, bool) {
	if rec.State != StateRefused {
		return nil, false
	}
	refused := &RefusedError{Reason: RefusedDestinationHour, RetryAfter: max(0, rec.RetryAt.Sub(now)),
		DestinationFP: rec.DestinationFP, CountryCode: countryCode}
	for r, code := range refusalReasons {
		if code == rec.Reason {
			refused.Reason = r
		}
	}
	return refused, true
}

// decide counts the admission of rec, which this request created, and writes a refusal onto
// it. It returns the record as decided, whether the decision came too late (a duplicate
// settled rec first: rec is admitted), and an error: the *RefusedError of a refusal written,
// or a guard or store failure, which leaves rec undecided (a repeat after the bound finds it
// admitted).
func (in *Intake) decide(ctx context.Context, req Request, rec Record, now time.Time) (Record, bool, error) {
	d := in.destinationOf(req, rec.DestinationFP)
	// A blocked prefix is refused before anything is counted: the lookup reads nothing.
	err := in.checkBlocked(ctx, d, now)
	if err == nil {
		err = in.Guard.Admit(ctx, d, now)
	}
	var refused *RefusedError
	if !errors.As(err, &refused) {
		return rec, false, err
	}
	next, err := rec.Refuse(refused, now, in.Clock.Now())
	if err != nil {
		return rec, false, err
	}
	var wg sync.WaitGroup
	if refused.DestinationCounted {
		// Best effort, beside the refusal's write: a count left behind refuses too early,
		// never sends more.
		wg.Go(func() { _ = in.Guard.Release(ctx, d, now) })
	}
	err = in.Store.Transition(ctx, rec, next)
	wg.Wait()
	if err == nil {
		return next, false, refused
	}
	cur, ok := CurrentOf(err)
	if !ok {
		return rec, false, fmt.Errorf("intake.decide %s: %w", rec.IdempotencyKey, err)
	}
	// A duplicate settled it after DecideBy, or a worker or a caller moved it on: admitted.
	return cur, true, nil
}

// awaitDecision returns rec, found by a request that did not create it, once decided: it polls
// an undecided rec until its creator refused it, or something moved it on, or its DecideBy
// passed, and then settles it as admitted.
func (in *Intake) awaitDecision(ctx context.Context, rec Record) (Record, error) {
	wait := firstPoll
	for polls := 0; rec.Undecided(); polls++ {
		now := in.Clock.Now()
		if polls == maxPolls {
			return rec, fmt.Errorf("intake.await %s: still undecided after %d polls, the clock at %s, the bound at %s",
				rec.IdempotencyKey, polls, now.Format(time.RFC3339Nano), rec.DecideBy.Format(time.RFC3339Nano))
		}
		if !now.Before(rec.DecideBy) {
			return in.settle(ctx, rec, now)
		}
		if err := in.sleep(ctx, min(wait, rec.DecideBy.Sub(now))); err != nil {
			return rec, fmt.Errorf("intake.await %s: %w", rec.IdempotencyKey, err)
		}
		wait = min(2*wait, maxPoll)
		var err error
		if rec, err = in.Store.Get(ctx, rec.IdempotencyKey); err != nil {
			return rec, fmt.Errorf("intake.await %s: %w", rec.IdempotencyKey, err)
		}
	}
	return rec, nil
}

// settle marks the undecided rec admitted at now. If the write loses, the record it returns
// says what won: the creator's refusal, another duplicate's settle, or a worker.
func (in *Intake) settle(ctx context.Context, rec Record, now time.Time) (Record, error) {
	settled, err := in.Store.Settle(ctx, rec, now)
	if err == nil {
		return settled, nil
	}
	if cur, ok := CurrentOf(err); ok {
		return cur, nil
	}
	return rec, fmt.Errorf("intake.settle %s: %w", rec.IdempotencyKey, err)
}

// decisionBound is DecisionBound, or DefaultDecisionBound when it is not set.
func (in *Intake) decisionBound() time.Duration {
	if in.DecisionBound > 0 {
		return in.DecisionBound
	}
	return DefaultDecisionBound
}

// sleep waits d through the Sleep seam, or on a timer; it returns early with ctx's error.
func (in *Intake) sleep(ctx context.Context, d time.Duration) error {
	if in.Sleep != nil {
		return in.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
