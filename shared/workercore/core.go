package workercore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/invocation"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// DueStore is a notify.Store that can also list the records due for the sweeper;
// *dynamostore.Store implements it.
type DueStore interface {
	notify.Store
	// QueryDue returns up to limit records of due-index shard whose next_action_at is at or
	// before now, earliest first.
	QueryDue(ctx context.Context, shard int, now time.Time, limit int) ([]notify.Record, error)
}

// Metric names and the Outcome dimension values of MetricMessages.
const (
	// MetricMessages counts queue messages and sweeper records by what became of them.
	MetricMessages = "Messages"
	// MetricProviderCalls counts sends by class and detail; MetricProviderLatency times them.
	MetricProviderCalls   = "ProviderCalls"
	MetricProviderLatency = "ProviderLatency"
	// MetricLookups counts reconciliation lookups by status.
	MetricLookups = "Lookups"
	// MetricScheduleFailures counts messages that could not be put on a queue; the sweeper
	// recovers each of them through next_action_at.
	MetricScheduleFailures = "ScheduleFailures"
	// MetricUnrecorded counts provider outcomes whose transition could not be written; the
	// lease runs out and reconciliation settles the attempt.
	MetricUnrecorded = "OutcomesNotRecorded"
	// MetricDoubleSend counts lookups that found more than one accepted message for one
	// attempt reference: evidence of a duplicate at the provider.
	MetricDoubleSend = "DoubleSendEvidence"
	// MetricExpirations counts the records a worker moved to expired, by Function and with no
	// dimension at all (every worker's together, which the delivery page reads); each provider
	// acceptance writes a zero.
	MetricExpirations = "WorkerExpirations"
	// MetricTimeToAcceptance is the time from a record's admission to the provider's acceptance
	// of its send (PROVIDER_ACCEPTED), by Function: the timeliness objective's SLI.
	MetricTimeToAcceptance = "TimeToAcceptance"
	// MetricFailovers counts attempts that went to another provider than the attempt before,
	// by the DimProvider they went to.
	MetricFailovers = "Failovers"
	// MetricCoolDowns counts the times a provider's breaker opened (Health); MetricCoolDownSkips
	// the attempts that passed a cooling-down provider over, by DimProvider.
	MetricCoolDowns     = "ProviderCoolDowns"
	MetricCoolDownSkips = "ProviderCoolDownSkips"
	// MetricContradicted counts retries refused because a receipt held on the record says
	// the provider accepted the attempt it had answered "not accepted" to.
	MetricContradicted = "ContradictedOutcomes"
	// MetricReceiptMismatch counts stored receipts for an attempt that name another provider
	// or message ID than the record: kept as evidence, never applied.
	MetricReceiptMismatch = "ReceiptMismatches"
	// MetricSwept counts the records one sweep acted on, by Action.
	MetricSwept = "SweptRecords"
	// MetricOverdue is a gauge written by every sweep, zeros included: the records it read
	// from the due index, by DimState, that were overdue by more than SweepGrace. For
	// dispatch_unknown it is the backlog of reconciliations that are late (a lost or failing
	// reconcile message); records still inside their visibility window are not counted. It is
	// a lower bound when a shard held more than SweepLimit records or the sweep ran out of
	// time, and it costs no read beyond the sweep's own.
	MetricOverdue = "OverdueRecords"

	// DimProvider names the provider on MetricProviderCalls, MetricProviderLatency and
	// MetricLookups. The provider metrics are also published under Function and DimProvider
	// alone, which the dashboard reads.
	DimProvider = "Provider"
	// DimState is the record state of MetricOverdue.
	DimState = "State"
)

// Outcome values of MetricMessages.
const (
	OutcomePoisonBody     = "poison_unparseable"
	OutcomePoisonKey      = "poison_unknown_key"
	OutcomePoisonMismatch = "poison_notification_mismatch"
	OutcomeStale          = "stale"
	OutcomeSettled        = "settled"
	OutcomeLeaseHeld      = "lease_held"
	OutcomeReconciling    = "reconciling"
	OutcomeNotUnknown     = "not_unknown"
	OutcomeNotDue         = "not_due"
	OutcomeConflict       = "conflict"
	OutcomeNoAttemptsLeft = "no_attempts_left"
	OutcomeReceiptHeld    = "receipt_contradicts_outcome"
	OutcomeDeadlineLeased = "deadline_after_lease"
	OutcomeUnrenderable   = "unrenderable"
	OutcomeTransitioned   = "transitioned"
	OutcomeScheduled      = "scheduled"
	OutcomeFailed         = "failed"
	// OutcomeRefused: dispatch found the record undecided (its creator never counted it),
	// counted it, and the guard refused it.
	OutcomeRefused = "refused"
)

var (
	// errPoison marks a message that can never be processed; it is acknowledged and counted.
	errPoison = errors.New("poison message")
	// ErrNoTime means the invocation has too little time left to start an attempt.
	ErrNoTime = errors.New("not enough time left for an attempt")
)

// ParseMessage decodes a queue body, as the dispatch and reconcile workers do. Anything but a
// JSON notify.Message with a valid key, a notification ID and a positive version is poison.
func ParseMessage(body string) (notify.Message, error) {
	var m notify.Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return notify.Message{}, fmt.Errorf("%w: not a JSON message", errPoison)
	}
	if !notify.ValidStoredKey(m.IdempotencyKey) || m.NotificationID == "" || m.Version < 1 {
		return notify.Message{}, fmt.Errorf("%w: missing key, notification ID or version", errPoison)
	}
	return m, nil
}

// Core is one worker's view of its Base for one call: the function it runs as and its store
// beside the shared dependencies. Its methods act through notify.Record.Apply and one
// conditional write.
type Core struct {
	function string
	store    notify.Store
	queue    notify.Queue
	clock    notify.Clock
	settings Settings
	log      *slog.Logger
	metrics  *obs.Metrics
	random   *locked
}

// Logger is the worker's logger, or one that discards.
func (c Core) Logger() *slog.Logger {
	if c.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.log
}

// Backoff returns the jittered wait after the nth failure.
func (c Core) Backoff(n int) time.Duration {
	return backoff(n, c.settings.BackoffBase, c.settings.BackoffMax, c.random.float)
}

// TooLate reports whether rec has less than MinValidity left before its dispatch deadline at
// now: no send could be useful, so it must not be leased.
func (c Core) TooLate(rec notify.Record, now time.Time) bool {
	return !now.Add(c.settings.MinValidity).Before(rec.DispatchDeadline)
}

// AttemptEnd is the latest time a request of rec's current attempt can have been written: the
// provider call's context ends at attempted_at + ProviderTimeout.
func (c Core) AttemptEnd(rec notify.Record) time.Time {
	return rec.AttemptedAt.Add(c.settings.ProviderTimeout)
}

// ReconcileAt is when a lookup of rec's current attempt can first prove "not found": the
// provider's visibility window after the attempt ended, and never earlier than now plus that
// window.
func (c Core) ReconcileAt(rec notify.Record, now time.Time) time.Time {
	end := c.AttemptEnd(rec)
	if now.After(end) {
		end = now
	}
	return end.Add(c.settings.Visibility)
}

// Attrs are the log attributes of a record; none of them is a secret.
func Attrs(rec notify.Record) []any {
	return []any{
		"idempotency_key", rec.IdempotencyKey, "notification_id", rec.NotificationID,
		"state", string(rec.State), "version", rec.Version, "attempt", rec.Attempt,
	}
}

// Count records what became of one message or record.
func (c Core) Count(outcome string) {
	c.metrics.Emit(map[string]string{"Outcome": outcome}, obs.Metric{Name: MetricMessages, Unit: obs.UnitCount, Value: 1})
}

// Skip acknowledges without acting, with a debug log and a count.
func (c Core) Skip(outcome string, rec notify.Record) {
	c.Count(outcome)
	c.Logger().Debug("acknowledged without action", append(Attrs(rec), "outcome", outcome)...)
}

// Load returns the record a message points at. ok is false for a poison message (unknown key,
// or a key that now holds another notification), which is counted and must be acknowledged;
// an error is transient and the message must be retried.
func (c Core) Load(ctx context.Context, m notify.Message) (notify.Record, bool, error) {
	rec, err := c.store.Get(ctx, m.IdempotencyKey)
	if errors.Is(err, notify.ErrNotFound) {
		c.Count(OutcomePoisonKey)
		c.Logger().Warn("message for an unknown key", "idempotency_key", m.IdempotencyKey, "notification_id", m.NotificationID, "version", m.Version)
		return notify.Record{}, false, nil
	}
	if err != nil {
		return notify.Record{}, false, fmt.Errorf("%s.get %s: %w", c.function, m.IdempotencyKey, err)
	}
	if rec.NotificationID != m.NotificationID {
		// A key whose record was purged and admitted again: the message is for the old one.
		c.Count(OutcomePoisonMismatch)
		c.Logger().Warn("message for another notification under the key", append(Attrs(rec), "message_notification_id", m.NotificationID)...)
		return notify.Record{}, false, nil
	}
	return rec, true, nil
}

// Transition applies ch to rec at now and writes it conditioned on rec's version, with this
// invocation as its actor. It returns an error wrapping notify.ErrConflict when another writer
// won. A final receipt that provider-events held on the record while it was dispatching is
// not a rival: the change is applied again over the record that holds it, and once the record
// is sent the receipt is applied too (sent → delivered or undelivered).
func (c Core) Transition(ctx context.Context, rec notify.Record, ch notify.Change, now time.Time) (notify.Record, error) {
	ch.Actor = invocation.Of(ctx, c.function)
	next, err := c.write(ctx, rec, ch, now)
	if cur, ok := notify.CurrentOf(err); ok && heldSince(rec, cur) {
		next, err = c.write(ctx, cur, ch, now)
	}
	if err != nil {
		return notify.Record{}, err
	}
	if next.State == notify.StateSent && next.HeldMismatch() {
		// The receipt held while dispatching names another provider or message than the one
		// the provider just accepted: evidence, never applied; the attempt's own receipt
		// settles the record when it comes.
		c.metrics.EmitRollup(map[string]string{DimProvider: next.EarlyReceipt.Provider}, [][]string{{}}, obs.Metric{Name: MetricReceiptMismatch, Unit: obs.UnitCount, Value: 1})
		c.Logger().Error("held receipt names another provider or message; not applied", append(Attrs(next), "receipt_provider", next.EarlyReceipt.Provider)...)
	}
	if held, ok := next.HeldReceipt(); ok {
		held.Actor = ch.Actor
		applied, err := c.write(ctx, next, held, now)
		if err != nil {
			// Still held on the record: provider-events' redelivery or a later read applies it.
			c.Logger().Warn("held receipt not applied yet", append(Attrs(next), "error", err)...)
			return next, nil
		}
		next = applied
	}
	return next, nil
}

// heldSince reports whether cur is rec with nothing changed but a receipt held since.
func heldSince(rec, cur notify.Record) bool {
	return cur.Version == rec.Version && cur.State == rec.State && cur.NotificationID == rec.NotificationID &&
		!rec.EarlyReceipt.Held() && cur.EarlyReceipt.Held()
}

// write is one Apply and one conditional Transition, logged and counted.
func (c Core) write(ctx context.Context, rec notify.Record, ch notify.Change, now time.Time) (notify.Record, error) {
	next, err := rec.Apply(ch, now)
	if err != nil {
		return notify.Record{}, fmt.Errorf("%s.apply %s: %w", c.function, rec.IdempotencyKey, err)
	}
	if err := c.store.Transition(ctx, rec, next); err != nil {
		return notify.Record{}, fmt.Errorf("%s.transition %s: %w", c.function, rec.IdempotencyKey, err)
	}
	c.metrics.Transition(string(next.State), string(next.Reason))
	if next.State == notify.StateExpired {
		// Also with no dimension at all: the delivery page reads the sum over dispatch, reconcile
		// and the sweeper without metric math (intake's EXPIRED_AT_ADMISSION is not counted).
		c.metrics.EmitRollup(nil, [][]string{{obs.NoDimensions}}, obs.Metric{Name: MetricExpirations, Unit: obs.UnitCount, Value: 1})
	}
	if next.Reason == notify.ReasonProviderAccepted {
		// A zero at each acceptance: the delivery page's and the dashboard's quiet then reads
		// "nothing expired", not "no data".
		c.metrics.EmitRollup(nil, [][]string{{obs.NoDimensions}}, obs.Metric{Name: MetricExpirations, Unit: obs.UnitCount, Value: 0})
	}
	if next.Reason == notify.ReasonProviderAccepted && !rec.CreatedAt.IsZero() {
		c.metrics.Emit(nil, obs.Metric{Name: MetricTimeToAcceptance, Unit: obs.UnitMilliseconds, Value: float64(now.Sub(rec.CreatedAt).Milliseconds())})
	}
	// The happy path's transitions (the lease, the provider's acceptance) are logged at debug
	// level: the audit trail records each one with its actor and request ID, and dispatch's
	// "attempt recorded" line says the same at info. Every other transition stays at info.
	level := slog.LevelInfo
	if next.Reason == notify.ReasonLeaseAcquired || next.Reason == notify.ReasonProviderAccepted {
		level = slog.LevelDebug
	}
	c.Logger().Log(ctx, level, "transition", append(Attrs(next), "from_state", string(rec.State), "reason", string(next.Reason))...)
	return next, nil
}

// Requeue moves rec's next_action_at forward by after in one conditional write and reports
// whether this call won it; only the winner sends the replacement queue message, so a record
// overdue through several sweeps gets one message, not one per sweep. A lost condition (the
// record moved on, or another sweep took it) is a skip; another error is returned.
func (c Core) Requeue(ctx context.Context, rec notify.Record, now time.Time, after time.Duration) (notify.Record, bool, error) {
	next := rec.Requeue(now, after)
	err := c.store.Reschedule(ctx, rec, next)
	if errors.Is(err, notify.ErrConflict) {
		c.Skip(OutcomeConflict, rec)
		return notify.Record{}, false, nil
	}
	if err != nil {
		return notify.Record{}, false, fmt.Errorf("%s.requeue %s: %w", c.function, rec.IdempotencyKey, err)
	}
	return next, true, nil
}

// Settle writes a transition whose loss to a concurrent writer is fine: the winner moved the
// record on, so the conflict is acknowledged. Other errors are returned for a retry.
func (c Core) Settle(ctx context.Context, rec notify.Record, ch notify.Change, now time.Time) (notify.Record, bool, error) {
	next, err := c.Transition(ctx, rec, ch, now)
	if errors.Is(err, notify.ErrConflict) {
		c.Skip(OutcomeConflict, rec)
		return notify.Record{}, false, nil
	}
	if err != nil {
		return notify.Record{}, false, err
	}
	return next, true, nil
}

// Expire moves an accepted, retry_scheduled or dispatch_unknown record to expired.
func (c Core) Expire(ctx context.Context, rec notify.Record, reason notify.Reason, now time.Time) error {
	_, _, err := c.Settle(ctx, rec, notify.Change{To: notify.StateExpired, Reason: reason}, now)
	return err
}

// LeaseExpired moves a dispatching record whose lease ran out with no outcome recorded (the
// worker died, or gave up after the deadline) to dispatch_unknown / LEASE_EXPIRED and hands it
// to reconciliation once the provider's visibility window has passed. The caller has checked
// that the lease ran out. It reports whether the transition was written.
func (c Core) LeaseExpired(ctx context.Context, rec notify.Record, now time.Time) (bool, error) {
	next, ok, err := c.Settle(ctx, rec, notify.Change{
		To: notify.StateDispatchUnknown, Reason: notify.ReasonLeaseExpired, NextActionAt: c.ReconcileAt(rec, now),
	}, now)
	if !ok {
		return false, err
	}
	c.ScheduleReconcile(ctx, next, next.NextActionAt.Sub(now))
	return true, nil
}

// ScheduleDispatch puts the record's current message on the dispatch queue. A failure is
// logged and counted but not returned: the record carries next_action_at, so the sweeper
// re-enqueues it, and retrying the queue message that led here would find the record moved on.
func (c Core) ScheduleDispatch(ctx context.Context, rec notify.Record, delay time.Duration) {
	c.schedule(ctx, notify.DispatchQueue, rec, delay)
}

// ScheduleReconcile puts the record's current message on the reconcile queue; failures are
// handled as in ScheduleDispatch.
func (c Core) ScheduleReconcile(ctx context.Context, rec notify.Record, delay time.Duration) {
	c.schedule(ctx, notify.ReconcileQueue, rec, delay)
}

// schedule puts the record's current message on queue after delay, within [0,
// notify.MaxQueueDelay]; a failure is logged and counted.
func (c Core) schedule(ctx context.Context, queue notify.QueueName, rec notify.Record, delay time.Duration) {
	delay = min(max(delay, 0), notify.MaxQueueDelay)
	if err := c.queue.Enqueue(ctx, queue, notify.MessageOf(rec), delay); err != nil {
		c.metrics.Emit(map[string]string{"Queue": string(queue)}, obs.Metric{Name: MetricScheduleFailures, Unit: obs.UnitCount, Value: 1})
		c.Logger().Error("could not schedule; the sweeper will pick the record up", append(Attrs(rec), "queue", string(queue), "error", err)...)
	}
}

// HandleBatch runs process for every record of an SQS batch, up to parallelism at a time, and
// reports the records to retry. A poison body is acknowledged and counted. It never fails the
// whole batch: each record succeeds or fails on its own.
func (c Core) HandleBatch(ctx context.Context, ev events.SQSEvent, parallelism int, process func(context.Context, notify.Message) error) events.SQSEventResponse {
	// One EMF line per distinct metric and dimensions per batch, not one per event
	// (obs.Metrics.Hold): the same samples, a tenth of the log bytes at a batch of 10.
	c.metrics.Hold()
	defer c.metrics.Flush()
	var (
		mu sync.Mutex
		// An empty list, never nil: a batch with no failures must answer
		// {"batchItemFailures": []}. AWS also accepts null, but a LocalStack-compatible
		// emulator's poller fails on it and redelivers the whole batch.
		resp = events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		wg   sync.WaitGroup
		sem  = make(chan struct{}, max(parallelism, 1))
	)
	fail := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	for _, r := range ev.Records {
		m, err := ParseMessage(r.Body)
		if err != nil {
			// Never log the body: it is not ours, and it might hold anything.
			c.Count(OutcomePoisonBody)
			c.Logger().Warn("unparseable message acknowledged", "message_id", r.MessageId, "error", err)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					c.Count(OutcomeFailed)
					c.Logger().Error("panic handling message", "message_id", r.MessageId, "idempotency_key", m.IdempotencyKey, "panic", fmt.Sprint(p))
					fail(r.MessageId)
				}
			}()
			if err := process(ctx, m); err != nil {
				c.Count(OutcomeFailed)
				c.Logger().Error("message will be retried", "message_id", r.MessageId, "idempotency_key", m.IdempotencyKey, "version", m.Version, "error", err)
				fail(r.MessageId)
			}
		}()
	}
	wg.Wait()
	return resp
}
