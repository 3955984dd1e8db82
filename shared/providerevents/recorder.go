package providerevents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/invocation"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// Writer records receipts; *Store is one.
type Writer interface {
	Put(ctx context.Context, rc Receipt) (stored Receipt, changed bool, err error)
}

// Keys finds a notification's idempotency key from its notification ID; *dynamostore.Store
// is one. It returns an error wrapping notify.ErrNotFound when no record carries the ID.
type Keys interface {
	KeyByNotificationID(ctx context.Context, notificationID string) (string, error)
}

// Notifications is the part of notify.Store a receipt needs, and HoldReceipt, which keeps a
// final receipt on a dispatching record; *dynamostore.Store is one.
type Notifications interface {
	Get(ctx context.Context, key string) (notify.Record, error)
	Transition(ctx context.Context, prev, next notify.Record) error
	HoldReceipt(ctx context.Context, rec notify.Record, receipt notify.Receipt) error
}

// Component names provider-events in the actor of its transitions when it runs outside
// Lambda.
const Component = "provider-events"

// DefaultMaxTries bounds the optimistic retries of a transition that lost a race.
const DefaultMaxTries = 5

// Recorder records receipts and applies final ones to sent notifications.
type Recorder struct {
	Receipts      Writer
	Keys          Keys
	Notifications Notifications
	Clock         notify.Clock
	// MaxTries bounds the tries of one transition (default DefaultMaxTries).
	MaxTries int
	// ConfigurationSet is the End User Messaging configuration set this stack sends through
	// (SMS_CONFIGURATION_SET). When set, an End User Messaging receipt that names another is a
	// mismatch: logged and counted, never stored or applied. One that names none (a message
	// sent before dispatch put the name in its context) is matched on provider and message ID
	// alone.
	ConfigurationSet string
	Log              *slog.Logger
	Metrics          *obs.Metrics
}

// Result is what Record did with one receipt.
type Result struct {
	Outcome Outcome
	// Receipt is the receipt stored for the attempt after the call, or the receipt received
	// when the call did not go through the receipts table (Stored false). Zero for poison.
	Receipt Receipt
	// Stored reports whether the call went through the receipts table: it put the receipt
	// (Changed then says whether the put changed what was stored). It is false when the
	// record alone holds the receipt's word: a final receipt applied at once to a sent record,
	// or a repeat of a final state the record already holds.
	Stored bool
	// Changed reports whether this call changed the stored receipt.
	Changed bool
	// State is the record's state after the call, when the record was read.
	State notify.State
}

// Record records rc and applies it. A final receipt for a record sent by the same attempt, of
// the same provider and message, moves the record to delivered or undelivered at once and is
// not put in the receipts table: the transition, and the audit entry the stream makes of it,
// hold its provider, message ID, state and time. A final receipt the record already holds
// is a duplicate and writes nothing. Every other receipt is put in the receipts table first,
// as evidence (reconciliation reads it), and then, when final, acted on: held on a record
// still dispatching that attempt (HoldReceipt) for the transition that ends the attempt, left
// to reconciliation on a record in dispatch_unknown, or only kept (orphan, stale, mismatch).
// A non-nil error means a store failed or a transition kept losing races: the receipt has
// then been put in the receipts table when that store answered, and the caller should have
// the event delivered again. Every other case, including poison, returns a nil error and is
// counted and logged by outcome.
func (r *Recorder) Record(ctx context.Context, rc Receipt) (Result, error) {
	if err := rc.Validate(); err != nil {
		r.Poison(ctx, rc.Provider, err)
		return Result{Outcome: OutcomePoison}, nil
	}
	if r.ConfigurationSet != "" && rc.Provider == config.SMSEndUserSMS && rc.ConfigurationSet != "" && rc.ConfigurationSet != r.ConfigurationSet {
		r.count(rc.Provider, OutcomeMismatch)
		r.log().Error("receipt from another configuration set; not applied", "attempt_ref", rc.AttemptRef,
			"provider", rc.Provider, "message_id", rc.MessageID, "outcome", string(OutcomeMismatch))
		return Result{Outcome: OutcomeMismatch}, nil
	}
	res, err := r.record(ctx, rc)
	if err != nil {
		r.log().Error("receipt not applied", "attempt_ref", rc.AttemptRef, "provider", rc.Provider,
			"receipt_status", string(rc.Status), "stored", res.Stored, "error", err)
		return res, err
	}
	r.count(rc.Provider, res.Outcome)
	level := slog.LevelInfo
	if res.Outcome == OutcomeStale || res.Outcome == OutcomeOrphan {
		level = slog.LevelWarn
	}
	if res.Outcome == OutcomeMismatch {
		level = slog.LevelError
	}
	// The provider's own time and event code of a receipt applied at once are kept here only.
	r.log().Log(ctx, level, "receipt",
		"attempt_ref", res.Receipt.AttemptRef, "provider", rc.Provider, "message_id", res.Receipt.MessageID,
		"receipt_status", string(res.Receipt.Status), "detail", res.Receipt.Detail, "receipt_at", res.Receipt.At,
		"outcome", string(res.Outcome), "stored", res.Stored, "changed", res.Changed, "state", string(res.State))
	return res, nil
}

// pending is one receipt on its way through record: the receipt received and, once it has
// been put in the receipts table, what is stored for its attempt.
type pending struct {
	in      Receipt
	stored  Receipt
	put     bool // the put was made and answered
	tried   bool // the put was tried (it may have failed)
	changed bool
}

// store puts p's receipt in the receipts table, once.
func (r *Recorder) store(ctx context.Context, p *pending) error {
	if p.put {
		return nil
	}
	p.tried = true
	stored, changed, err := r.Receipts.Put(ctx, p.in)
	if err != nil {
		return err
	}
	p.stored, p.changed, p.put = stored, changed, true
	if stored.Final() && p.in.Final() && stored.Status != p.in.Status {
		// Two final words that disagree: the first one stays; say so loudly.
		r.log().Warn("contradicting final receipt ignored", "attempt_ref", p.in.AttemptRef,
			"stored", string(stored.Status), "received", string(p.in.Status), "provider", p.in.Provider)
	}
	return nil
}

// result returns what p did so far, with outcome o.
func (p *pending) result(o Outcome, state notify.State) Result {
	res := Result{Outcome: o, Receipt: p.in, State: state}
	if p.put {
		res.Receipt, res.Stored, res.Changed = p.stored, true, p.changed
	}
	return res
}

func (r *Recorder) record(ctx context.Context, rc Receipt) (Result, error) {
	p := &pending{in: rc}
	if !rc.Final() {
		// An intermediate receipt is evidence of acceptance only: reconciliation reads it.
		// When a final one is stored already for the attempt (it came first, and was not
		// applied at once), that one is acted on below, so a retry after a failed
		// transition finishes it.
		if err := r.store(ctx, p); err != nil {
			return p.result("", ""), fmt.Errorf("providerevents.record %s: %w", rc.AttemptRef, err)
		}
		if !p.stored.Final() {
			return p.result(OutcomeRecorded, ""), nil
		}
	}
	id, n, _ := rc.Attempt()
	key, err := r.Keys.KeyByNotificationID(ctx, id)
	if errors.Is(err, notify.ErrNotFound) {
		return r.keep(ctx, p, OutcomeOrphan, "")
	}
	if err != nil {
		return r.fail(ctx, p, err)
	}
	maxTries := r.MaxTries
	if maxTries <= 0 {
		maxTries = DefaultMaxTries
	}
	for range maxTries {
		res, done, err := r.applyOnce(ctx, p, key, id, n)
		if err != nil {
			return r.fail(ctx, p, err)
		}
		if done {
			return res, nil
		}
	}
	return r.fail(ctx, p, fmt.Errorf("%d concurrent changes: %w", maxTries, notify.ErrConflict))
}

// keep puts p's receipt in the receipts table (when not done yet) and returns outcome o.
func (r *Recorder) keep(ctx context.Context, p *pending, o Outcome, state notify.State) (Result, error) {
	if err := r.store(ctx, p); err != nil {
		return r.fail(ctx, p, err)
	}
	return p.result(o, state), nil
}

// fail returns err for a receipt that could not be applied, having put the receipt in the
// receipts table first when that was not tried yet (best effort: the receipts store may be
// what failed), so that a receipt whose transition failed is kept as evidence even if the
// provider never delivers it again.
func (r *Recorder) fail(ctx context.Context, p *pending, err error) (Result, error) {
	if !p.tried {
		if perr := r.store(ctx, p); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return p.result("", ""), fmt.Errorf("providerevents.record %s: %w", p.in.AttemptRef, err)
}

// applyOnce reads the record under key and does what the final receipt (received, or stored
// for attempt n of notification id) does to it. A final receipt that the record settles by
// itself (at once) is applied or found a duplicate without the receipts table; any other is
// put there first, then held on a record still dispatching, left to reconciliation, or only
// kept (orphan, stale, mismatched). done is false when a concurrent write won, so the caller
// reads the record again.
func (r *Recorder) applyOnce(ctx context.Context, p *pending, key, id string, n int) (res Result, done bool, err error) {
	rec, err := r.Notifications.Get(ctx, key)
	if errors.Is(err, notify.ErrNotFound) {
		res, err := r.keep(ctx, p, OutcomeOrphan, "")
		return res, err == nil, err
	}
	if err != nil {
		return Result{}, false, err
	}
	var outcome Outcome
	var ch notify.Change
	if !p.put {
		outcome, ch = atOnce(rec, id, n, p.in)
	}
	if outcome == "" {
		// Not settled by the record alone: kept as evidence first, as every such receipt is.
		if err := r.store(ctx, p); err != nil {
			return Result{}, false, err
		}
		outcome, ch = decide(rec, id, n, applicable(rec, p.stored, p.in))
	}
	switch outcome {
	case OutcomeTransitioned:
	case OutcomeEarly:
		// The dispatch worker is still calling the provider: keep the receipt on the record,
		// with what settles the attempt by it (provider, message ID, time), and the transition
		// that ends the attempt applies it.
		err := r.Notifications.HoldReceipt(ctx, rec, applicable(rec, p.stored, p.in).Held())
		if errors.Is(err, notify.ErrConflict) {
			return Result{}, false, nil
		}
		if err != nil {
			return Result{}, false, err
		}
		return p.result(outcome, rec.State), true, nil
	default:
		r.logUnapplied(rec, p.in, outcome)
		return p.result(outcome, rec.State), true, nil
	}
	ch.Actor = invocation.Of(ctx, Component)
	next, err := rec.Apply(ch, r.clock().Now())
	if err != nil {
		return Result{}, false, err
	}
	err = r.Notifications.Transition(ctx, rec, next)
	if errors.Is(err, notify.ErrConflict) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, err
	}
	r.Metrics.Transition(string(next.State), string(next.Reason))
	return p.result(OutcomeTransitioned, next.State), true, nil
}

// logUnapplied logs a receipt that outcome leaves unapplied to rec, when that says something
// is wrong: a mismatch (the receipt stays in the log as evidence, and in the table when it
// came first) or a stale receipt.
func (r *Recorder) logUnapplied(rec notify.Record, in Receipt, outcome Outcome) {
	switch outcome {
	case OutcomeMismatch:
		r.log().Error("receipt names our attempt but another provider or message; not applied", "attempt_ref", in.AttemptRef,
			"receipt_provider", in.Provider, "receipt_message_id", in.MessageID, "record_provider", rec.Provider, "state", string(rec.State))
	case OutcomeStale:
		// A receipt for an attempt the record has left behind: if the record went on to
		// another attempt, the provider may have delivered twice.
		r.log().Warn("receipt for an attempt the record has left", "attempt_ref", in.AttemptRef,
			"state", string(rec.State), "record_attempt", rec.Attempt, "receipt_status", string(in.Status))
	}
}

// atOnce returns what the final receipt in, received for attempt n of notification id, does
// to rec without the receipts table: OutcomeTransitioned (with its change) when rec is sent by
// that attempt and in names the attempt's provider and message, OutcomeDuplicate when rec
// already holds in's final state for that attempt, and "" for every other case, which the
// receipts table keeps (a final word that contradicts the record's is stale). On a sent
// record that holds an early
// receipt of the attempt (the dispatch worker stopped before applying it), the held receipt
// is the first final word and is the one applied.
func atOnce(rec notify.Record, id string, n int, in Receipt) (Outcome, notify.Change) {
	if rec.NotificationID != id || rec.Attempt != n || !in.SMS().Matches(rec.Provider, rec.ProviderMessageID) {
		return "", notify.Change{}
	}
	switch rec.State {
	case notify.StateSent:
		if ch, ok := rec.HeldReceipt(); ok {
			return OutcomeTransitioned, notify.Change{To: ch.To, Reason: ch.Reason}
		}
		return OutcomeTransitioned, notify.Change{To: in.Status.State(), Reason: in.Status.Reason()}
	case notify.StateDelivered, notify.StateUndelivered:
		if rec.State == in.Status.State() {
			return OutcomeDuplicate, notify.Change{}
		}
	}
	return "", notify.Change{}
}

// applicable returns the receipt that speaks for rec's attempt: the one stored, unless it does
// not match rec (a neighbour's, stored first) and the one received does and is final; then
// the received one, so a neighbour cannot keep the genuine receipt out. A received receipt
// that does not match rec is itself returned, so that decide reports the mismatch.
func applicable(rec notify.Record, stored, in Receipt) Receipt {
	matches := func(r Receipt) bool { return r.SMS().Matches(rec.Provider, rec.ProviderMessageID) }
	switch {
	case !matches(in):
		return in
	case !matches(stored) && in.Final():
		return in
	}
	return stored
}

// decide returns what a final receipt for attempt n of notification id does to rec, and the
// change to apply when the outcome is OutcomeTransitioned.
func decide(rec notify.Record, id string, n int, rc Receipt) (Outcome, notify.Change) {
	if rec.NotificationID != id {
		return OutcomeOrphan, notify.Change{}
	}
	sameAttempt := rec.Attempt == n
	if sameAttempt && !rc.SMS().Matches(rec.Provider, rec.ProviderMessageID) {
		// Our reference, but from another provider than the attempt went to, or for another
		// message: kept as evidence, alarmed on, never applied.
		return OutcomeMismatch, notify.Change{}
	}
	switch {
	case rec.State == notify.StateSent && sameAttempt:
		return OutcomeTransitioned, notify.Change{To: rc.Status.State(), Reason: rc.Status.Reason()}
	case rec.State == notify.StateDispatching && sameAttempt && !rec.EarlyReceipt.Held():
		return OutcomeEarly, notify.Change{}
	case rec.State == notify.StateDispatching && sameAttempt:
		// One final receipt is already held for the attempt; the first final word wins.
		return OutcomeDuplicate, notify.Change{}
	case rec.State == notify.StateDispatchUnknown && sameAttempt:
		return OutcomeRecorded, notify.Change{}
	case (rec.State == notify.StateDelivered || rec.State == notify.StateUndelivered) && sameAttempt &&
		rec.State == rc.Status.State():
		return OutcomeDuplicate, notify.Change{}
	}
	return OutcomeStale, notify.Change{}
}

// Poison counts and logs an event that could not be turned into a receipt. why must be one
// of this package's errors (wrapping ErrPoison), which never quote the event; the event itself
// is never logged.
func (r *Recorder) Poison(ctx context.Context, provider string, why error) {
	r.count(provider, OutcomePoison)
	r.log().WarnContext(ctx, "provider event dropped", "provider", provider, "outcome", string(OutcomePoison), "why", why)
}

func (r *Recorder) count(provider string, o Outcome) {
	if provider == "" {
		provider = "unknown"
	}
	// Also by Outcome alone: the mismatch alarm covers every provider.
	r.Metrics.EmitRollup(map[string]string{"Provider": provider, "Outcome": string(o)}, [][]string{{"Outcome"}},
		obs.Metric{Name: "Receipts", Unit: obs.UnitCount, Value: 1})
}

func (r *Recorder) clock() notify.Clock {
	if r.Clock == nil {
		return notify.SystemClock{}
	}
	return r.Clock
}

func (r *Recorder) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}
