package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// One decision per key, never taken uncounted. With the guard on, admission is:
//
//  1. the count first (Guard.Admit under CountID, a hash of the owner and the key: counting a
//     key again counts nothing more and answers admitted), before anything is stored;
//  2. the conditional put of the record with its decision in it: admitted, DecidedAt set;
//     refused, undecided (DecideBy = now + the decision bound) and then moved accepted →
//     refused by the request that put it; the guard failing, undecided and due at once, and
//     ErrGuardUnavailable (503): nothing is sent. A duplicate or replay gets the stored record
//     from the same put and answers it, so the first put's decision is every caller's;
//  3. a request that finds the record undecided (its refusal not written yet, a guard failure,
//     a creator dead between the put and the refusal) waits for the decision with two
//     consistent reads at most: one when it has probably been written, one after DecideBy plus
//     SkewMargin. Still undecided then, it takes the creator's place (Decider.Decide: the same
//     count, then the mark or the refusal) and, having decided an admission, sends the
//     dispatch message at once;
//  4. dispatch, handed an undecided record (by the sweeper), runs the same count before it
//     takes the lease, and refuses a record over the limits.
//
// Every decision written after the put (the mark, the refusal) is conditioned on no decision
// stored yet, so the first written is final and every request with the key answers it. A
// record is decided when it is not accepted, or holds DecidedAt, or has no DecideBy (admitted
// without the guard): nothing is ever admitted "by rule" because time passed.

// DefaultDecisionBound is how long a duplicate waits for the creator's decision before taking
// its place, when Service.DecisionBound is not set.
const DefaultDecisionBound = 500 * time.Millisecond

// SkewMargin is added to a record's DecideBy before a duplicate takes the creator's place, so
// that a creator on a clock slightly behind the duplicate's is not overtaken while it is still
// deciding. Overtaking one is safe (the count is idempotent, the first decision written wins);
// the margin only saves the double work.
const SkewMargin = 250 * time.Millisecond

// firstRead bounds the duplicate's first read: it waits about as long as the creator needs
// after its own put (the count and the mark, two more round trips like the put the duplicate
// just timed), at least firstReadMin.
const (
	firstReadMin  = 20 * time.Millisecond
	firstReadRTTs = 3
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
	if rec.Reason == ReasonRefusedDestinationNotAllowed {
		// Which rule dispatch applied is not stored; the answer is the allow-list's.
		refused.Reason, refused.RetryAfter = RefusedCountry, 0
	}
	return refused, true
}

// Decider takes the guard's decision on an undecided record: the creator's, and that of
// whoever picks the record up in its place (a duplicate, dispatch). Its fields are those of
// the Service or worker that uses it.
type Decider struct {
	Guard Guard
	// Conversions, when set, refuses a blocked prefix before anything is counted.
	Conversions *Conversions
	Store       Store
	Clock       Clock
	// Actor, when set, names who decides; it is written onto a refusal (else the record's
	// actor stays).
	Actor func(context.Context) Actor
}

// Decide counts rec, undecided, at its admission time and writes a refusal onto it. It returns
// the record as now decided, whether that decision is this call's own (false when another
// decision was written first), and an error:
//   - counted and admitted: rec itself, nil; the caller marks it (MarkAdmitted) or leases it,
//     either of which ends its undecided state;
//   - refused: the refused record and its *RefusedError;
//   - decided by someone else first (the refusal's write lost): the stored record, and its
//     *RefusedError when it is refused;
//   - a guard failure: rec and an error wrapping ErrGuardUnavailable; a store failure: rec
//     and that error. Nothing is decided.
func (dc Decider) Decide(ctx context.Context, rec Record) (Record, bool, error) {
	at := rec.CreatedAt
	if dc.Clock.Now().Sub(at) > RecountAfter {
		at = dc.Clock.Now()
	}
	err := dc.count(ctx, DestinationOf(rec), CountID(rec), at)
	var refused *RefusedError
	switch {
	case err == nil:
		return rec, true, nil
	case !errors.As(err, &refused):
		return rec, true, fmt.Errorf("notify.decide %s: %w", rec.IdempotencyKey, err)
	}
	return dc.refuse(ctx, rec, refused, at)
}

// count counts the admission id to d in the windows of at: nil when admitted (counted now or
// before), a *RefusedError, or an error wrapping ErrGuardUnavailable.
func (dc Decider) count(ctx context.Context, d Destination, id string, at time.Time) error {
	// A blocked prefix is refused before anything is counted: the lookup reads nothing.
	err := dc.checkBlocked(ctx, d, dc.Clock.Now())
	if err == nil {
		err = dc.Guard.Admit(ctx, d, id, at)
	}
	if err != nil && !errors.As(err, new(*RefusedError)) {
		return fmt.Errorf("%w: %w", ErrGuardUnavailable, err)
	}
	return err
}

// refuse writes the guard's refusal onto rec, undecided, counted at at, and returns it as
// Decide does. A destination count the refusal took is released once the refusal is written.
func (dc Decider) refuse(ctx context.Context, rec Record, refused *RefusedError, at time.Time) (Record, bool, error) {
	now := dc.Clock.Now()
	next, err := rec.Refuse(refused, now, now)
	if err != nil {
		return rec, true, err
	}
	if dc.Actor != nil {
		next.Actor = dc.Actor(ctx)
	}
	if err := dc.Store.Transition(ctx, rec, next); err != nil {
		// Another decision stands. The count stays: if that decision admitted the record, it
		// is this count that the admission's own count found.
		return dc.lost(rec, err)
	}
	if refused.DestinationCounted {
		// Best effort, once the refusal is written: a count left behind refuses too early,
		// never sends more.
		_ = dc.Guard.Release(ctx, DestinationOf(rec), CountID(rec), at)
	}
	return next, true, refused
}

// CountID is the ID the guard counts rec's admission under: a hash of its owner and its
// idempotency key, so that every request with the key, a duplicate's or a picker-up's, counts
// it once, and a count taken before the record's put is found by the requests after it.
func CountID(rec Record) string {
	sum := sha256.Sum256([]byte(rec.Owner + "\x00" + rec.IdempotencyKey))
	return hex.EncodeToString(sum[:16])
}

// MarkAdmitted marks rec, counted and admitted, as decided (DecidedAt). won is false when
// another decision was written first: it returns that record (with its *RefusedError when
// refused). A failed mark leaves rec counted but unmarked: whoever picks it up counts it
// again, which counts nothing more.
func (dc Decider) MarkAdmitted(ctx context.Context, rec Record) (_ Record, won bool, _ error) {
	at := dc.Clock.Now()
	marked, err := dc.Store.Settle(ctx, rec, at)
	if err == nil {
		return marked, true, nil
	}
	cur, _, err := dc.lost(rec, err)
	// A mark the SDK retried after it committed finds its own stamp.
	return cur, err == nil && cur.State == StateAccepted && cur.DecidedAt.Equal(at), err
}

// lost returns the decision stored in place of the one whose write failed with err: the
// record the conflict carries (and its refusal, if refused), or rec and err when the write
// failed for another reason.
func (dc Decider) lost(rec Record, err error) (Record, bool, error) {
	cur, ok := CurrentOf(err)
	if !ok {
		return rec, false, fmt.Errorf("notify.decide %s: %w", rec.IdempotencyKey, err)
	}
	if refused, ok := RefusalOf(cur, rec.Country, dc.Clock.Now()); ok {
		return cur, false, refused
	}
	return cur, false, nil
}

// decider is the intake's Decider.
func (in *Service) decider() Decider {
	return Decider{Guard: in.Guard, Conversions: in.Conversions, Store: in.Store, Clock: in.Clock, Actor: in.Actor}
}

// awaitDecision returns rec, found undecided by a request that did not create it, once
// decided: it reads it when its creator has probably decided (after about firstReadRTTs times
// rtt, the duration of this request's own put), and once more after DecideBy plus SkewMargin;
// still undecided then, it takes the creator's place (takeOver). takenOver reports that this
// request decided an admission: the dispatch message is then its to send.
func (in *Service) awaitDecision(ctx context.Context, rec Record, rtt time.Duration) (_ Record, takenOver bool, _ error) {
	takeover := rec.DecideBy.Add(SkewMargin)
	first := in.Clock.Now().Add(max(firstReadMin, firstReadRTTs*rtt))
	for _, at := range []time.Time{earliest(first, takeover), takeover} {
		if !rec.Undecided() {
			return rec, false, nil
		}
		if wait := at.Sub(in.Clock.Now()); wait > 0 {
			if err := in.sleep(ctx, wait); err != nil {
				return rec, false, fmt.Errorf("intake.await %s: %w", rec.IdempotencyKey, err)
			}
		}
		var err error
		if rec, err = in.Store.Get(ctx, rec.IdempotencyKey); err != nil {
			return rec, false, fmt.Errorf("intake.await %s: %w", rec.IdempotencyKey, err)
		}
	}
	if !rec.Undecided() {
		return rec, false, nil
	}
	return in.takeOver(ctx, rec)
}

// takeOver decides rec in place of a creator that failed or died: the creator's count, then
// the mark. takenOver is true when this request's mark decided the admission.
func (in *Service) takeOver(ctx context.Context, rec Record) (_ Record, takenOver bool, _ error) {
	dc := in.decider()
	decided, _, err := dc.Decide(ctx, rec)
	if err != nil || !decided.Undecided() {
		return decided, false, err
	}
	return dc.MarkAdmitted(ctx, decided)
}

// decisionBound is DecisionBound, or DefaultDecisionBound when it is not set.
func (in *Service) decisionBound() time.Duration {
	if in.DecisionBound > 0 {
		return in.DecisionBound
	}
	return DefaultDecisionBound
}

// sleep waits d through the Sleep seam, or on a timer; it returns early with ctx's error.
func (in *Service) sleep(ctx context.Context, d time.Duration) error {
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
