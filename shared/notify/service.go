package notify

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrEnqueue means a record was stored but could not be handed to the dispatch queue. The
// request may be repeated: the record is marked due at once, so a replay of it while it is
// still accepted enqueues it again.
var ErrEnqueue = errors.New("dispatch queue unavailable")

// Service admits, reads and cancels notifications. It is the whole behaviour behind the HTTP
// API; the handler only translates.
type Service struct {
	Store  Store
	Sealer Sealer
	Hasher DestinationHasher
	// Fingerprints keys the request fingerprint that tells a replay from a key reuse.
	Fingerprints RequestHasher
	Queue        Queue
	Clock        Clock
	Policy       Policy
	// NewID returns a fresh, sortable notification ID (a ULID in production).
	NewID func() string
	// Messages, when set, refuses a request whose message cannot be rendered.
	Messages MessageChecker
	// Actor, when set, names who admits and cancels (the intake function and its invocation);
	// it is written onto the record with each transition.
	Actor func(context.Context) Actor
	// Countries, when not empty, refuses a number whose country it does not list.
	Countries Countries
	// Guard, when set, counts each new admission per destination and per prefix and refuses
	// one over its limits, once per key (see decide.go). PrefixDigits is the prefix length it
	// counts by (0: the default).
	Guard        Guard
	PrefixDigits int
	// Conversions, when set, counts conversions per prefix (see Convert) and
	// holds the blocked prefixes (see Blocks).
	Conversions *Conversions
	// Feedback, when set, reports a conversion to the provider.
	Feedback Feedback
	// DecisionBound is how long a duplicate waits for the creator's decision (plus
	// SkewMargin) before it takes the creator's place (0: DefaultDecisionBound).
	DecisionBound time.Duration
	// Sleep, when set, replaces the timer a waiting duplicate sleeps on (tests).
	Sleep func(ctx context.Context, d time.Duration) error
	// Owners, when set, makes callers own their keys (see owner.go): admission stores the
	// fingerprint of the caller (WithCaller) and only that caller reads, cancels, converts or
	// repeats the record. Operator, a canonical principal (CanonicalPrincipal), may also read
	// every record.
	Owners   OwnerHasher
	Operator string
}

// Submitted is the result of Submit.
type Submitted struct {
	Record Record
	// Replayed is true when the key was already admitted with the same fingerprint.
	Replayed bool
	// Key is the request's idempotency key (set by SubmitJSON, also when it fails after
	// parsing).
	Key string
	// LateDecision is set when this request created the record but another decision (a
	// duplicate's or dispatch's, in its place) was written before its own refusal.
	LateDecision bool
}

// SubmitJSON parses a request body with ParseRequest, at the intake's clock and under its
// policy (headerKey is the Idempotency-Key header, "" when absent), and submits it. The
// result's Key is the request's idempotency key once the body parsed. A body that does not
// parse returns its *ValidationError; everything else is as Submit.
func (in *Service) SubmitJSON(ctx context.Context, body []byte, headerKey string) (Submitted, error) {
	req, err := ParseRequest(body, headerKey, in.Clock.Now(), in.Policy)
	if err != nil {
		return Submitted{}, err
	}
	sub, err := in.Submit(ctx, req)
	sub.Key = req.IdempotencyKey
	return sub, err
}

// Submit admits req exactly once per idempotency key. A replay with the same fingerprint
// returns the stored record; a replay with another fingerprint returns ErrKeyReuse and
// changes nothing. A newly admitted record is sent to the dispatch queue; if that fails the
// record stays stored, is marked due at once, and the error wraps ErrEnqueue. A replay of a
// record still accepted sends the dispatch message again only when the first one can be
// presumed lost (see redispatch); otherwise a replay is the one conditional put. A request
// whose message cannot be rendered returns a *ValidationError and one outside the country
// allow-list a *RefusedError; neither stores anything. With a Guard, every request counts its
// key before the put (once per key) and the put carries the decision; every request with the
// key answers the stored decision, a refusal as a *RefusedError with the refused record, and a
// guard failure returns an error wrapping ErrGuardUnavailable with the record stored undecided
// (see decide.go).
func (in *Service) Submit(ctx context.Context, req Request) (Submitted, error) {
	d := in.destination(req)
	req.To = d.Number
	rec, err := in.prepare(ctx, req, d)
	if err != nil {
		return Submitted{}, err
	}
	put := in.Clock.Now()
	counted := in.countFirst(ctx, &rec, d)
	stored, created, err := in.Store.Admit(ctx, rec)
	if err != nil {
		return Submitted{}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, err)
	}
	if !created && !in.mayRepeat(ctx, stored) {
		// Another caller's record: the same answer as a different request, and nothing of it.
		return Submitted{}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, ErrKeyReuse)
	}
	if !created && !in.Fingerprints.SameRequest(stored.RequestFingerprint, req.Canonical()) {
		return Submitted{Record: stored, Replayed: true}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, ErrKeyReuse)
	}
	out := Submitted{Record: stored, Replayed: !created}
	send := created
	var refused *RefusedError
	switch {
	case !stored.Undecided() || in.Guard == nil:
		// Decided (the put carried the decision); or undecided with this intake's guard off,
		// explicitly: it counts nothing.
	case created && errors.As(counted, &refused):
		var own bool
		out.Record, own, err = in.decider().refuse(ctx, stored, refused, rec.CreatedAt)
		out.LateDecision = !own
	case created:
		// The guard failed: the record went in undecided and due at once.
		err = counted
	default:
		out.Record, send, err = in.awaitDecision(ctx, stored, in.Clock.Now().Sub(put))
	}
	if refused, ok := RefusalOf(out.Record, d.CountryCode, in.Clock.Now()); ok {
		return out, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, refused)
	}
	if errors.Is(err, ErrGuardUnavailable) && out.Record.Undecided() && !created {
		// Due at once: the sweeper's next run hands it to dispatch, which counts it, even if
		// the caller never repeats the request.
		in.markDue(ctx, out.Record, in.Clock.Now())
	}
	if err != nil {
		return out, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, err)
	}
	if out.Record.State != StateAccepted {
		return out, nil
	}
	out.Record, err = in.hand(ctx, out.Record, send)
	if err != nil {
		return out, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, err)
	}
	return out, nil
}

// countFirst counts rec, accepted with the guard on, before its put, and writes the decision
// onto it: admitted, decided (DecidedAt); refused, left undecided for the refusal written
// after the put; the guard failing, left undecided and due at once. It returns the count's
// error. The count is idempotent per owner and key (CountID), so every request with the key
// counts it once, whichever puts the record.
func (in *Service) countFirst(ctx context.Context, rec *Record, d Destination) error {
	if !rec.Undecided() || in.Guard == nil {
		return nil
	}
	err := in.decider().count(ctx, d, CountID(*rec), rec.CreatedAt)
	switch {
	case err == nil:
		rec.DecidedAt = rec.CreatedAt
	case errors.Is(err, ErrGuardUnavailable):
		rec.NextActionAt = rec.CreatedAt
	}
	return err
}

// hand sends the dispatch message of rec, accepted and decided, when send is set (this
// request created it, or decided it in its creator's place) or when a replay finds the first
// message presumed lost (redispatch; a take-over of a record already due claims it the same
// way). It returns rec as stored afterwards; a failed message is ErrEnqueue, and rec is then
// due at once.
func (in *Service) hand(ctx context.Context, rec Record, send bool) (Record, error) {
	if now := in.Clock.Now(); !send || !now.Before(rec.NextActionAt) {
		// A replay; or a take-over of a record already due (its creator's 503 made it due),
		// which claims the send as a replay does, so that the sweeper or a later replay does
		// not send it again.
		queued, claimed, err := in.redispatch(ctx, rec, now)
		if !claimed {
			return rec, err
		}
		rec = queued
	}
	if err := in.Queue.Enqueue(ctx, DispatchQueue, MessageOf(rec), 0); err != nil {
		in.markDue(ctx, rec, in.Clock.Now())
		return rec, fmt.Errorf("%w: %w", ErrEnqueue, err)
	}
	return rec, nil
}

// prepare checks req (renderable, allowed country), seals its secret and returns its first
// record, stored under the key scoped to the caller (ScopedKey), for the destination d, with a decision bound when the guard is on and the record is
// accepted.
func (in *Service) prepare(ctx context.Context, req Request, d Destination) (Record, error) {
	if in.Messages != nil {
		if err := in.Messages.Check(req.Purpose, req.Locale, req.Params); err != nil {
			// The renderer's error may quote the params; the request's never does.
			return Record{}, &ValidationError{Kind: ProblemInvalid, Fields: []FieldError{{
				Field: "params", Detail: "the message would not fit the SMS segment budget, or cannot be rendered",
			}}}
		}
	}
	if err := in.checkCountry(d); err != nil {
		return Record{}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, err)
	}
	owner, err := in.ownerOf(ctx)
	if err != nil {
		return Record{}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, err)
	}
	req.IdempotencyKey = ScopedKey(owner, req.IdempotencyKey)
	now := in.Clock.Now()
	sealed, err := in.Sealer.Seal(ctx, req.IdempotencyKey, req.Secret())
	if err != nil {
		return Record{}, fmt.Errorf("intake.submit seal: %w", err)
	}
	rec := NewRecord(req, Admission{
		NotificationID:     in.NewID(),
		Sealed:             sealed,
		DestinationFP:      d.FP,
		RequestFingerprint: in.Fingerprints.RequestFP(req.Canonical()),
		PrefixFP:           d.PrefixFP,
		Country:            d.CountryCode,
	}, now, in.Policy)
	rec.Actor, rec.Owner = in.actor(ctx), owner
	if in.Guard != nil && rec.State == StateAccepted {
		// An admission that is expired already sends nothing: it is not counted.
		rec.DecideBy = now.Add(in.decisionBound())
	}
	return rec, nil
}

// redispatch decides whether a replay of the accepted record rec sends the dispatch message
// again. The first message is presumed lost once rec is due (its next_action_at, the
// admission time plus the enqueue grace Policy.SweepAfter, has come: the sweeper would
// re-enqueue it too) or at once when admission answered 503 (markDue). Only the replay that
// wins the conditional write moving next_action_at forward sends, so concurrent replays add
// at most one message. A store failure wraps ErrEnqueue, so the caller repeats the request.
func (in *Service) redispatch(ctx context.Context, rec Record, now time.Time) (Record, bool, error) {
	if now.Before(rec.NextActionAt) {
		return rec, false, nil
	}
	claimed := rec.Requeue(now, in.Policy.SweepAfter)
	err := in.Store.Reschedule(ctx, rec, claimed)
	if errors.Is(err, ErrConflict) {
		// Another replay or the sweeper sent it, or a worker moved the record on.
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("intake.redispatch %s: %w: %w", rec.IdempotencyKey, ErrEnqueue, err)
	}
	return claimed, true, nil
}

// markDue makes rec due now after its dispatch message could not be sent, so that a replay
// (which the 503 invites) sends it at once and the sweeper finds it on its next run. It is
// best effort: if it fails too, rec is due at its next_action_at anyway.
func (in *Service) markDue(ctx context.Context, rec Record, now time.Time) {
	due := rec
	due.NextActionAt = now
	_ = in.Store.Reschedule(ctx, rec, due)
}

func (in *Service) actor(ctx context.Context) Actor {
	if in.Actor == nil {
		return Actor{}
	}
	return in.Actor(ctx)
}

// Status returns the stored record for key. It reads local state only and never causes work.
// A key that cannot name a notification returns CheckKey's *ValidationError; a record the
// caller may not read (mayRead) returns ErrNotFound, as an unknown key does.
func (in *Service) Status(ctx context.Context, key string) (Record, error) {
	return in.StatusOf(ctx, key, "")
}

// StatusOf is Status of the key of the owner named by ownerARN (an IAM principal ARN), which
// only the operator may name for another owner (lookup); "" is the caller.
func (in *Service) StatusOf(ctx context.Context, key, ownerARN string) (Record, error) {
	if err := CheckKey(key); err != nil {
		return Record{}, err
	}
	rec, err := in.lookup(ctx, key, ownerARN)
	if err == nil && !in.mayRead(ctx, rec) {
		err = ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("intake.status %s: %w", key, err)
	}
	return rec, nil
}

// maxCancelTries bounds the optimistic retries of Cancel when a worker moves the record at the
// same moment.
const maxCancelTries = 5

// Cancel moves the record for key to cancelled while it is accepted or retry_scheduled, and
// returns the new record. Afterwards it returns ErrNotCancellable with the current record. A
// key that cannot name a notification returns CheckKey's *ValidationError; another caller's
// record returns ErrNotFound, as an unknown key does.
func (in *Service) Cancel(ctx context.Context, key string) (Record, error) {
	if err := CheckKey(key); err != nil {
		return Record{}, err
	}
	for range maxCancelTries {
		rec, err := in.lookup(ctx, key, "")
		if err == nil && !in.owns(ctx, rec) {
			err = ErrNotFound
		}
		if err != nil {
			return Record{}, fmt.Errorf("intake.cancel %s: %w", key, err)
		}
		next, err := rec.Cancel(in.Clock.Now())
		if err != nil {
			return rec, err
		}
		next.Actor = in.actor(ctx)
		err = in.Store.Transition(ctx, rec, next)
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Record{}, fmt.Errorf("intake.cancel %s: %w", key, err)
		}
	}
	return Record{}, fmt.Errorf("intake.cancel %s: %d concurrent changes: %w", key, maxCancelTries, ErrConflict)
}
