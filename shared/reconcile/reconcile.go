// Package reconcile is the reconcile function's handler: Reconciler settles the attempts whose
// outcome is unknown through the receipts provider-events recorded and the provider's lookup.
// It holds an sms.LookupOnly, a type with no Send method, so it can never send. Its core is
// package workercore's.
package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// Reconciler is the reconcile worker. It settles dispatch_unknown records by reading the
// provider's view of the attempt. It holds an sms.LookupOnly, whose only method is Lookup, and
// nothing else that could reach a provider: it cannot send (a test walks its fields to keep it
// so). Every field but Receipts and those Base marks optional is required.
type Reconciler struct {
	Store  notify.Store
	Lookup sms.LookupOnly
	// Receipts reads the delivery receipts provider-events stored, for every provider: they
	// are read before the lookup and settle the attempt when they are conclusive. Nil means
	// no receipts table is configured; only a receipt held on the record is read then.
	Receipts sms.ReceiptReader
	// Provider names the provider Lookup reads. A record whose attempt went to another
	// provider (the configuration changed) cannot be looked up here: its lookups are
	// inconclusive until it expires as unresolved.
	Provider string
	// Chain holds the lookups of every provider of the chain, by name; empty means a chain
	// of one, Provider with its Lookup. An attempt is looked up at the provider recorded for
	// it (a record written before the chain, with no provider, at the first).
	Chain []workercore.LookupRoute
	workercore.Base
}

// lookupFor returns the lookup of the provider that had rec's current attempt, and its name;
// ok is false when that provider is not configured here.
func (r *Reconciler) lookupFor(rec notify.Record) (workercore.LookupRoute, bool) {
	chain := r.Chain
	if len(chain) == 0 {
		chain = []workercore.LookupRoute{{Name: r.Provider, Lookup: r.Lookup}}
	}
	if rec.Provider == "" {
		return chain[0], true
	}
	for _, lr := range chain {
		if lr.Name == rec.Provider || lr.Name == "" {
			return lr, true
		}
	}
	return workercore.LookupRoute{Name: rec.Provider}, false
}

func (r *Reconciler) core() workercore.Core { return r.Base.Core("reconcile", r.Store) }

// Handle is the Lambda handler for the reconcile queue, with partial batch failures.
func (r *Reconciler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return r.core().HandleBatch(ctx, ev, r.Settings.Parallelism, r.Reconcile), nil
}

// Reconcile handles one reconcile message. Only a dispatch_unknown record is reconciled;
// anything else is acknowledged. The stored receipts of the attempt are read first, for every
// provider (see byReceipt): a final one settles the record as delivered or undelivered, an
// intermediate one with a message ID as sent, all with RECONCILED_BY_RECEIPT, and the provider
// is not asked. Otherwise the lookup's answer decides:
//
//	found          → sent / RECONCILED_ACCEPTED, then delivered or undelivered when the
//	                 provider already holds a final receipt
//	not found      → retry_scheduled / RECONCILED_NOT_FOUND and a dispatch message, when the
//	                 deadline allows and an attempt is left; expired / EXPIRED_BEFORE_DISPATCH
//	                 when the deadline does not (nothing was sent)
//	inconclusive   → expired / EXPIRED_UNRESOLVED once the deadline has passed (and the
//	                 visibility window too, so the answer could have been conclusive);
//	                 before it, dispatch_unknown / RECONCILE_INCONCLUSIVE with backoff, until
//	                 MaxReconciles, after which the record waits for its deadline
//
// A lookup error counts as inconclusive. "Not found" is only trusted after the visibility
// window (sms.Absent, given the attempt's end), and at a provider whose lookup is not
// documented as exact (Sinch) only when a second lookup a visibility window after the first
// finds nothing either (see unconfirmed).
func (r *Reconciler) Reconcile(ctx context.Context, m notify.Message) error {
	c := r.core()
	rec, ok, err := c.Load(ctx, m)
	if !ok {
		return err
	}
	if rec.State != notify.StateDispatchUnknown {
		c.Skip(workercore.OutcomeNotUnknown, rec)
		return nil
	}
	now := r.Clock.Now()
	if !rec.Due(now) && now.Before(rec.DispatchDeadline) {
		// Early (a duplicate, or a wait longer than SQS allows): do not spend a lookup, or one of
		// the bounded inconclusive rounds, before the record is due.
		if m.Version != rec.Version {
			c.Skip(workercore.OutcomeStale, rec)
			return nil
		}
		c.ScheduleReconcile(ctx, rec, rec.NextActionAt.Sub(now))
		c.Skip(workercore.OutcomeNotDue, rec)
		return nil
	}

	ch, seen, err := r.byReceipt(ctx, c, rec)
	if err != nil {
		return err
	}
	if ch.To != notify.StateNone {
		_, _, err := c.Settle(ctx, rec, ch, r.Clock.Now())
		return err
	}
	res := r.lookup(ctx, c, rec)
	if seen && res.Status == sms.LookupNotFound {
		// A receipt proves the provider accepted the attempt: its "not found" is wrong, and
		// must never authorise another send.
		res = sms.Inconclusive("receipt_contradicts_not_found")
	}
	now = r.Clock.Now()
	if res.Status == sms.LookupNotFound && !r.confirmed(rec, now) {
		return r.unconfirmed(ctx, c, m, rec, now)
	}
	switch res.Reason() {
	case notify.ReasonReconciledAccepted:
		return r.accepted(ctx, c, rec, res, now)
	case notify.ReasonReconciledNotFound:
		return r.notFound(ctx, c, rec, now)
	}
	return r.inconclusive(ctx, c, m, rec, res, now)
}

// byReceipt reads the receipt of rec's current attempt: the final receipt held on the record
// (it arrived while the record was dispatching), else the one in the receipts table. It
// returns the change that settles rec, with the receipt's message ID (To is StateNone when
// the receipts say nothing conclusive), and whether any receipt was found. A receipt that
// names another provider or message than the attempt's is a mismatch: counted, logged, never
// applied, but seen. A failed read is returned, so the message is retried: a lookup's "not
// found" must not be trusted while a receipt may be stored.
func (r *Reconciler) byReceipt(ctx context.Context, c workercore.Core, rec notify.Record) (notify.Change, bool, error) {
	ch := notify.Change{Reason: notify.ReasonReconciledByReceipt}
	if rec.Attempt < 1 {
		return notify.Change{}, false, nil
	}
	ref := sms.AttemptRef(rec.NotificationID, rec.Attempt)
	if held := rec.EarlyReceipt; held.Held() {
		if !held.Matches(rec.Provider, rec.ProviderMessageID) {
			r.mismatch(c, rec, ref, held.Provider)
			return notify.Change{}, true, nil
		}
		ch.To, ch.ProviderMessageID = held.State, held.MessageID
		if held.MessageID == "" {
			// Held before the record kept the receipt's message ID: the stored receipt has it.
			ch.ProviderMessageID = r.storedMessageID(ctx, c, rec, ref)
		}
		return ch, true, nil
	}
	if r.Receipts == nil {
		return notify.Change{}, false, nil
	}
	rc, ok, err := r.Receipts.FindByAttemptRef(ctx, ref)
	if err != nil {
		return notify.Change{}, false, fmt.Errorf("reconcile.receipts %s: %w", ref, err)
	}
	if !ok {
		return notify.Change{}, false, nil
	}
	c.Logger().Info("stored receipt", append(workercore.Attrs(rec), "attempt_ref", ref, "receipt_status", string(rc.Status), "receipt_provider", rc.Provider)...)
	if !rc.Matches(rec.Provider, rec.ProviderMessageID) {
		r.mismatch(c, rec, ref, rc.Provider)
		return notify.Change{}, true, nil
	}
	ch.ProviderMessageID = rc.MessageID
	switch {
	case rc.Status != sms.ReceiptNone:
		ch.To = rc.Status.State()
	case rc.MessageID != "" || rec.ProviderMessageID != "":
		ch.To = notify.StateSent
	default:
		// Accepted, but with no message ID to record as sent: the lookup may supply one.
		return notify.Change{}, true, nil
	}
	return ch, true, nil
}

// mismatch counts and logs a receipt for rec's attempt ref from another provider than the
// attempt's (or for another message): evidence, never applied. It still counts as seen, so
// that no "not found" authorises a send.
func (r *Reconciler) mismatch(c workercore.Core, rec notify.Record, ref, provider string) {
	r.Metrics.EmitRollup(map[string]string{workercore.DimProvider: provider}, [][]string{{}}, obs.Metric{Name: workercore.MetricReceiptMismatch, Unit: obs.UnitCount, Value: 1})
	c.Logger().Error("receipt names another provider or message; not applied", append(workercore.Attrs(rec), "attempt_ref", ref, "receipt_provider", provider)...)
}

// storedMessageID returns the message ID of the receipt stored for rec's attempt ref when it
// matches the attempt, else "": a failed read only costs the ID, the held receipt settles rec.
func (r *Reconciler) storedMessageID(ctx context.Context, c workercore.Core, rec notify.Record, ref string) string {
	if r.Receipts == nil {
		return ""
	}
	rc, ok, err := r.Receipts.FindByAttemptRef(ctx, ref)
	if err != nil {
		c.Logger().Warn("stored receipt not read; settled without its message ID", append(workercore.Attrs(rec), "attempt_ref", ref, "error", err)...)
	}
	if !ok || err != nil || !rc.Matches(rec.Provider, rec.ProviderMessageID) {
		return ""
	}
	return rc.MessageID
}

// lookup asks the provider about rec's current attempt. A lookup error becomes an inconclusive
// result.
func (r *Reconciler) lookup(ctx context.Context, c workercore.Core, rec notify.Record) sms.LookupResult {
	ref := sms.AttemptRef(rec.NotificationID, rec.Attempt)
	if rec.Attempt < 1 || rec.AttemptedAt.IsZero() {
		return sms.Inconclusive("attempt_unknown")
	}
	lr, ok := r.lookupFor(rec)
	if !ok {
		return sms.Inconclusive("provider_changed")
	}
	lctx, cancel := context.WithTimeout(ctx, r.Settings.ProviderTimeout)
	defer cancel()
	res, err := lr.Lookup.Lookup(lctx, sms.LookupRequest{
		AttemptRef: ref, MessageID: rec.ProviderMessageID, AttemptedAt: c.AttemptEnd(rec),
	})
	if err != nil {
		c.Logger().Warn("lookup failed; counted as inconclusive", append(workercore.Attrs(rec), "attempt_ref", ref, "error", err)...)
		if res.Status != sms.LookupInconclusive {
			res = sms.Inconclusive("provider_error")
		}
	}
	r.Metrics.Emit(map[string]string{workercore.DimProvider: lr.Name, "Status": string(res.Status)},
		obs.Metric{Name: workercore.MetricLookups, Unit: obs.UnitCount, Value: 1})
	c.Logger().Info("lookup", append(workercore.Attrs(rec), "attempt_ref", ref, "status", string(res.Status), "detail", res.Detail)...)
	return res
}

func (r *Reconciler) accepted(ctx context.Context, c workercore.Core, rec notify.Record, res sms.LookupResult, now time.Time) error {
	if res.Matches > 1 {
		r.Metrics.Emit(map[string]string{workercore.DimProvider: rec.Provider}, obs.Metric{Name: workercore.MetricDoubleSend, Unit: obs.UnitCount, Value: 1})
		c.Logger().Error("provider holds more than one accepted message for one attempt", append(workercore.Attrs(rec), "matches", res.Matches)...)
	}
	sent, ok, err := c.Settle(ctx, rec, notify.Change{
		To: notify.StateSent, Reason: notify.ReasonReconciledAccepted, ProviderMessageID: res.MessageID,
	}, now)
	if !ok || res.Receipt == sms.ReceiptNone {
		return err
	}
	// The provider already has the final receipt. A conflict here means provider-events
	// recorded it first, which is as good.
	_, _, err = c.Settle(ctx, sent, notify.Change{To: res.Receipt.State(), Reason: res.Receipt.Reason()}, now)
	return err
}

// confirmed reports whether a "not found" of rec's current attempt at now is proof: always at a
// provider whose lookup is exact, and at one whose lookup is not (LookupRoute.ConfirmNotFound)
// only when an earlier lookup already found nothing a visibility window or more before now.
func (r *Reconciler) confirmed(rec notify.Record, now time.Time) bool {
	if lr, ok := r.lookupFor(rec); !ok || !lr.ConfirmNotFound {
		return true
	}
	return !rec.NotFoundAt.IsZero() && !now.Before(rec.NotFoundAt.Add(r.Settings.Visibility))
}

// unconfirmed handles a "not found" that needs confirming: the first one is kept on the record
// (NotFoundAt) by an inconclusive round due a visibility window later, when a second lookup may
// confirm it; a later one that came too soon is an inconclusive round that keeps the first.
// Either way nothing is authorised, and past the deadline the record expires as unresolved.
func (r *Reconciler) unconfirmed(ctx context.Context, c workercore.Core, m notify.Message, rec notify.Record, now time.Time) error {
	res := sms.Inconclusive("not_found_unconfirmed")
	if !rec.NotFoundAt.IsZero() || !now.Before(rec.DispatchDeadline) {
		return r.inconclusive(ctx, c, m, rec, res, now)
	}
	ch := notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonReconcileInconclusive,
		NotFoundAt: now, NextActionAt: now.Add(r.Settings.Visibility)}
	next, ok, err := c.Settle(ctx, rec, ch, now)
	if !ok {
		return err
	}
	c.ScheduleReconcile(ctx, next, next.NextActionAt.Sub(now))
	return nil
}

func (r *Reconciler) notFound(ctx context.Context, c workercore.Core, rec notify.Record, now time.Time) error {
	if c.TooLate(rec, now) {
		// Proven not sent, and too late to send: stopped before dispatch.
		return c.Expire(ctx, rec, notify.ReasonExpiredBeforeDispatch, now)
	}
	ch := notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonReconciledNotFound, NextActionAt: now}
	if rec.Attempt >= r.Settings.MaxAttempts {
		// No attempt left, and retry_scheduled cannot move to failed: the record waits for its
		// deadline (the sweeper expires it then) and is not handed to dispatch.
		ch.NextActionAt = rec.DispatchDeadline
	}
	next, ok, err := c.Settle(ctx, rec, ch, now)
	if !ok {
		return err
	}
	if rec.Attempt < r.Settings.MaxAttempts {
		// The visibility window already spaced this retry from the last attempt.
		c.ScheduleDispatch(ctx, next, 0)
	}
	return nil
}

func (r *Reconciler) inconclusive(ctx context.Context, c workercore.Core, m notify.Message, rec notify.Record, res sms.LookupResult, now time.Time) error {
	if !now.Before(rec.DispatchDeadline) {
		visible := c.AttemptEnd(rec).Add(r.Settings.Visibility)
		if now.Before(visible) && rec.Attempt >= 1 && !rec.AttemptedAt.IsZero() {
			// Too late to send, but a lookup after the window can still tell whether the
			// attempt went out; wait for it rather than close the record as unresolved.
			if m.Version == rec.Version {
				c.ScheduleReconcile(ctx, rec, visible.Sub(now))
			}
			c.Skip(workercore.OutcomeNotDue, rec)
			return nil
		}
		return c.Expire(ctx, rec, notify.ReasonExpiredUnresolved, now)
	}
	round := rec.ReconcileCount + 1
	// A "not found" awaiting confirmation stays: a lookup that failed in between does not
	// undo it.
	ch := notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonReconcileInconclusive, NotFoundAt: rec.NotFoundAt}
	if round >= r.Settings.MaxReconciles {
		// Enough rounds: stop scheduling. Due at the deadline, the sweeper brings the record
		// back for one last lookup, then it is settled or expired as unresolved.
		ch.NextActionAt = rec.DispatchDeadline
	} else {
		ch.NextActionAt = now.Add(c.Backoff(round))
	}
	next, ok, err := c.Settle(ctx, rec, ch, now)
	if !ok || round >= r.Settings.MaxReconciles {
		return err
	}
	c.ScheduleReconcile(ctx, next, next.NextActionAt.Sub(now))
	return nil
}
