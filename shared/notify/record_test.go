package notify_test

import (
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

func admitted(t *testing.T, now time.Time, expiresIn time.Duration) notify.Record {
	t.Helper()
	p := notify.DefaultPolicy()
	req, err := notify.ParseRequest(body(func(m map[string]any) {
		m["expires_at"] = now.Add(expiresIn).Format(time.RFC3339Nano)
	}), "k", now, p)
	if err != nil {
		t.Fatal(err)
	}
	return notify.NewRecord(req, notify.Admission{NotificationID: "n1", Sealed: []byte("sealed"), DestinationFP: "fp"}, now, p)
}

func TestNewRecordDeadlineBoundary(t *testing.T) {
	margin := notify.DefaultPolicy().SafetyMargin
	tests := []struct {
		name      string
		expiresIn time.Duration
		want      notify.State
		reason    notify.Reason
	}{
		{"well before", 15 * time.Minute, notify.StateAccepted, notify.ReasonAdmitted},
		{"one ns before deadline", margin + time.Nanosecond, notify.StateAccepted, notify.ReasonAdmitted},
		{"at deadline", margin, notify.StateExpired, notify.ReasonExpiredAtAdmission},
		{"already expired", -time.Minute, notify.StateExpired, notify.ReasonExpiredAtAdmission},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := admitted(t, t0, tc.expiresIn)
			if r.State != tc.want || r.Reason != tc.reason {
				t.Fatalf("state %s/%s, want %s/%s", r.State, r.Reason, tc.want, tc.reason)
			}
			if r.Version != 1 || r.PolicyVersion == "" || r.SafetyMargin != margin {
				t.Errorf("version %d policy %q margin %s", r.Version, r.PolicyVersion, r.SafetyMargin)
			}
			if tc.want == notify.StateExpired {
				if r.Sealed != nil || !r.NextActionAt.IsZero() {
					t.Error("expired at admission keeps its sealed payload or a next action")
				}
				return
			}
			if r.NextActionAt.After(r.DispatchDeadline) || !r.NextActionAt.After(t0) {
				t.Errorf("next action %s outside (now, deadline %s]", r.NextActionAt, r.DispatchDeadline)
			}
			if !r.PurgeAt.Equal(r.ExpiresAt.Add(notify.DefaultPolicy().StatusGrace)) {
				t.Errorf("purge at %s", r.PurgeAt)
			}
		})
	}
}

func TestLeaseAtDeadlineRefused(t *testing.T) {
	r := admitted(t, t0, 10*time.Minute)
	for _, tc := range []struct {
		name string
		at   time.Time
		ok   bool
	}{
		{"just before", r.DispatchDeadline.Add(-time.Nanosecond), true},
		{"at", r.DispatchDeadline, false},
		{"after", r.DispatchDeadline.Add(time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: tc.at.Add(30 * time.Second)}, tc.at)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if next.Attempt != 1 || next.Version != 2 || !next.LeaseUntil.Equal(tc.at.Add(30*time.Second)) {
					t.Errorf("attempt %d version %d lease %s", next.Attempt, next.Version, next.LeaseUntil)
				}
				return
			}
			if !errors.Is(err, notify.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
		})
	}
}

func TestApplyLifecycle(t *testing.T) {
	r := admitted(t, t0, 10*time.Minute)
	now := t0.Add(time.Second)
	lease, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: now.Add(30 * time.Second)}, now)
	if err != nil {
		t.Fatal(err)
	}
	// The lease keeps the record's next_action_at (the due index's key does not move: two
	// index writes saved); the sweeper skips the record while the lease is held.
	if !lease.NextActionAt.Equal(r.NextActionAt) || lease.NextActionAt.IsZero() {
		t.Errorf("the lease moved next_action_at: %s, want %s as admitted", lease.NextActionAt, r.NextActionAt)
	}
	unknown, err := lease.Apply(notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !unknown.NextActionAt.Equal(r.DispatchDeadline) {
		t.Errorf("next action %s not capped at deadline %s", unknown.NextActionAt, r.DispatchDeadline)
	}
	if unknown.Sealed == nil || !unknown.LeaseUntil.IsZero() {
		t.Error("unknown lost its sealed payload or kept its lease")
	}
	again, err := unknown.Apply(notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonReconcileInconclusive}, now)
	if err != nil || again.ReconcileCount != 1 {
		t.Fatalf("inconclusive: %v, count %d", err, again.ReconcileCount)
	}
	sent, err := again.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonReconciledAccepted, ProviderMessageID: "m-1", Provider: "sim"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Sealed != nil || !sent.NextActionAt.IsZero() || sent.ProviderMessageID != "m-1" || sent.Version != 5 {
		t.Errorf("sent: sealed %v next %s msg %q version %d", sent.Sealed, sent.NextActionAt, sent.ProviderMessageID, sent.Version)
	}
	if _, err := sent.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: now.Add(time.Minute)}, now); !errors.Is(err, notify.ErrInvalidTransition) {
		t.Errorf("lease on a sent record: %v", err)
	}
	if _, err := sent.Cancel(now); !errors.Is(err, notify.ErrNotCancellable) {
		t.Errorf("cancel sent: %v", err)
	}
	done, err := sent.Apply(notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered}, now)
	if err != nil || !done.State.Terminal() {
		t.Fatalf("delivered: %v", err)
	}
}

func TestLeaseMustEndAfterNow(t *testing.T) {
	r := admitted(t, t0, 10*time.Minute)
	if _, err := r.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired}, t0); !errors.Is(err, notify.ErrInvalidTransition) {
		t.Errorf("lease without an end: %v", err)
	}
}
