package notify

import (
	"fmt"
	"time"
)

// Record is a notification as the domain sees it. Adapters keep their own storage model and
// convert; no attribute name of any database appears here.
type Record struct {
	IdempotencyKey     string
	NotificationID     string
	EventID            string
	Channel            string
	Purpose            string
	State              State
	Reason             Reason
	Version            int64
	Attempt            int
	CreatedAt          time.Time
	UpdatedAt          time.Time
	ExpiresAt          time.Time
	DispatchDeadline   time.Time
	PolicyVersion      string
	SafetyMargin       time.Duration
	RequestFingerprint string
	// Owner is the keyed fingerprint of the principal that admitted the record (see
	// owner.go); empty on records admitted before owners were stored. Set at admission.
	Owner string
	// Sealed is the encrypted Secret; empty once SendingDone.
	Sealed            []byte
	DestinationFP     string
	Provider          string
	ProviderMessageID string
	// AttemptProviders names the provider of each attempt, in order: attempt n went to
	// AttemptProviders[n-1]. A record leased before providers were listed per attempt lacks
	// the early ones; they all went to its single provider (see Providers).
	AttemptProviders []string
	LeaseUntil       time.Time
	// LeaseToken is the random token of the current lease, written by the lease itself; empty
	// once the lease is released. A lease write that the SDK retried after it had committed is
	// recognised by it as the worker's own.
	LeaseToken string
	// Actor is who made the last transition.
	Actor Actor
	// EarlyReceipt is a final delivery receipt for the current attempt that arrived while the
	// record was dispatching (zero when none is held). It is kept on the record and applied by
	// the transitions that follow (sent → delivered or undelivered; reconciliation of
	// dispatch_unknown), so it is never lost when the receipt's own redelivery runs out, and
	// it keeps the provider's message ID, which the settling transition writes onto the record.
	EarlyReceipt Receipt
	// RequeuedAt is when the dispatch or reconcile message of the current version was last
	// presumed lost and sent again (by the sweeper or by a replay of the request); zero after
	// every transition. A requeued record is due although its NextActionAt moved forward.
	RequeuedAt time.Time
	// AttemptedAt is when the current attempt took its lease: reconciliation counts a
	// provider's "not found" only once its visibility window has passed since then.
	AttemptedAt time.Time
	// NotFoundAt is when a lookup first found nothing of the current attempt at a provider
	// whose "not found" must be confirmed by a second lookup a visibility window later (its
	// lookup is not documented as exact); zero otherwise. Inconclusive rounds keep it (the
	// reconciler passes it on); every other transition clears it.
	NotFoundAt     time.Time
	ReconcileCount int
	// NextActionAt is when the sweeper should look at the record again; zero once terminal.
	NextActionAt time.Time
	// PurgeAt is when the store may delete the record (expires_at plus the status grace).
	PurgeAt time.Time
	// PrefixFP and Country say where the number is, safely, for the conversion counters: the
	// keyed fingerprint of its prefix (the guard's) and its country. Set at admission.
	PrefixFP string
	Country  string
	// ConvertedAt is when the caller reported the code or link used (reason CONVERTED); zero
	// until then. No later transition clears it.
	ConvertedAt time.Time
	// DecideBy is set at admission when the abuse guard is on: until then (plus SkewMargin)
	// a duplicate waits for the creator's decision, and after it takes the creator's place.
	// Zero on records admitted without the guard: they are decided.
	DecideBy time.Time
	// DecidedAt is when whoever counted the record (its creator, or a request or worker in its
	// place) marked it admitted (no transition, no version change); a refusal can no longer be
	// written.
	DecidedAt time.Time
	// RetryAt is, on a refused record, when the window that refused it ends: a new request
	// (with a new key) may pass from then on.
	RetryAt time.Time
}

// Receipt is a provider's final delivery receipt for an attempt, as a record holds it: the
// evidence a transition settles the attempt by.
type Receipt struct {
	// State is StateDelivered or StateUndelivered; StateNone when no receipt is held.
	State State
	// Provider names the provider that reported it; MessageID is its message ID for the
	// attempt (empty on a receipt held before the record kept it).
	Provider  string
	MessageID string
	// At is when the provider says the receipt's event happened (zero when unknown).
	At time.Time
}

// Held reports whether rc is a receipt (a final state), not the zero value.
func (rc Receipt) Held() bool { return rc.State != StateNone }

// Matches reports whether rc can speak for an attempt that went to provider and, once known,
// has the message ID messageID: an empty name on either side matches anything, as in
// sms.Receipt.Matches. A receipt that does not match is evidence of a mismatch, never applied.
func (rc Receipt) Matches(provider, messageID string) bool {
	if provider != "" && rc.Provider != "" && rc.Provider != provider {
		return false
	}
	return messageID == "" || rc.MessageID == "" || rc.MessageID == messageID
}

// Undecided reports whether r's admission is still to be decided: it is accepted, with a
// decision bound, and not marked. Nobody has counted it for sure: whoever picks it up counts it
// (see Decider) before it is sent, whatever the time.
func (r Record) Undecided() bool {
	return r.State == StateAccepted && !r.DecideBy.IsZero() && r.DecidedAt.IsZero()
}

// Admission is everything needed to admit a request besides the request itself. Sealing and
// the keyed fingerprints of the destination and of the request are adapters' work, done
// before admission.
type Admission struct {
	NotificationID     string
	Sealed             []byte
	DestinationFP      string
	RequestFingerprint string
	// PrefixFP and Country are the number's prefix fingerprint and country (Record.PrefixFP).
	PrefixFP string
	Country  string
}

// NewRecord returns the first version of the record for req, admitted at now. A request whose
// dispatch deadline has already passed is admitted as expired (EXPIRED_AT_ADMISSION), without
// its sealed payload: it is evidence that the request arrived and why nothing was sent.
func NewRecord(req Request, a Admission, now time.Time, p Policy) Record {
	deadline := p.Deadline(req.ExpiresAt)
	r := Record{
		IdempotencyKey:     req.IdempotencyKey,
		NotificationID:     a.NotificationID,
		EventID:            req.EventID,
		Channel:            req.Channel,
		Purpose:            req.Purpose,
		State:              StateAccepted,
		Reason:             ReasonAdmitted,
		Version:            1,
		CreatedAt:          now,
		UpdatedAt:          now,
		ExpiresAt:          req.ExpiresAt,
		DispatchDeadline:   deadline,
		PolicyVersion:      p.Version,
		SafetyMargin:       p.SafetyMargin,
		RequestFingerprint: a.RequestFingerprint,
		Sealed:             a.Sealed,
		DestinationFP:      a.DestinationFP,
		PrefixFP:           a.PrefixFP,
		Country:            a.Country,
		NextActionAt:       earliest(now.Add(p.SweepAfter), deadline),
		PurgeAt:            req.ExpiresAt.Add(p.StatusGrace),
	}
	if !now.Before(deadline) {
		r.State, r.Reason = StateExpired, ReasonExpiredAtAdmission
		r.Sealed, r.NextActionAt = nil, time.Time{}
	}
	return r
}

// Change is a requested move of a record to another state, with the facts that go with it.
type Change struct {
	To     State
	Reason Reason
	// LeaseUntil and LeaseToken are required when taking the lease: when the worker's hold
	// runs out, and a random token naming this lease.
	LeaseUntil time.Time
	LeaseToken string
	// Actor is who makes the transition; it is written onto the record with it.
	Actor Actor
	// Provider and ProviderMessageID record who accepted the message, when known.
	Provider          string
	ProviderMessageID string
	// NextActionAt is when the record is due again (a retry or reconciliation time). It is
	// ignored for terminal states and capped at the dispatch deadline before sending is done.
	NextActionAt time.Time
	// RetryAt is, for a refusal (StateRefused), when the window that refused it ends.
	RetryAt time.Time
	// NotFoundAt is, for an inconclusive round (dispatch_unknown → dispatch_unknown), the
	// record's NotFoundAt from then on.
	NotFoundAt time.Time
}

// Apply returns the next version of r after ch at now, or an error wrapping
// ErrInvalidTransition. Taking the lease at or after the dispatch deadline is refused with
// ErrConflict: the caller must expire the record instead. The store writes the result
// conditioned on r.Version, so Apply itself never needs a lock.
func (r Record) Apply(ch Change, now time.Time) (Record, error) {
	if err := CheckTransition(r.State, ch.To, ch.Reason); err != nil {
		return Record{}, fmt.Errorf("notify.apply %s v%d: %w", r.NotificationID, r.Version, err)
	}
	next := r
	next.State, next.Reason = ch.To, ch.Reason
	next.Version = r.Version + 1
	next.UpdatedAt = now
	next.NextActionAt = ch.NextActionAt
	next.Actor = ch.Actor
	next.RequeuedAt = time.Time{}
	next.NotFoundAt = time.Time{}
	if ch.Provider != "" {
		next.Provider = ch.Provider
	}
	if ch.ProviderMessageID != "" {
		next.ProviderMessageID = ch.ProviderMessageID
	}
	switch ch.To {
	case StateDispatching:
		if err := r.lease(&next, ch, now); err != nil {
			return Record{}, err
		}
	case StateDispatchUnknown:
		next.LeaseUntil, next.LeaseToken = time.Time{}, ""
		if ch.Reason == ReasonReconcileInconclusive {
			next.ReconcileCount = r.ReconcileCount + 1
			next.NotFoundAt = ch.NotFoundAt
		}
	case StateRefused:
		next.RetryAt = ch.RetryAt
		next.LeaseUntil, next.LeaseToken = time.Time{}, ""
	default:
		next.LeaseUntil, next.LeaseToken = time.Time{}, ""
	}
	next.tidy(r.DispatchDeadline, now)
	return next, nil
}

// lease sets on next the lease ch takes of r at now: a new attempt, its token, lease end and
// start. It refuses a lease at or after the dispatch deadline (ErrConflict) and one without a
// token or ending by now (ErrInvalidTransition).
func (r Record) lease(next *Record, ch Change, now time.Time) error {
	if !now.Before(r.DispatchDeadline) {
		return fmt.Errorf("notify.apply %s: lease at %s, deadline %s: %w",
			r.NotificationID, now.Format(time.RFC3339Nano), r.DispatchDeadline.Format(time.RFC3339Nano), ErrConflict)
	}
	if !ch.LeaseUntil.After(now) || ch.LeaseToken == "" {
		return fmt.Errorf("notify.apply %s: a lease needs a token and must end after now: %w", r.NotificationID, ErrInvalidTransition)
	}
	next.Attempt = r.Attempt + 1
	next.AttemptProviders = append(r.Providers(), ch.Provider)
	next.LeaseUntil, next.LeaseToken = ch.LeaseUntil, ch.LeaseToken
	// A receipt held for the previous attempt says nothing about this one.
	next.EarlyReceipt = Receipt{}
	next.AttemptedAt = now
	next.ReconcileCount = 0
	// If the worker dies, the sweeper finds the record once the lease has run out and
	// next_action_at has come (it skips a record whose lease is still held). The lease keeps
	// the next_action_at the record already had, so taking it does not move the due index's
	// key, which would cost two index writes (a delete and a put); a dead worker's record is
	// then found at most the policy's SweepAfter later than its lease end. Only a record that
	// had none gets the lease's end.
	next.NextActionAt = r.NextActionAt
	if next.NextActionAt.IsZero() {
		next.NextActionAt = ch.LeaseUntil
	}
	return nil
}

// tidy drops what r's new state no longer needs (the decision bound once it has left
// accepted, the sealed secret once sending is done, a held receipt once terminal) and sets
// when it is due: never once sent or terminal, else by the dispatch deadline at the latest
// (now when nothing set it). What it drops keeps the record under 1 KB, one write unit a
// write (docs/benchmarks.md).
func (r *Record) tidy(deadline, now time.Time) {
	if r.State != StateAccepted {
		// Only an accepted record can be undecided (Undecided).
		r.DecideBy, r.DecidedAt = time.Time{}, time.Time{}
	}
	if r.State.SendingDone() {
		r.Sealed = nil
	}
	if r.State.Terminal() {
		// Applied, or past the point where it could be.
		r.EarlyReceipt = Receipt{}
	}
	if r.State.Terminal() {
		r.NextActionAt = time.Time{}
	} else if !r.State.SendingDone() {
		if r.NextActionAt.IsZero() {
			r.NextActionAt = now
		}
		// Past the deadline the sweeper must expire the record, so it must be due by then.
		r.NextActionAt = earliest(r.NextActionAt, deadline)
	} else {
		// Sent: only a receipt can move it on; the sweeper has nothing to do.
		r.NextActionAt = time.Time{}
	}
}

// Providers returns the provider of each attempt so far, in order, as a new slice: the
// recorded list, completed for a record written before the list was kept (one provider, so
// every attempt before the list went to the record's Provider).
func (r Record) Providers() []string {
	out := make([]string, 0, r.Attempt+1)
	for i := len(r.AttemptProviders); i < r.Attempt; i++ {
		out = append(out, r.Provider)
	}
	out = append(out, r.AttemptProviders...)
	if len(out) > r.Attempt {
		out = out[len(out)-r.Attempt:]
	}
	return out
}

// HeldReceipt returns the change that applies the early receipt r holds, when r is sent and
// holds one that matches its provider and message ID: delivered / RECEIPT_DELIVERED or
// undelivered / RECEIPT_FAILED, with the receipt's message ID. A held receipt that names
// another provider or message is not applied (see HeldMismatch).
func (r Record) HeldReceipt() (Change, bool) {
	if r.State != StateSent || !r.EarlyReceipt.Matches(r.Provider, r.ProviderMessageID) {
		return Change{}, false
	}
	ch := Change{To: r.EarlyReceipt.State, Provider: r.EarlyReceipt.Provider, ProviderMessageID: r.EarlyReceipt.MessageID}
	switch r.EarlyReceipt.State {
	case StateDelivered:
		ch.Reason = ReasonReceiptDelivered
	case StateUndelivered:
		ch.Reason = ReasonReceiptFailed
	default:
		return Change{}, false
	}
	return ch, true
}

// HeldMismatch reports whether r holds a receipt for its current attempt that names another
// provider or message than the attempt's: evidence of a mismatch, never applied.
func (r Record) HeldMismatch() bool {
	return r.EarlyReceipt.Held() && !r.EarlyReceipt.Matches(r.Provider, r.ProviderMessageID)
}

// Requeue returns r as it stands once its queue message has been presumed lost and sent again
// at now: the same version, RequeuedAt now, and NextActionAt moved forward by after (but never
// past a dispatch deadline still ahead, where the sweeper must find the record to expire it).
// The store writes it conditioned on r's version and NextActionAt, so of several sweeps or
// replays acting at once only one sends the message.
func (r Record) Requeue(now time.Time, after time.Duration) Record {
	next := r
	next.RequeuedAt = now
	next.NextActionAt = now.Add(after)
	if now.Before(r.DispatchDeadline) {
		next.NextActionAt = earliest(next.NextActionAt, r.DispatchDeadline)
	}
	return next
}

// Due reports whether a worker may act on r at now: its NextActionAt has come, or its message
// was requeued because the one sent earlier was presumed lost.
func (r Record) Due(now time.Time) bool {
	return !now.Before(r.NextActionAt) || !r.RequeuedAt.IsZero()
}

// Cancel returns the next version of r after a caller's cancellation, or an error wrapping
// ErrNotCancellable when r has left the cancellable states.
func (r Record) Cancel(now time.Time) (Record, error) {
	if !Allowed(r.State, StateCancelled, ReasonCancelled) {
		return Record{}, fmt.Errorf("notify.cancel %s in %s: %w", r.NotificationID, r.State, ErrNotCancellable)
	}
	return r.Apply(Change{To: StateCancelled, Reason: ReasonCancelled}, now)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
