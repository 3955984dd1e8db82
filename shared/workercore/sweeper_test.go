package workercore_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/sweeper"
	"github.com/resetnotify/resetnotify/shared/tables"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

func TestSweeperActions(t *testing.T) {
	f := newFixture(t)
	// lost: accepted, its dispatch message lost; it is due SweepAfter after admission.
	f.admitKey(t, "lost")
	// late: accepted, its message lost too, and now past its deadline.
	f.admit(t, request("late", 3*time.Minute))
	// retry: retry_scheduled and due.
	f.admitKey(t, "retry")
	f.lease(t, "retry")
	retry := f.move(t, "retry", notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonProviderThrottled, NextActionAt: t0.Add(time.Second)})
	// dead: a worker died holding the lease.
	f.admitKey(t, "dead")
	f.lease(t, "dead")
	// unknown: dispatch_unknown and due.
	f.admitKey(t, "unknown")
	f.lease(t, "unknown")
	unknown := f.move(t, "unknown", notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: t0.Add(time.Minute)})
	// fresh: admitted later, not due yet.
	f.clock.Advance(2 * time.Minute)
	f.admitKey(t, "fresh")
	// held: leased with a long lease, which the clock has not passed.
	f.admit(t, request("held", time.Hour))
	f.settings.Lease = 10 * time.Minute
	f.lease(t, "held")
	f.settings = testSettings()
	// done: sent, nothing due.
	f.admitKey(t, "done")
	f.lease(t, "done")
	f.move(t, "done", notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "pm"})
	f.sched.Take()

	f.clock.Set(t0.Add(3 * time.Minute))
	rep := f.sweep(t)
	want := sweeper.SweepReport{Seen: 5, Dispatched: 2, Reconciles: 1, Expired: 1, LeaseExpired: 1}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	wantStates := map[string]state{
		"lost":    {notify.StateAccepted, notify.ReasonAdmitted},
		"late":    {notify.StateExpired, notify.ReasonExpiredBeforeDispatch},
		"retry":   {notify.StateRetryScheduled, notify.ReasonProviderThrottled},
		"dead":    {notify.StateDispatchUnknown, notify.ReasonLeaseExpired},
		"unknown": {notify.StateDispatchUnknown, notify.ReasonProviderTimeout},
		"fresh":   {notify.StateAccepted, notify.ReasonAdmitted},
		"held":    {notify.StateDispatching, notify.ReasonLeaseAcquired},
		"done":    {notify.StateSent, notify.ReasonProviderAccepted},
	}
	for key, w := range wantStates {
		if diff := cmp.Diff(w, stateOf(f.get(t, key))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", key, diff)
		}
	}
	var got []string
	for _, s := range f.sched.Take() {
		got = append(got, fmt.Sprintf("%s %s v%d %s", s.Queue, s.Message.IdempotencyKey, s.Message.Version, s.Delay))
	}
	sort.Strings(got)
	deadVersion := f.get(t, "dead").Version
	wantSched := []string{
		"dispatch lost v1 0s",
		"dispatch retry v" + fmt.Sprint(retry.Version) + " 0s",
		// The dead worker's attempt could be written until attempted_at + provider timeout,
		// long past; the lookup waits the visibility window from now.
		"reconcile dead v" + fmt.Sprint(deadVersion) + " " + f.settings.Visibility.String(),
		"reconcile unknown v" + fmt.Sprint(unknown.Version) + " 0s",
	}
	sort.Strings(wantSched)
	if diff := cmp.Diff(wantSched, got); diff != "" {
		t.Errorf("scheduled (-want +got):\n%s", diff)
	}
	var shards []int
	for i := range tables.DueShards {
		shards = append(shards, i)
	}
	if diff := cmp.Diff(shards, f.store.Queried()); diff != "" {
		t.Errorf("shards queried (-want +got):\n%s", diff)
	}
}

func TestSweeperGrace(t *testing.T) {
	f := newFixture(t)
	f.admitKey(t, "k")
	leased := f.lease(t, "k")
	f.clock.Set(sweepableAt(leased).Add(f.settings.SweepGrace - time.Millisecond))
	if rep := f.sweep(t); rep.Seen != 0 {
		t.Errorf("acted within the grace: %+v", rep)
	}
	f.clock.Advance(time.Millisecond)
	if rep := f.sweep(t); rep.LeaseExpired != 1 {
		t.Errorf("report %+v", rep)
	}
}

func TestSweeperQueryErrorDoesNotStopOtherShards(t *testing.T) {
	f := newFixture(t)
	var keys []string
	for i := 0; len(keys) < 2; i++ {
		k := fmt.Sprintf("k%d", i)
		if len(keys) == 0 || tables.DueShard(k) != tables.DueShard(keys[0]) {
			keys = append(keys, k)
			f.admitKey(t, k)
		}
	}
	f.store.QueryErr = map[int]error{tables.DueShard(keys[0]): errors.New("throttled")}
	f.clock.Advance(5 * time.Minute)
	rep, err := f.s.Sweep(context.Background())
	if err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Errorf("error %v, want the shard's failure", err)
	}
	if rep.Dispatched != 1 {
		t.Errorf("report %+v, want the other shard swept", rep)
	}
	if err := f.s.Handle(context.Background(), events.EventBridgeEvent{}); err == nil {
		t.Error("Handle hid the failure")
	}
}

func TestSweeperLimitAndBudget(t *testing.T) {
	f := newFixture(t)
	f.settings.SweepLimit = 2
	f.build(t)
	for i := range 40 {
		f.admitKey(t, fmt.Sprintf("k%02d", i))
	}
	f.clock.Advance(5 * time.Minute)
	rep := f.sweep(t)
	if rep.Truncated == 0 || rep.Seen > 2*tables.DueShards {
		t.Errorf("report %+v, want at most %d per shard", rep, 2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sweeper.SweepReserve/2)
	defer cancel()
	rep, err := f.s.Sweep(ctx)
	if err != nil || !rep.Unfinished || rep.Seen != 0 {
		t.Errorf("with no time left: %+v, %v", rep, err)
	}
}

// TestSweeperRecoversLostMessages: every queue message is lost at every step. The sweeper
// alone carries each record to the end: sent, sent after a retry, settled by reconciliation,
// or, for a token that outlives its admission by less than the sweep delay, expired unsent.
func TestSweeperRecoversLostMessages(t *testing.T) {
	f := newFixture(t)
	f.sender.OnSend = func(_ context.Context, n int, req sms.SendRequest) sms.Outcome {
		switch {
		case strings.HasPrefix(req.AttemptRef, "n-unknown-a1"):
			return sms.Unknown(sms.DetailTimeout, context.DeadlineExceeded)
		case strings.HasPrefix(req.AttemptRef, "n-throttled-a1"):
			return sms.NotAccepted(sms.DetailThrottled, time.Minute, nil)
		}
		return sms.Accepted(fmt.Sprintf("m-%d", n))
	}
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.Found("m-u", sms.ReceiptNone, time.Time{})}}
	for _, k := range []string{"ok", "unknown", "throttled"} {
		f.admit(t, request(k, 30*time.Minute))
	}
	f.admit(t, request("short", 3*time.Minute))
	f.sched.Take() // intake's messages never arrive

	for range 30 {
		f.clock.Advance(time.Minute)
		f.sweep(t)
		for _, s := range f.sched.Take() {
			if s.Delay > 0 {
				continue // lost as well: only immediate sweeper messages get through
			}
			switch s.Queue {
			case notify.DispatchQueue:
				f.dispatch(t, s.Message)
			case notify.ReconcileQueue:
				f.reconcile(t, s.Message)
			}
		}
	}
	want := map[string]state{
		"ok":        {notify.StateSent, notify.ReasonProviderAccepted},
		"unknown":   {notify.StateSent, notify.ReasonReconciledAccepted},
		"throttled": {notify.StateSent, notify.ReasonProviderAccepted},
		"short":     {notify.StateExpired, notify.ReasonExpiredBeforeDispatch},
	}
	for k, w := range want {
		if diff := cmp.Diff(w, stateOf(f.get(t, k))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	if f.sender.Calls() != 4 {
		t.Errorf("%d sends, want 4 (one retry)", f.sender.Calls())
	}
}

// sweepableAt is when the sweeper may first find rec's lease run out: the due index holds rec
// at the next_action_at it had before the lease (the lease does not move the index's key), and
// the sweeper skips it while the lease is held.
func sweepableAt(rec notify.Record) time.Time {
	if rec.NextActionAt.After(rec.LeaseUntil) {
		return rec.NextActionAt
	}
	return rec.LeaseUntil
}
