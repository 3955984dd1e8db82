package notify_test

import (
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// TestLeaseTokenAndActor checks that a lease needs a token, that the token and the actor are
// carried by the transition that writes them, and that releasing the lease drops the token.
func TestLeaseTokenAndActor(t *testing.T) {
	r := admitted(t, t0, 10*time.Minute)
	now := t0.Add(time.Second)
	who := notify.Actor{Function: "dispatch", Version: "3", RequestID: "req-1"}
	if _, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute)}, now); !errors.Is(err, notify.ErrInvalidTransition) {
		t.Fatalf("lease without a token: %v, want ErrInvalidTransition", err)
	}
	lease, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "tok", Actor: who}, now)
	if err != nil {
		t.Fatal(err)
	}
	if lease.LeaseToken != "tok" || lease.Actor != who {
		t.Errorf("lease token %q actor %+v", lease.LeaseToken, lease.Actor)
	}
	sent, err := lease.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "m"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if sent.LeaseToken != "" || sent.Actor != (notify.Actor{}) {
		t.Errorf("after the lease: token %q actor %+v; each transition names its own actor", sent.LeaseToken, sent.Actor)
	}
}

// TestHeldReceipt checks which records hold a receipt to apply and what applying it means:
// the receipt's message ID goes onto the record with it, and one that names another provider
// or message than the attempt's is never applied.
func TestHeldReceipt(t *testing.T) {
	now := t0.Add(time.Second)
	lease, err := admitted(t, t0, 10*time.Minute).Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "tok", Provider: "sim"}, now)
	if err != nil {
		t.Fatal(err)
	}
	move := func(t *testing.T, r notify.Record, ch notify.Change) notify.Record {
		t.Helper()
		next, err := r.Apply(ch, now)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	delivered := notify.Receipt{State: notify.StateDelivered, Provider: "sim", MessageID: "m", At: now}
	undelivered := notify.Receipt{State: notify.StateUndelivered, Provider: "sim", MessageID: "m", At: now}
	oldShape := notify.Receipt{State: notify.StateDelivered}
	accepted := notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "m"}
	cases := []struct {
		name    string
		held    notify.Receipt
		then    notify.Change
		want    notify.Change
		wantOK  bool
		wantsIt notify.Receipt // what the record still holds after then
	}{
		{"delivered, then sent", delivered, accepted,
			notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered, Provider: "sim", ProviderMessageID: "m"}, true, delivered},
		{"undelivered, then sent", undelivered, accepted,
			notify.Change{To: notify.StateUndelivered, Reason: notify.ReasonReceiptFailed, Provider: "sim", ProviderMessageID: "m"}, true, undelivered},
		{"held before receipts kept their message ID, then sent", oldShape, accepted,
			notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered}, true, oldShape},
		{"another message, then sent: a mismatch, not applied", notify.Receipt{State: notify.StateDelivered, Provider: "sim", MessageID: "other"}, accepted,
			notify.Change{}, false, notify.Receipt{State: notify.StateDelivered, Provider: "sim", MessageID: "other"}},
		{"delivered, then unknown: left to reconciliation", delivered, notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout},
			notify.Change{}, false, delivered},
		{"delivered, then rejected: terminal drops it", delivered, notify.Change{To: notify.StateFailed, Reason: notify.ReasonProviderRejected},
			notify.Change{}, false, notify.Receipt{}},
		{"nothing held, then sent", notify.Receipt{}, accepted,
			notify.Change{}, false, notify.Receipt{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := lease
			r.EarlyReceipt = tc.held
			next := move(t, r, tc.then)
			if next.EarlyReceipt != tc.wantsIt {
				t.Errorf("holds %+v after %s, want %+v", next.EarlyReceipt, next.State, tc.wantsIt)
			}
			got, ok := next.HeldReceipt()
			if ok != tc.wantOK || got != tc.want {
				t.Fatalf("HeldReceipt = %+v %v, want %+v %v", got, ok, tc.want, tc.wantOK)
			}
			if mismatch := next.State == notify.StateSent && next.EarlyReceipt.Held() && !ok; next.HeldMismatch() != mismatch {
				t.Errorf("HeldMismatch = %v, want %v", next.HeldMismatch(), mismatch)
			}
			if ok {
				applied := move(t, next, got)
				if applied.EarlyReceipt.Held() || !applied.State.Terminal() || applied.ProviderMessageID != "m" {
					t.Errorf("applied: %s holding %+v, message ID %q", applied.State, applied.EarlyReceipt, applied.ProviderMessageID)
				}
			}
		})
	}
	// A new attempt drops a receipt held for the previous one.
	retry := lease
	retry.EarlyReceipt = delivered
	retry = move(t, retry, notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonProviderThrottled, NextActionAt: now})
	if next := move(t, retry, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "tok-2"}); next.EarlyReceipt.Held() {
		t.Errorf("attempt %d still holds the receipt of attempt 1", next.Attempt)
	}
}

// TestRequeueAndDue checks that a requeue moves next_action_at forward without passing a
// deadline still ahead, keeps the version, and makes the record due for the workers; and
// that any transition clears it.
func TestRequeueAndDue(t *testing.T) {
	r := admitted(t, t0, 10*time.Minute) // deadline 9 min after t0
	cases := []struct {
		name  string
		now   time.Time
		after time.Duration
		want  time.Time
	}{
		{"well before the deadline", t0.Add(3 * time.Minute), 2 * time.Minute, t0.Add(5 * time.Minute)},
		{"capped at the deadline", t0.Add(8 * time.Minute), 2 * time.Minute, r.DispatchDeadline},
		{"past the deadline: not capped", r.DispatchDeadline.Add(time.Minute), 2 * time.Minute, r.DispatchDeadline.Add(3 * time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := r.Requeue(tc.now, tc.after)
			if !next.NextActionAt.Equal(tc.want) || !next.RequeuedAt.Equal(tc.now) || next.Version != r.Version || next.State != r.State {
				t.Errorf("requeued: next %s at %s v%d %s; want next %s", next.NextActionAt, next.RequeuedAt, next.Version, next.State, tc.want)
			}
			if !next.Due(tc.now) {
				t.Error("a requeued record is not due")
			}
		})
	}
	if r.Due(t0) || !r.Due(r.NextActionAt) {
		t.Errorf("a fresh record is due at admission (%v) or not at its next_action_at (%v)", r.Due(t0), r.Due(r.NextActionAt))
	}
	requeued := r.Requeue(t0.Add(3*time.Minute), time.Minute)
	next, err := requeued.Apply(notify.Change{To: notify.StateExpired, Reason: notify.ReasonExpiredBeforeDispatch}, t0.Add(4*time.Minute))
	if err != nil || !next.RequeuedAt.IsZero() {
		t.Errorf("after a transition: requeued at %s, %v", next.RequeuedAt, err)
	}
}
