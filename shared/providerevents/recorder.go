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
	// Receipt is the receipt stored for the attempt after the call (zero for poison).
	Receipt Receipt
	// Changed reports whether this call changed the stored receipt.
	Changed bool
	// State is the record's state after the call, when the record was read.
	State notify.State
}

// Record records rc and, when it is final and its record is sent for the same attempt, moves
// the record to delivered or undelivered; when the record is still dispatching that attempt,
// the receipt is held on the record (HoldReceipt) for the transition that ends the attempt. A non-nil error means a store failed or a transition
// kept losing races: the caller should have the event delivered again. Every other case,
// including poison, returns a nil error and is counted and logged by outcome.
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
		r.log().Error("receipt not recorded", "attempt_ref", rc.AttemptRef, "provider", rc.Provider, "error", err)
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
	r.log().Log(ctx, level, "receipt",
		"attempt_ref", res.Receipt.AttemptRef, "provider", rc.Provider, "message_id", res.Receipt.MessageID,
		"receipt_status", string(res.Receipt.Status), "detail", res.Receipt.Detail,
		"outcome", string(res.Outcome), "changed", res.Changed, "state", string(res.State))
	return res, nil
}

func (r *Recorder) record(ctx context.Context, rc Receipt) (Result, error) {
	stored, changed, err := r.Receipts.Put(ctx, rc)
	if err != nil {
		return Result{}, fmt.Errorf("providerevents.record %s: %w", rc.AttemptRef, err)
	}
	res := Result{Outcome: OutcomeRecorded, Receipt: stored, Changed: changed}
	if stored.Final() && rc.Final() && stored.Status != rc.Status {
		// Two final words that disagree: the first one stays; say so loudly.
		r.log().Warn("contradicting final receipt ignored", "attempt_ref", rc.AttemptRef,
			"stored", string(stored.Status), "received", string(rc.Status), "provider", rc.Provider)
	}
	if !stored.Final() {
		// Evidence of acceptance only: reconciliation reads it, nothing else to do. Even a
		// duplicate goes on below when final, so a retry after a failed transition finishes it.
		return res, nil
	}
	id, n, _ := stored.Attempt()
	key, err := r.Keys.KeyByNotificationID(ctx, id)
	if errors.Is(err, notify.ErrNotFound) {
		res.Outcome = OutcomeOrphan
		return res, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("providerevents.record %s: %w", rc.AttemptRef, err)
	}
	maxTries := r.MaxTries
	if maxTries <= 0 {
		maxTries = DefaultMaxTries
	}
	for range maxTries {
		done, err := r.applyOnce(ctx, stored, rc, key, id, n, &res)
		if err != nil {
			return Result{}, fmt.Errorf("providerevents.record %s: %w", rc.AttemptRef, err)
		}
		if done {
			return res, nil
		}
	}
	return Result{}, fmt.Errorf("providerevents.record %s: %d concurrent changes: %w", rc.AttemptRef, maxTries, notify.ErrConflict)
}

// applyOnce reads the record under key and does what the final receipt stored (for attempt n
// of notification id) does to it: hold it on a record still dispatching, apply its transition,
// or nothing (orphan, stale, mismatched, already settled), and sets res accordingly. in is the
// receipt received, which the stored one may predate. done is false when a concurrent write
// won, so the caller reads the record again.
func (r *Recorder) applyOnce(ctx context.Context, stored, in Receipt, key, id string, n int, res *Result) (done bool, err error) {
	rec, err := r.Notifications.Get(ctx, key)
	if errors.Is(err, notify.ErrNotFound) {
		res.Outcome = OutcomeOrphan
		return true, nil
	}
	if err != nil {
		return false, err
	}
	res.State = rec.State
	ap := applicable(rec, stored, in)
	outcome, ch := decide(rec, id, n, ap)
	switch outcome {
	case OutcomeTransitioned:
	case OutcomeEarly:
		// The dispatch worker is still calling the provider: keep the receipt on the record,
		// with what settles the attempt by it (provider, message ID, time), and the transition
		// that ends the attempt applies it.
		err := r.Notifications.HoldReceipt(ctx, rec, ap.Held())
		if errors.Is(err, notify.ErrConflict) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		res.Outcome = outcome
		return true, nil
	default:
		res.Outcome = outcome
		if outcome == OutcomeMismatch {
			// The receipt stays in the log as evidence (and in the table when it came first).
			r.log().Error("receipt names our attempt but another provider or message; not applied", "attempt_ref", in.AttemptRef,
				"receipt_provider", in.Provider, "receipt_message_id", in.MessageID, "record_provider", rec.Provider, "state", string(rec.State))
		}
		if outcome == OutcomeStale {
			// A receipt for an attempt the record has left behind: if the record went on to
			// another attempt, the provider may have delivered twice.
			r.log().Warn("receipt for an attempt the record has left", "attempt_ref", stored.AttemptRef,
				"state", string(rec.State), "record_attempt", rec.Attempt, "receipt_status", string(stored.Status))
		}
		return true, nil
	}
	ch.Actor = invocation.Of(ctx, Component)
	next, err := rec.Apply(ch, r.clock().Now())
	if err != nil {
		return false, err
	}
	err = r.Notifications.Transition(ctx, rec, next)
	if errors.Is(err, notify.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.Metrics.Transition(string(next.State), string(next.Reason))
	res.Outcome, res.State = OutcomeTransitioned, next.State
	return true, nil
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
