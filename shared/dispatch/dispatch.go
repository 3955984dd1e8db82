// Package dispatch is the dispatch function's handler: Dispatcher takes each message of the
// dispatch queue, leases the record it names, sends it through the provider chain and records
// the classified outcome. What it shares with reconcile and the sweeper (reading and writing
// records through one conditional transition, the queues, the settings, the provider chain and
// its breaker) is package workercore, whose documentation tells the workers' story.
package dispatch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/invocation"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// Dispatcher is the dispatch worker. Build it with a struct literal; every field but those
// Base marks optional is required. It is safe for concurrent use once built.
type Dispatcher struct {
	Store    notify.Store
	Opener   notify.Opener
	Renderer *render.Renderer
	Sender   sms.Sender
	// Provider names the provider Sender talks to; it is recorded on the record with each
	// attempt, so reconciliation and the audit know who was asked.
	Provider string
	// Chain is the ordered provider chain (see Choose). Empty means a chain of one, Provider
	// with its Sender.
	Chain []workercore.Route
	// Health is the providers' circuit breaker; nil skips no provider.
	Health *workercore.Health
	// Conversions, when set, counts each send recorded here per prefix (the ConversionSends
	// metric counts it per country) and blocks a prefix whose conversion share is low (see
	// notify.Conversions.Sent). A failure there never fails the send.
	Conversions *notify.Conversions
	// Guard, when set, counts a record that reaches dispatch undecided (its creator failed or
	// died between the put and the count) before it is sent, and refuses it over the limits
	// (see notify.Decider). It is the intake's guard, on the same table. Nil: the guard is
	// off.
	Guard notify.Guard
	// Countries is intake's allow-list of countries and number types: a sealed number it
	// refuses is never sent (see allowed). The zero value allows every number.
	Countries notify.Countries
	workercore.Base
}

// chain returns d's provider chain.
func (d *Dispatcher) chain() []workercore.Route {
	if len(d.Chain) > 0 {
		return d.Chain
	}
	return []workercore.Route{{Name: d.Provider, Sender: d.Sender}}
}

func (d *Dispatcher) core() workercore.Core { return d.Base.Core("dispatch", d.Store) }

// Handle is the Lambda handler for the dispatch queue. Each failed record is reported in
// BatchItemFailures (the function's event source mapping sets ReportBatchItemFailures), so only
// it is retried; the error is always nil.
func (d *Dispatcher) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return d.core().HandleBatch(ctx, ev, d.Settings.Parallelism, d.Dispatch), nil
}

// Dispatch handles one dispatch message. A nil error means the message is done with and may
// be deleted; an error means it should be retried (a transient store or sealing failure).
//
// By the record's state:
//   - sent or terminal: acknowledged.
//   - dispatching with the lease still held: a duplicate; acknowledged. With the lease run
//     out and no outcome recorded: dispatch_unknown / LEASE_EXPIRED, and reconciliation.
//   - dispatch_unknown: reconciliation owns it; acknowledged.
//   - accepted or retry_scheduled: see attempt.
func (d *Dispatcher) Dispatch(ctx context.Context, m notify.Message) error {
	c := d.core()
	rec, ok, err := c.Load(ctx, m)
	if !ok {
		return err
	}
	now := d.Clock.Now()
	switch {
	case rec.State.SendingDone():
		c.Skip(workercore.OutcomeSettled, rec)
		return nil
	case rec.State == notify.StateDispatching:
		if now.Before(rec.LeaseUntil) {
			c.Skip(workercore.OutcomeLeaseHeld, rec)
			return nil
		}
		_, err := c.LeaseExpired(ctx, rec, now)
		return err
	case rec.State == notify.StateDispatchUnknown:
		c.Skip(workercore.OutcomeReconciling, rec)
		return nil
	case rec.State == notify.StateAccepted || rec.State == notify.StateRetryScheduled:
		return d.attempt(ctx, c, m, rec, now)
	}
	c.Skip(workercore.OutcomeSettled, rec)
	c.Logger().Error("record in an unknown state acknowledged", workercore.Attrs(rec)...)
	return nil
}

// attempt makes one provider attempt for an accepted or retry_scheduled record, unless it is
// too late (expired), not due yet (re-scheduled), or out of attempts (left for the deadline).
// Its steps: guard, unseal and render, lease, re-check the clock, call the provider, record.
func (d *Dispatcher) attempt(ctx context.Context, c workercore.Core, m notify.Message, rec notify.Record, now time.Time) error {
	if done, err := d.guard(ctx, c, m, rec, now); done {
		return err
	}
	if done, err := d.decide(ctx, c, rec); done {
		return err
	}
	secret, msg, ok, err := d.prepare(ctx, c, rec)
	if !ok {
		return err
	}
	choice := workercore.Choose(d.chain(), rec, d.Health, d.Clock.Now())
	leased, ok, err := d.lease(ctx, c, rec, choice.Route.Name)
	if !ok {
		return err
	}
	if !d.stillInTime(c, rec, leased) {
		return nil
	}
	d.countChoice(choice)
	ref, outcome := d.call(ctx, c, rec, leased, choice.Route, secret, msg)
	return d.record(ctx, c, leased, ref, outcome)
}

// countChoice counts a failover and the providers skipped for their cool-down.
func (d *Dispatcher) countChoice(ch workercore.Choice) {
	if ch.Failover {
		d.Metrics.Emit(map[string]string{workercore.DimProvider: ch.Route.Name}, obs.Metric{Name: workercore.MetricFailovers, Unit: obs.UnitCount, Value: 1})
	}
	for _, name := range ch.Skipped {
		d.Metrics.Emit(map[string]string{workercore.DimProvider: name}, obs.Metric{Name: workercore.MetricCoolDownSkips, Unit: obs.UnitCount, Value: 1})
	}
}

// guard decides whether rec may be attempted at now. done is true when it may not: the message
// is then done with (a nil error) or to be retried (an error).
func (d *Dispatcher) guard(ctx context.Context, c workercore.Core, m notify.Message, rec notify.Record, now time.Time) (done bool, err error) {
	if c.TooLate(rec, now) {
		return true, c.Expire(ctx, rec, notify.ReasonExpiredBeforeDispatch, now)
	}
	if rec.State == notify.StateRetryScheduled && !rec.Due(now) {
		// Early: the wait was longer than SQS allows, or this is a duplicate. Only the message
		// of the current version carries the schedule on, so duplicates do not multiply.
		if m.Version != rec.Version {
			c.Skip(workercore.OutcomeStale, rec)
			return true, nil
		}
		c.ScheduleDispatch(ctx, rec, rec.NextActionAt.Sub(now))
		c.Skip(workercore.OutcomeNotDue, rec)
		return true, nil
	}
	if rec.State == notify.StateRetryScheduled && rec.EarlyReceipt.Held() {
		// The provider answered "not accepted" and yet reported the attempt's delivery: it
		// did accept. No further attempt, on this provider or another; the record waits for
		// its deadline and expires, and the receipts table keeps the evidence.
		d.Metrics.Emit(map[string]string{workercore.DimProvider: rec.Provider}, obs.Metric{Name: workercore.MetricContradicted, Unit: obs.UnitCount, Value: 1})
		c.Skip(workercore.OutcomeReceiptHeld, rec)
		c.Logger().Error("a receipt contradicts the provider's \"not accepted\"; no further attempt", workercore.Attrs(rec)...)
		return true, nil
	}
	if rec.Attempt >= d.Settings.MaxAttempts {
		// Only a reconciliation that proved the last attempt was not accepted gets here; no
		// transition leads from retry_scheduled to failed, so the record waits for its deadline
		// (next_action_at) and expires then, without another send.
		c.Skip(workercore.OutcomeNoAttemptsLeft, rec)
		return true, nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d.Settings.ProviderTimeout+workercore.LeaseMargin {
		// Not enough of this invocation is left for a whole attempt: leave the record
		// untouched and let the message come back, rather than lease and be cut off mid-call.
		return true, fmt.Errorf("dispatch %s: %s left in this invocation: %w", rec.IdempotencyKey, time.Until(dl).Round(time.Millisecond), workercore.ErrNoTime)
	}
	return false, nil
}

// decide takes the guard's decision on rec when it is still undecided: the guard failed when
// its creator counted it, or the creator died between the put and its refusal (the count is
// idempotent per key: a key counted already counts nothing more). Nothing is sent uncounted. done is true when rec must not
// be attempted: refused or moved on meanwhile (acknowledged), or a guard or store failure (the
// message is retried).
func (d *Dispatcher) decide(ctx context.Context, c workercore.Core, rec notify.Record) (done bool, err error) {
	if d.Guard == nil || !rec.Undecided() {
		return false, nil
	}
	dc := notify.Decider{Guard: d.Guard, Conversions: d.Conversions, Store: d.Store, Clock: d.Clock,
		Actor: func(ctx context.Context) notify.Actor { return invocation.Of(ctx, "dispatch") }}
	decided, own, err := dc.Decide(ctx, rec)
	var refused *notify.RefusedError
	switch {
	case errors.As(err, &refused):
		c.Skip(workercore.OutcomeRefused, decided)
		return true, nil
	case err != nil:
		return true, fmt.Errorf("dispatch.decide %s: %w", rec.IdempotencyKey, err)
	case !own && decided.State != notify.StateAccepted:
		// Moved on meanwhile (leased by another worker, cancelled): its writer owns it.
		c.Skip(workercore.OutcomeConflict, decided)
		return true, nil
	}
	// Counted and admitted (by this count, or decided meanwhile, which leaves the version): the
	// lease, next, ends the undecided state.
	return false, nil
}

// prepare unseals and renders rec's message. It runs before the lease is taken, so a message
// that can never be rendered costs no attempt and leaves no lease behind. ok is false when
// there is nothing to send: the error is then transient (retry) or nil (unrenderable, done).
func (d *Dispatcher) prepare(ctx context.Context, c workercore.Core, rec notify.Record) (notify.Secret, render.Message, bool, error) {
	secret, err := d.Opener.Open(ctx, rec.IdempotencyKey, rec.Sealed)
	if err != nil {
		return notify.Secret{}, render.Message{}, false, fmt.Errorf("dispatch.open %s: %w", rec.IdempotencyKey, err)
	}
	secret, ok, err := d.allowed(ctx, c, rec, secret)
	if !ok {
		return notify.Secret{}, render.Message{}, false, err
	}
	msg, err := d.Renderer.Render(rec.Purpose, secret.Locale, secret.Params)
	if err != nil {
		// Permanent: rendering is deterministic. Nothing is sent; the sweeper brings the record
		// back until its deadline, when it expires with EXPIRED_BEFORE_DISPATCH. Intake should
		// refuse such a request up front (render.Renderer.Check).
		c.Skip(workercore.OutcomeUnrenderable, rec)
		c.Logger().Error("message cannot be rendered; nothing sent", append(workercore.Attrs(rec), "error", err)...)
		return notify.Secret{}, render.Message{}, false, nil
	}
	return secret, msg, true, nil
}

// allowed re-checks the sealed number against the allow-list before any send: a record in the
// table is not proof that intake admitted it (anyone allowed to write the table and seal could
// have). A refused number moves rec to refused / REFUSED_DESTINATION_NOT_ALLOWED, audited like
// every transition, and ok is false. An allowed one is returned in its canonical form, the
// only one the provider is sent.
func (d *Dispatcher) allowed(ctx context.Context, c workercore.Core, rec notify.Record, secret notify.Secret) (notify.Secret, bool, error) {
	number, reason := d.Countries.Refusal(secret.To)
	if reason == "" {
		secret.To = number
		return secret, true, nil
	}
	c.Logger().Error("sealed number outside the allow-list; refused, nothing sent", append(workercore.Attrs(rec), "refusal", string(reason))...)
	_, _, err := c.Settle(ctx, rec, notify.Change{To: notify.StateRefused, Reason: notify.ReasonRefusedDestinationNotAllowed}, d.Clock.Now())
	return notify.Secret{}, false, err
}

// lease takes rec's lease for this attempt. Unsealing (a KMS call) and rendering take time:
// the lease is conditioned on, stamped with and timed from the clock as it is now, and a
// deadline crossed meanwhile expires the record instead. ok is false when no lease was taken.
func (d *Dispatcher) lease(ctx context.Context, c workercore.Core, rec notify.Record, provider string) (notify.Record, bool, error) {
	now := d.Clock.Now()
	if c.TooLate(rec, now) {
		return notify.Record{}, false, c.Expire(ctx, rec, notify.ReasonExpiredBeforeDispatch, now)
	}
	// 80 random bits tell this lease from any other of the record's, in 16 bytes of it.
	leased, err := c.Transition(ctx, rec, notify.Change{
		To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired,
		LeaseUntil: now.Add(d.Settings.Lease), LeaseToken: rand.Text()[:16], Provider: provider,
	}, now)
	if errors.Is(err, notify.ErrConflict) {
		return notify.Record{}, false, d.lostLease(ctx, c, rec)
	}
	if err != nil {
		return notify.Record{}, false, err
	}
	return leased, true, nil
}

// stillInTime re-checks the clock after the lease write, which may itself have taken until the
// deadline: with less than MinValidity left the provider is not called. The lease is left to
// run out; the sweeper then marks the record dispatch_unknown / LEASE_EXPIRED and
// reconciliation, which finds nothing, settles it as expired.
func (d *Dispatcher) stillInTime(c workercore.Core, rec, leased notify.Record) bool {
	if rec.DispatchDeadline.Sub(d.Clock.Now()) < d.Settings.MinValidity {
		c.Skip(workercore.OutcomeDeadlineLeased, leased)
		c.Logger().Warn("deadline reached after taking the lease; provider not called", workercore.Attrs(leased)...)
		return false
	}
	return true
}

// call sends the leased attempt to the provider and returns its reference and classified
// outcome. The provider may accept at any moment until the call ends, and counts the validity
// period from then. So the call ends MinValidity before the deadline at the latest, and the
// validity period runs from the call's end to the deadline: nothing is accepted at or after
// the deadline, and nothing accepted stays valid past it.
func (d *Dispatcher) call(ctx context.Context, c workercore.Core, rec, leased notify.Record, route workercore.Route, secret notify.Secret, msg render.Message) (string, sms.Outcome) {
	ref := sms.AttemptRef(leased.NotificationID, leased.Attempt)
	callEnd := c.AttemptEnd(leased)
	if latest := rec.DispatchDeadline.Add(-d.Settings.MinValidity); latest.Before(callEnd) {
		callEnd = latest
	}
	callCtx, cancel := context.WithDeadline(ctx, callEnd)
	started := time.Now()
	outcome := route.Sender.Send(callCtx, sms.SendRequest{
		To: secret.To, Body: msg.Body, AttemptRef: ref,
		// Rounded down to whole seconds: the carrier must drop the message no later than the
		// dispatch deadline.
		ValidityPeriod: rec.DispatchDeadline.Sub(callEnd).Truncate(time.Second),
	}).Normalized()
	cancel()
	if d.Health.Observe(route.Name, outcome, d.Clock.Now()) {
		// Also under Function alone: one alarm covers every provider of the chain.
		d.Metrics.EmitRollup(map[string]string{workercore.DimProvider: route.Name}, [][]string{{}}, obs.Metric{Name: workercore.MetricCoolDowns, Unit: obs.UnitCount, Value: 1})
		c.Logger().Warn("provider cooling down after repeated \"not accepted\" answers", "provider", route.Name)
	} else {
		// A zero under Function alone where the breaker was judged: the cool-down alarm's
		// quiet then means "no cool-down", not "no data".
		d.Metrics.Emit(nil, obs.Metric{Name: workercore.MetricCoolDowns, Unit: obs.UnitCount, Value: 0})
	}
	// Also under Function and Provider alone: the dashboard reads p99 over every class.
	d.Metrics.EmitRollup(map[string]string{workercore.DimProvider: route.Name, "Class": string(outcome.Class), "Detail": string(outcome.Detail)},
		[][]string{{workercore.DimProvider}},
		obs.Metric{Name: workercore.MetricProviderCalls, Unit: obs.UnitCount, Value: 1},
		obs.Metric{Name: workercore.MetricProviderLatency, Unit: obs.UnitMilliseconds, Value: float64(time.Since(started).Microseconds()) / 1000})
	return ref, outcome
}

// lostLease handles a lease write that lost: the record moved on, or the deadline passed
// between the check and the write. It re-reads the record and expires it if it is still
// leasable but too late; anything else belongs to whoever won.
func (d *Dispatcher) lostLease(ctx context.Context, c workercore.Core, rec notify.Record) error {
	cur, err := d.Store.Get(ctx, rec.IdempotencyKey)
	if err != nil {
		return fmt.Errorf("dispatch.reread %s: %w", rec.IdempotencyKey, err)
	}
	now := d.Clock.Now()
	leasable := cur.State == notify.StateAccepted || cur.State == notify.StateRetryScheduled
	if leasable && cur.NotificationID == rec.NotificationID && c.TooLate(cur, now) {
		return c.Expire(ctx, cur, notify.ReasonExpiredBeforeDispatch, now)
	}
	c.Skip(workercore.OutcomeConflict, cur)
	return nil
}

// next returns the change that records outcome o of leased's attempt at now (see record).
func (d *Dispatcher) next(c workercore.Core, leased notify.Record, o sms.Outcome, now time.Time) notify.Change {
	ch := notify.Change{To: o.State(), Reason: o.Reason()}
	chain := d.chain()
	pos := workercore.RouteIndex(chain, leased.Provider)
	// Another provider comes after this one in the chain: a failover needs no backoff, the
	// provider that failed is not asked again before the chain has come round.
	ahead := pos >= 0 && pos+1 < len(chain)
	if ch.To == notify.StateFailed && o.FailoverAllowed() && ahead {
		// Refused for a restriction of this provider's own: the next provider may serve it.
		ch.To = notify.StateRetryScheduled
	}
	switch ch.To {
	case notify.StateSent:
		ch.ProviderMessageID = o.MessageID
	case notify.StateRetryScheduled:
		if leased.Attempt >= d.Settings.MaxAttempts {
			ch = notify.Change{To: notify.StateFailed, Reason: notify.ReasonAttemptsExhausted}
			break
		}
		ch.NextActionAt = now.Add(max(o.RetryAfter, c.Backoff(leased.Attempt)))
		if ahead && o.FailoverAllowed() {
			ch.NextActionAt = now
		}
	case notify.StateDispatchUnknown:
		ch.NextActionAt = c.ReconcileAt(leased, now)
	}
	return ch
}

// record writes the classified outcome of the attempt and schedules what comes next:
//
//	accepted      → sent, with the provider's message ID
//	not accepted  → retry_scheduled after max(Retry-After, jittered backoff), through the
//	                dispatch queue, or at once when a provider comes after this one in the
//	                chain (the retry fails over to it); failed / ATTEMPTS_EXHAUSTED at the
//	                last attempt
//	rejected      → failed / PROVIDER_REJECTED; for a restriction of the provider's own
//	                (sms.DetailRestricted) with a provider after it in the chain,
//	                retry_scheduled / PROVIDER_REJECTED, due at once
//	unknown       → dispatch_unknown, reconciled once the provider's visibility window passed
//
// If the write loses or fails, the outcome is logged and the message acknowledged. That never
// leads to a blind re-send: the record is still dispatching under this attempt's lease, no
// other worker can lease it, and once the lease runs out the only way on is dispatch_unknown /
// LEASE_EXPIRED, where reconciliation looks the attempt up by its reference before any new send
// is authorised.
func (d *Dispatcher) record(ctx context.Context, c workercore.Core, leased notify.Record, ref string, o sms.Outcome) error {
	now := d.Clock.Now()
	ch := d.next(c, leased, o, now)
	log := c.Logger().With(append(workercore.Attrs(leased), "attempt_ref", ref, "outcome", o.String())...)
	if o.Err != nil {
		log = log.With("provider_error", o.Err)
	}
	next, err := c.Transition(ctx, leased, ch, now)
	if err != nil {
		d.Metrics.Emit(map[string]string{"Reason": string(ch.Reason)}, obs.Metric{Name: workercore.MetricUnrecorded, Unit: obs.UnitCount, Value: 1})
		log.Error("provider outcome not recorded; the lease will run out and reconciliation settles the attempt",
			"wanted_state", string(ch.To), "wanted_reason", string(ch.Reason), "error", err)
		return nil
	}
	log.Info("attempt recorded", "new_state", string(next.State), "reason", string(next.Reason))
	if next.State == notify.StateSent {
		d.countSent(ctx, next)
	}
	switch next.State {
	case notify.StateRetryScheduled:
		c.ScheduleDispatch(ctx, next, next.NextActionAt.Sub(now))
	case notify.StateDispatchUnknown:
		c.ScheduleReconcile(ctx, next, next.NextActionAt.Sub(now))
	}
	c.Count(workercore.OutcomeTransitioned)
	return nil
}

// countSent counts rec's send for the conversion guard, logging and counting what went wrong
// or was blocked: the prefix fingerprint and the country only.
func (d *Dispatcher) countSent(ctx context.Context, rec notify.Record) {
	if d.Conversions == nil {
		return
	}
	d.Metrics.Conversion(obs.MetricConversionSends, rec.Country)
	b, blocked, err := d.Conversions.Sent(ctx, rec)
	switch {
	case err != nil:
		d.Metrics.Emit(nil, obs.Metric{Name: obs.MetricConversionErrors, Unit: obs.UnitCount, Value: 1})
		d.Log.Warn("conversion counters not updated", "notification_id", rec.NotificationID, "error", err)
	case blocked:
		d.Metrics.Emit(nil, obs.Metric{Name: obs.MetricPrefixBlocks, Unit: obs.UnitCount, Value: 1})
		d.Log.Warn("prefix blocked for low conversion", "prefix_fp", b.PrefixFP, "country", rec.Country,
			"sent", b.Counts.Sent, "converted", b.Counts.Converted, "until", b.Until)
	default:
		// Judged and not blocked: a zero, so that the conversion alarm's quiet has data.
		d.Metrics.Emit(nil, obs.Metric{Name: obs.MetricPrefixBlocks, Unit: obs.UnitCount, Value: 0})
	}
}
