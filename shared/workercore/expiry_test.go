package workercore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/endusersms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// TestNoProviderCallAtOrAfterTheDeadline moves the fake clock around the dispatch deadline and
// checks that the provider is called only while at least MinValidity is left.
func TestNoProviderCallAtOrAfterTheDeadline(t *testing.T) {
	minValidity := testSettings().MinValidity
	tests := []struct {
		name   string
		before time.Duration // how long before the deadline the message is handled
		sends  bool
	}{
		{"a minute before", time.Minute, true},
		{"exactly MinValidity before", minValidity, false},
		{"just over MinValidity before", minValidity + time.Millisecond, true},
		{"half of MinValidity before", minValidity / 2, false},
		{"at the deadline", 0, false},
		{"after the deadline", -time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			req := request("k", 10*time.Minute)
			rec := f.admit(t, req)
			f.clock.Set(deadlineOf(req).Add(-tc.before))
			f.dispatch(t, notify.MessageOf(rec))
			got := f.get(t, "k")
			if tc.sends {
				if f.sender.Calls() != 1 || got.State != notify.StateSent {
					t.Fatalf("%d sends, state %s", f.sender.Calls(), got.State)
				}
				if v := f.sender.Requests()[0].ValidityPeriod; v < time.Second || v > tc.before {
					t.Errorf("validity %s with %s left", v, tc.before)
				}
				return
			}
			if f.sender.Calls() != 0 {
				t.Fatalf("provider called %s before the deadline", tc.before)
			}
			if diff := cmp.Diff(state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}, stateOf(got)); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProviderMinimumValidityExpiresInsteadOfLeasing wires the settings for AWS End User
// Messaging SMS, whose minimum TimeToLive is 5 s, and a sender that refuses a shorter validity
// the way its adapter does. With 3 s left the record expires before dispatch: no lease, no
// attempt spent, no send. With 6 s left it is sent with at least the minimum.
func TestProviderMinimumValidityExpiresInsteadOfLeasing(t *testing.T) {
	tests := []struct {
		name string
		left time.Duration
		want state
	}{
		{"3s left", 3 * time.Second, state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}},
		{"6s left", 6 * time.Second, state{notify.StateSent, notify.ReasonProviderAccepted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.settings = workercore.SettingsFromConfig(config.Config{Policy: notify.DefaultPolicy()},
				provider.Config{Kind: provider.EndUserSMS, Timeout: 5 * time.Second, Visibility: 5 * time.Minute})
			f.build(t)
			f.sender.OnSend = func(_ context.Context, n int, req sms.SendRequest) sms.Outcome {
				if _, err := sms.WholeSeconds(req.ValidityPeriod, endusersms.MinTTLSeconds, endusersms.MaxTTLSeconds); err != nil {
					return sms.TooShort(err)
				}
				return sms.Accepted(fmt.Sprintf("aws-%d", n))
			}
			req := request("k", 10*time.Minute)
			rec := f.admit(t, req)
			f.clock.Set(deadlineOf(req).Add(-tc.left))
			f.dispatch(t, notify.MessageOf(rec))

			got := f.get(t, "k")
			if diff := cmp.Diff(tc.want, stateOf(got)); diff != "" {
				t.Fatalf("state (-want +got):\n%s", diff)
			}
			// WorkerExpirations, with no dimension (the delivery page's set): 1 for the expiry, a
			// zero for the acceptance.
			want := 0.0
			if tc.want.State == notify.StateExpired {
				want = 1
			}
			if ls := withMetric(parseEMF(t, f.metrics.String()), workercore.MetricExpirations); len(ls) != 1 || ls[0].values[workercore.MetricExpirations] != want || !slices.ContainsFunc(ls[0].sets, func(s []string) bool { return len(s) == 0 }) {
				t.Errorf("WorkerExpirations lines %+v, want one of %g with the no-dimension set", ls, want)
			}
			if tc.want.State == notify.StateExpired {
				if f.sender.Calls() != 0 || got.Attempt != 0 || got.Version != rec.Version+1 {
					t.Errorf("%d sends, attempt %d, version %d: want expired straight from v%d, never leased",
						f.sender.Calls(), got.Attempt, got.Version, rec.Version)
				}
				return
			}
			if reqs := f.sender.Requests(); len(reqs) != 1 || reqs[0].ValidityPeriod < endusersms.MinValidity {
				t.Errorf("sends %v, want one with at least %s validity", reqs, endusersms.MinValidity)
			}
		})
	}
}

// slowOpener is an Opener that "takes" a while: the clock moves on while it unseals, as it
// does during a KMS call.
type slowOpener struct {
	notifytest.Sealer
	clock *notifytest.Clock
	takes time.Duration
}

func (o slowOpener) Open(ctx context.Context, key string, sealed []byte) (notify.Secret, error) {
	o.clock.Advance(o.takes)
	return o.Sealer.Open(ctx, key, sealed)
}

// TestLeaseTakesTheTimeAfterUnsealing: the lease is stamped with, and timed from, the clock
// after unsealing, not the time the message was picked up; and a deadline crossed while
// unsealing expires the record instead of leasing it.
func TestLeaseTakesTheTimeAfterUnsealing(t *testing.T) {
	tests := []struct {
		name   string
		before time.Duration // how long before the deadline the message is picked up
		takes  time.Duration // how long unsealing takes
		want   state
	}{
		{"plenty of time", time.Minute, 4 * time.Second, state{notify.StateSent, notify.ReasonProviderAccepted}},
		{"deadline crossed while unsealing", 2 * time.Second, 3 * time.Second, state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}},
		{"under MinValidity left after unsealing", 10 * time.Second, 9*time.Second + 500*time.Millisecond, state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.d.Opener = slowOpener{clock: f.clock, takes: tc.takes}
			req := request("k", 10*time.Minute)
			deadline := deadlineOf(req)
			rec := f.admit(t, req)
			picked := deadline.Add(-tc.before)
			f.clock.Set(picked)
			var lease notify.Record
			f.sender.OnSend = func(_ context.Context, n int, _ sms.SendRequest) sms.Outcome {
				lease = f.get(t, "k")
				return sms.Accepted(fmt.Sprintf("m-%d", n))
			}
			f.dispatch(t, notify.MessageOf(rec))

			got := f.get(t, "k")
			if diff := cmp.Diff(tc.want, stateOf(got)); diff != "" {
				t.Fatalf("state (-want +got):\n%s", diff)
			}
			// WorkerExpirations, with no dimension (the delivery page's set): 1 for the expiry, a
			// zero for the acceptance.
			want := 0.0
			if tc.want.State == notify.StateExpired {
				want = 1
			}
			if ls := withMetric(parseEMF(t, f.metrics.String()), workercore.MetricExpirations); len(ls) != 1 || ls[0].values[workercore.MetricExpirations] != want || !slices.ContainsFunc(ls[0].sets, func(s []string) bool { return len(s) == 0 }) {
				t.Errorf("WorkerExpirations lines %+v, want one of %g with the no-dimension set", ls, want)
			}
			if tc.want.State == notify.StateExpired {
				if f.sender.Calls() != 0 || got.Attempt != 0 || got.Version != rec.Version+1 {
					t.Errorf("%d sends, attempt %d, version %d: want expired straight from v%d, never leased",
						f.sender.Calls(), got.Attempt, got.Version, rec.Version)
				}
				return
			}
			unsealed := picked.Add(tc.takes)
			if lease.State != notify.StateDispatching || !lease.AttemptedAt.Equal(unsealed) || !lease.UpdatedAt.Equal(unsealed) ||
				!lease.LeaseUntil.Equal(unsealed.Add(f.settings.Lease)) {
				t.Errorf("lease %s attempted_at %s updated_at %s lease_until %s; want taken at %s (picked up at %s)",
					lease.State, lease.AttemptedAt, lease.UpdatedAt, lease.LeaseUntil, unsealed, picked)
			}
		})
	}
}

// slowLeaseStore makes the lease write "take" until after the deadline: the clock moves on
// inside Transition, after the store accepted the lease (whose time was still before the
// deadline). With conflict set, the write is refused instead, as DynamoDB would refuse it if
// its condition on dispatch_deadline were evaluated after the deadline.
type slowLeaseStore struct {
	*workercoretest.DueStore
	clock    *notifytest.Clock
	to       time.Time
	conflict bool
}

func (s *slowLeaseStore) Transition(ctx context.Context, prev, next notify.Record) error {
	if next.State != notify.StateDispatching {
		return s.DueStore.Transition(ctx, prev, next)
	}
	s.clock.Set(s.to)
	if s.conflict {
		return notify.ErrConflict
	}
	return s.DueStore.Transition(ctx, prev, next)
}

// TestLeaseTakenJustBeforeTheDeadline: a worker takes the lease just before the deadline but
// the write returns after it. The worker must not call the provider. The lease runs out, the
// sweeper hands the record to reconciliation, which finds nothing and expires it as never
// dispatched. The provider is never called.
func TestLeaseTakenJustBeforeTheDeadline(t *testing.T) {
	for _, overshoot := range []time.Duration{0, time.Millisecond, 3 * time.Second} {
		t.Run("lease write returns "+overshoot.String()+" after the deadline", func(t *testing.T) {
			f := newFixture(t)
			req := request("k", 10*time.Minute)
			deadline := deadlineOf(req)
			rec := f.admit(t, req)
			f.d.Store = &slowLeaseStore{DueStore: f.store, clock: f.clock, to: deadline.Add(overshoot)}
			f.clock.Set(deadline.Add(-2 * time.Second))
			f.dispatch(t, notify.MessageOf(rec))

			leased := f.get(t, "k")
			if f.sender.Calls() != 0 {
				t.Fatalf("provider called after the deadline")
			}
			if leased.State != notify.StateDispatching || leased.Attempt != 1 {
				t.Fatalf("record %s attempt %d, want the lease left to run out", leased.State, leased.Attempt)
			}

			f.lookup.Answers = []workercoretest.Answer{{Result: sms.LookupResult{Status: sms.LookupNotFound}}}
			f.clock.Set(sweepableAt(leased).Add(f.settings.SweepGrace))
			f.sweep(t)
			f.drain(t, 5)
			f.clock.Advance(time.Hour)
			f.sweep(t)
			f.drain(t, 5)
			got := f.get(t, "k")
			if diff := cmp.Diff(state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}, stateOf(got)); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if f.sender.Calls() != 0 {
				t.Errorf("provider called %d times", f.sender.Calls())
			}
		})
	}
}

// TestLeaseRefusedAtTheDeadline: the lease write is refused because the deadline passed while
// it was in flight. The worker re-reads and expires the record.
func TestLeaseRefusedAtTheDeadline(t *testing.T) {
	f := newFixture(t)
	req := request("k", 10*time.Minute)
	deadline := deadlineOf(req)
	rec := f.admit(t, req)
	f.d.Store = &slowLeaseStore{DueStore: f.store, clock: f.clock, to: deadline, conflict: true}
	f.clock.Set(deadline.Add(-2 * time.Second))
	f.dispatch(t, notify.MessageOf(rec))
	if f.sender.Calls() != 0 {
		t.Fatal("provider called")
	}
	if diff := cmp.Diff(state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}, stateOf(f.get(t, "k"))); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestRetryNeverSendsLate: a throttled attempt asks for a wait longer than the time left. The
// retry is capped at the deadline, and then expires rather than sends.
func TestRetryNeverSendsLate(t *testing.T) {
	f := newFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.NotAccepted(sms.DetailThrottled, time.Hour, nil), sms.Accepted("late")}
	req := request("k", 10*time.Minute)
	rec := f.admit(t, req)
	f.dispatch(t, notify.MessageOf(rec))
	retry := f.get(t, "k")
	if !retry.NextActionAt.Equal(deadlineOf(req)) {
		t.Errorf("next_action_at %s, want the deadline %s", retry.NextActionAt, deadlineOf(req))
	}
	f.drain(t, 5)
	if got := f.get(t, "k"); got.State != notify.StateExpired || f.sender.Calls() != 1 {
		t.Errorf("record %s after %d sends", got.State, f.sender.Calls())
	}
}
