package notify

import (
	"context"
	"errors"
	"fmt"
)

// ErrEnqueue means a record was stored but could not be handed to the dispatch queue. The
// request may be repeated: a replay of an accepted record enqueues it again.
var ErrEnqueue = errors.New("dispatch queue unavailable")

// Intake admits, reads and cancels notifications. It is the whole behaviour behind the HTTP
// API; the handler only translates.
type Intake struct {
	Store  Store
	Sealer Sealer
	Hasher DestinationHasher
	// Fingerprints keys the request fingerprint that tells a replay from a key reuse.
	Fingerprints RequestHasher
	Queue        Enqueuer
	Clock        Clock
	Policy       Policy
	// NewID returns a fresh, sortable notification ID (a ULID in production).
	NewID func() string
	// Messages, when set, refuses a request whose message cannot be rendered.
	Messages MessageChecker
}

// Submitted is the result of Submit.
type Submitted struct {
	Record Record
	// Replayed is true when the key was already admitted with the same fingerprint.
	Replayed bool
}

// Submit admits req exactly once per idempotency key. A replay with the same fingerprint
// returns the stored record; a replay with another fingerprint returns ErrKeyReuse and
// changes nothing. A newly admitted or still accepted record is sent to the dispatch queue;
// if that fails the record stays stored and the error wraps ErrEnqueue. A request whose
// message cannot be rendered returns a *ValidationError and stores nothing.
func (in *Intake) Submit(ctx context.Context, req Request) (Submitted, error) {
	if in.Messages != nil {
		if err := in.Messages.Check(req.Purpose, req.Locale, req.Params); err != nil {
			// The renderer's error may quote the params; the request's never does.
			return Submitted{}, &ValidationError{Kind: ProblemInvalid, Fields: []FieldError{{
				Field: "params", Detail: "the message would not fit the SMS segment budget, or cannot be rendered",
			}}}
		}
	}
	now := in.Clock.Now()
	sealed, err := in.Sealer.Seal(ctx, req.IdempotencyKey, req.Secret())
	if err != nil {
		return Submitted{}, fmt.Errorf("intake.submit seal: %w", err)
	}
	canonical := req.Canonical()
	rec := NewRecord(req, Admission{
		NotificationID:     in.NewID(),
		Sealed:             sealed,
		DestinationFP:      in.Hasher.DestinationFP(req.To),
		RequestFingerprint: in.Fingerprints.RequestFP(canonical),
	}, now, in.Policy)
	stored, created, err := in.Store.Admit(ctx, rec)
	if err != nil {
		return Submitted{}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, err)
	}
	if !created && !in.Fingerprints.SameRequest(stored.RequestFingerprint, canonical) {
		return Submitted{Record: stored, Replayed: true}, fmt.Errorf("intake.submit %s: %w", req.IdempotencyKey, ErrKeyReuse)
	}
	out := Submitted{Record: stored, Replayed: !created}
	if stored.State == StateAccepted {
		if err := in.Queue.EnqueueDispatch(ctx, MessageOf(stored)); err != nil {
			return out, fmt.Errorf("intake.submit %s: %w: %w", req.IdempotencyKey, ErrEnqueue, err)
		}
	}
	return out, nil
}

// Status returns the stored record for key. It reads local state only and never causes work.
func (in *Intake) Status(ctx context.Context, key string) (Record, error) {
	rec, err := in.Store.Get(ctx, key)
	if err != nil {
		return Record{}, fmt.Errorf("intake.status %s: %w", key, err)
	}
	return rec, nil
}

// maxCancelTries bounds the optimistic retries of Cancel when a worker moves the record at the
// same moment.
const maxCancelTries = 5

// Cancel moves the record for key to cancelled while it is accepted or retry_scheduled, and
// returns the new record. Afterwards it returns ErrNotCancellable with the current record.
func (in *Intake) Cancel(ctx context.Context, key string) (Record, error) {
	for range maxCancelTries {
		rec, err := in.Store.Get(ctx, key)
		if err != nil {
			return Record{}, fmt.Errorf("intake.cancel %s: %w", key, err)
		}
		next, err := rec.Cancel(in.Clock.Now())
		if err != nil {
			return rec, err
		}
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
