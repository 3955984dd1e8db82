// Package sweeper is the sweeper function's handler: each scheduled run reads every shard of
// the due index and re-enqueues, expires or reclaims the overdue records, so that a lost queue
// message never leaves a record stuck. Its core is package workercore's.
package sweeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// SweepReserve is the time the sweeper keeps in hand before its Lambda deadline: it starts no
// new shard or record after that, so a run always ends cleanly. The next run carries on.
const SweepReserve = 5 * time.Second

// Sweeper is the scheduled safety net: it finds records whose next_action_at passed more than
// Settings.SweepGrace ago and moves them on, so a lost or never-sent queue message leaves
// nothing stuck. Every field but those Base marks optional is required.
type Sweeper struct {
	Store workercore.DueStore
	workercore.Base
}

// SweepReport says what one run did.
type SweepReport struct {
	// Seen counts the due records read.
	Seen int
	// Dispatched and Reconciles count the records re-enqueued on each queue.
	Dispatched int
	Reconciles int
	// Expired counts records expired; LeaseExpired those whose lease had run out.
	Expired      int
	LeaseExpired int
	// Skipped counts records left alone (lease still held, moved on since the index was read).
	Skipped int
	// Truncated counts shards that held more due records than SweepLimit.
	Truncated int
	// Unfinished is true when the time budget ran out before every shard was swept.
	Unfinished bool
}

func (s *Sweeper) core() workercore.Core { return s.Base.Core("sweeper", s.Store) }

// Handle is the Lambda handler for the EventBridge schedule. It returns an error when a shard
// could not be read or a record could not be moved, so the run counts as a Lambda error (and
// alarms); everything it did is idempotent, so the next run simply carries on.
func (s *Sweeper) Handle(ctx context.Context, _ events.EventBridgeEvent) error {
	_, err := s.Sweep(ctx)
	return err
}

// Sweep reads every shard of the due index, 0 to tables.DueShards-1, for records overdue by
// more than SweepGrace (at most SweepLimit per shard), and for each:
//
//	accepted / retry_scheduled  expired / EXPIRED_BEFORE_DISPATCH when less than MinValidity
//	                            is left before the deadline; else a dispatch message
//	dispatching                 lease run out: dispatch_unknown / LEASE_EXPIRED and a
//	                            reconcile message after the visibility window; lease held:
//	                            left alone
//	dispatch_unknown            a reconcile message now (reconciliation decides, including
//	                            expiry: an unknown outcome is never expired without a lookup)
//
// A re-enqueue first moves the record's next_action_at forward by Settings.RequeueAfter in one
// conditional write (notify.Store.Reschedule) and sends the message only when it won that
// write, so a record that stays overdue through several sweeps gets one message, not one per
// sweep; if the message is lost again, the record is due again after RequeueAfter.
//
// The due index is eventually consistent, so a record may have moved on since it was read:
// every write is conditioned on the version read, and a lost condition is skipped. A
// duplicate queue message is harmless to the workers. When ctx has a deadline, the sweep
// stops SweepReserve before it. Every run writes MetricOverdue for each state that can be due.
func (s *Sweeper) Sweep(ctx context.Context) (SweepReport, error) {
	c := s.core()
	var (
		rep  SweepReport
		errs []error
		// Every state that can be due, so each run reports a zero as well: a missing gauge
		// means the sweeper did not run.
		overdue = map[notify.State]int{
			notify.StateAccepted: 0, notify.StateRetryScheduled: 0,
			notify.StateDispatching: 0, notify.StateDispatchUnknown: 0,
		}
	)
	outOfTime := func() bool {
		dl, ok := ctx.Deadline()
		return ok && time.Until(dl) < SweepReserve || ctx.Err() != nil
	}
	for shard := range tables.DueShards {
		if outOfTime() {
			rep.Unfinished = true
			break
		}
		now := s.Clock.Now()
		recs, err := s.Store.QueryDue(ctx, shard, now.Add(-s.Settings.SweepGrace), s.Settings.SweepLimit)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweeper.query shard %d: %w", shard, err))
			continue
		}
		if len(recs) >= s.Settings.SweepLimit {
			rep.Truncated++
		}
		for _, rec := range recs {
			if outOfTime() {
				rep.Unfinished = true
				break
			}
			rep.Seen++
			if _, ok := overdue[rec.State]; ok {
				overdue[rec.State]++
			}
			if err := s.sweepOne(ctx, c, rec, &rep); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.report(c, rep, overdue)
	return rep, errors.Join(errs...)
}

// report logs one run and writes its metrics: MetricSwept per action taken, and the
// MetricOverdue gauge for every state that can be due, zeros included.
func (s *Sweeper) report(c workercore.Core, rep SweepReport, overdue map[notify.State]int) {
	c.Logger().Info("sweep done", "seen", rep.Seen, "dispatched", rep.Dispatched, "reconciles", rep.Reconciles,
		"expired", rep.Expired, "lease_expired", rep.LeaseExpired, "skipped", rep.Skipped,
		"truncated_shards", rep.Truncated, "unfinished", rep.Unfinished)
	for action, n := range map[string]int{
		"dispatch": rep.Dispatched, "reconcile": rep.Reconciles, "expire": rep.Expired,
		"lease_expired": rep.LeaseExpired, "skip": rep.Skipped,
	} {
		if n > 0 {
			s.Metrics.Emit(map[string]string{"Action": action}, obs.Metric{Name: workercore.MetricSwept, Unit: obs.UnitCount, Value: float64(n)})
		}
	}
	for state, n := range overdue {
		s.Metrics.Emit(map[string]string{workercore.DimState: string(state)}, obs.Metric{Name: workercore.MetricOverdue, Unit: obs.UnitCount, Value: float64(n)})
	}
}

func (s *Sweeper) sweepOne(ctx context.Context, c workercore.Core, rec notify.Record, rep *SweepReport) error {
	now := s.Clock.Now()
	switch rec.State {
	case notify.StateAccepted, notify.StateRetryScheduled:
		if c.TooLate(rec, now) {
			_, ok, err := c.Settle(ctx, rec, notify.Change{To: notify.StateExpired, Reason: notify.ReasonExpiredBeforeDispatch}, now)
			if ok {
				rep.Expired++
			} else {
				rep.Skipped++
			}
			return err
		}
		if rec.Attempt >= s.Settings.MaxAttempts {
			// Waiting for its deadline with no attempt left (see Dispatcher.attempt).
			rep.Skipped++
			return nil
		}
		next, ok, err := c.Requeue(ctx, rec, now, s.Settings.RequeueAfter)
		if !ok {
			rep.Skipped++
			return err
		}
		c.ScheduleDispatch(ctx, next, 0)
		rep.Dispatched++
	case notify.StateDispatching:
		if now.Before(rec.LeaseUntil) {
			rep.Skipped++
			return nil
		}
		ok, err := c.LeaseExpired(ctx, rec, now)
		if !ok {
			rep.Skipped++
			return err
		}
		rep.LeaseExpired++
	case notify.StateDispatchUnknown:
		next, ok, err := c.Requeue(ctx, rec, now, s.Settings.RequeueAfter)
		if !ok {
			rep.Skipped++
			return err
		}
		c.ScheduleReconcile(ctx, next, 0)
		rep.Reconciles++
	default:
		// Sent or terminal: the index had not caught up yet.
		rep.Skipped++
	}
	return nil
}
