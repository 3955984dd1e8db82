package workerfaults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// TestSlowProviderNeverAcceptsAfterTheDeadline runs a provider that takes 6 s to accept
// (the simulator's latency mode, which records a message only while the client still waits)
// against the real handlers and checks the two halves of "nothing is sent after the dispatch
// deadline" that do not depend on the clock at the moment the lease is taken:
//
//   - a record whose deadline is about 5 s away when it is dispatched: the provider must not
//     accept its message at or after the deadline, although the send started in time;
//   - a record whose deadline is minutes away: the validity period the provider received,
//     counted from when it accepted, must end by the deadline.
//
// The first record ends expired (nothing was accepted, as reconciliation proves), the second
// sent.
func TestSlowProviderNeverAcceptsAfterTheDeadline(t *testing.T) {
	policy := notify.DefaultPolicy()
	policy.SafetyMargin = 2 * time.Second
	st := stacktest.NewStack(t, stacktest.StackOptions{
		Sim:        smssim.Config{Latency: 6 * time.Second, Visibility: time.Second, DeliveryDelay: time.Hour},
		SMSTimeout: 7 * time.Second,
		Visibility: time.Second,
		Policy:     &policy,
		Worker: &config.Worker{
			Lease: 13 * time.Second, MinValidity: time.Second,
			BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
		},
	})
	cases := []struct {
		name       string
		deadlineIn time.Duration
		want       notify.State
	}{
		{"deadline five seconds away", 5 * time.Second, notify.StateExpired},
		{"deadline minutes away", 10 * time.Minute, notify.StateSent},
	}
	keys := make([]string, len(cases))
	for i, tc := range cases {
		to := fmt.Sprintf("+1555040%04d", i)
		keys[i] = fmt.Sprintf("slow-%d", i)
		st.Sim.SetFault(to, smssim.ModeLatency)
		st.Submit(t, request(keys[i], to, policy, tc.deadlineIn))
	}
	// Both messages are handled at once, right after admission.
	if _, err := st.PumpOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.RunUntil(t, 60*time.Second, true, func() bool { return allDone(st, keys) })

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := st.Get(t, keys[i])
			to := fmt.Sprintf("+1555040%04d", i)
			reqs := requestsTo(st.Sim.Requests(), to)
			if len(reqs) == 0 {
				t.Fatalf("the provider was never called (%s/%s, path %v); the test did not exercise a slow call", rec.State, rec.Reason, st.Transitions(keys[i]))
			}
			for _, m := range st.Sim.Accepted(to) {
				if !m.AcceptedAt.Before(rec.DispatchDeadline) {
					t.Errorf("accepted at %s, %s after the dispatch deadline", m.AcceptedAt.Format(time.RFC3339Nano), m.AcceptedAt.Sub(rec.DispatchDeadline))
				}
				if m.ValidUntil().After(rec.DispatchDeadline) {
					t.Errorf("valid until %s, %s after the dispatch deadline", m.ValidUntil().Format(time.RFC3339Nano), m.ValidUntil().Sub(rec.DispatchDeadline))
				}
			}
			if rec.State != tc.want {
				t.Errorf("state %s/%s, want %s (path %v, attempts %v)", rec.State, rec.Reason, tc.want, st.Transitions(keys[i]), modes(reqs))
			}
		})
	}
}
