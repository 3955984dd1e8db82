package workerfaults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// steps parses "state/REASON" strings.
func steps(ss ...string) []stacktest.Step {
	out := make([]stacktest.Step, 0, len(ss))
	for _, s := range ss {
		state, reason, _ := strings.Cut(s, "/")
		out = append(out, stacktest.Step{State: notify.State(state), Reason: notify.Reason(reason)})
	}
	return out
}

const lease = "dispatching/LEASE_ACQUIRED"

// outcomeStack is a stack with a one-second visibility window on both sides and Retry-After of
// retryAfter. The provider timeout (2 s) is long enough that only the modes that hang run into
// it, even on a busy machine.
func outcomeStack(t *testing.T, retryAfter time.Duration) *stacktest.Stack {
	return stacktest.NewStack(t, stacktest.StackOptions{
		Sim:        smssim.Config{RetryAfter: retryAfter, Visibility: time.Second, DeliveryDelay: time.Hour},
		SMSTimeout: 2 * time.Second,
		Visibility: time.Second,
		Worker:     &config.Worker{Lease: 8 * time.Second, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second},
	})
}

// TestAmbiguousAnswersAreReconciled covers the unknown rows of the provider-outcome table that
// a broken path to the provider produces (the simulator's gateway modes): a reset connection,
// 502 and 504 from a gateway, and a 2xx whose body cannot be read or parsed. Each goes through
// the real dispatch handler to dispatch_unknown, then through the reconcile handler, which
// looks the attempt up after the visibility window: found → sent / RECONCILED_ACCEPTED, with
// no second send; a 502 that never reached the provider → not found → retry_scheduled → a
// second attempt that is accepted.
func TestAmbiguousAnswersAreReconciled(t *testing.T) {
	st := outcomeStack(t, time.Second)
	reconciled := steps(lease, "dispatch_unknown/PROVIDER_AMBIGUOUS", "sent/RECONCILED_ACCEPTED")
	cases := []struct {
		name   string
		faults []smssim.Mode
		path   []stacktest.Step
		// sends is how many send requests reach the simulator; only the last one is accepted.
		sends int
	}{
		{"502 after the provider accepted", []smssim.Mode{smssim.ModeBadGatewayAfterAccept}, reconciled, 1},
		{"504 after the provider accepted", []smssim.Mode{smssim.ModeGatewayTimeoutAfterAccept}, reconciled, 1},
		{"201 with the body cut short", []smssim.Mode{smssim.ModeTruncatedAfterAccept}, reconciled, 1},
		{"200 with an unparseable body", []smssim.Mode{smssim.ModeGarbageAfterAccept}, reconciled, 1},
		{"connection reset after the provider accepted", []smssim.Mode{smssim.ModeResetAfterAccept},
			steps(lease, "dispatch_unknown/CONNECTION_LOST", "sent/RECONCILED_ACCEPTED"), 1},
		{"502 before reaching the provider", []smssim.Mode{smssim.ModeBadGatewayBeforeAccept, smssim.ModeAccept},
			steps(lease, "dispatch_unknown/PROVIDER_AMBIGUOUS", "retry_scheduled/RECONCILED_NOT_FOUND", lease, "sent/PROVIDER_ACCEPTED"), 2},
	}
	keys := make([]string, len(cases))
	for i, tc := range cases {
		to := fmt.Sprintf("+1555010%04d", i)
		keys[i] = fmt.Sprintf("ambiguous-%d", i)
		st.Sim.SetFault(to, tc.faults...)
		st.Submit(t, request(keys[i], to, notify.DefaultPolicy(), 5*time.Minute))
	}
	st.RunUntil(t, 60*time.Second, true, func() bool { return allDone(st, keys) })

	all := st.Sim.Requests()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := st.Get(t, keys[i])
			to := fmt.Sprintf("+1555010%04d", i)
			if diff := cmp.Diff(tc.path, st.Transitions(keys[i])); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			reqs := requestsTo(all, to)
			inbox := st.Sim.Accepted(to)
			if len(reqs) != tc.sends || len(inbox) != 1 {
				t.Fatalf("provider saw %v and accepted %d; want %d sends, 1 accepted", modes(reqs), len(inbox), tc.sends)
			}
			for j, r := range reqs {
				if r.Recorded != (j == len(reqs)-1) {
					t.Errorf("send %d of %d (%s) recorded = %v; want only the last recorded", j+1, len(reqs), r.Mode, r.Recorded)
				}
			}
			if inbox[0].MessageID != rec.ProviderMessageID || inbox[0].ClientRef != sms.AttemptRef(rec.NotificationID, rec.Attempt) {
				t.Errorf("accepted %s as %s; record holds %s at attempt %d", inbox[0].ClientRef, inbox[0].MessageID, rec.ProviderMessageID, rec.Attempt)
			}
		})
	}
	noSecrets(t, st)
}

// TestRetryAfterIsHonoured covers the not-processed rows with their wait: a 429 and a 503
// that carry Retry-After move the record to retry_scheduled with next_action_at at least
// Retry-After after the transition (the backoff alone would be 50–100 ms here), and the next
// attempt does not reach the provider before next_action_at.
func TestRetryAfterIsHonoured(t *testing.T) {
	const retryAfter = 2 * time.Second
	st := outcomeStack(t, retryAfter)
	cases := []struct {
		name   string
		mode   smssim.Mode
		reason notify.Reason
	}{
		{"429 throttled", smssim.ModeThrottle, notify.ReasonProviderThrottled},
		{"503 not processed", smssim.ModeUnavailable, notify.ReasonProviderUnavailable},
	}
	keys := make([]string, len(cases))
	retry := map[string]notify.Record{}
	for i, tc := range cases {
		to := fmt.Sprintf("+1555020%04d", i)
		keys[i] = fmt.Sprintf("retry-after-%d", i)
		st.Sim.SetFault(to, tc.mode, smssim.ModeAccept)
		st.Submit(t, request(keys[i], to, notify.DefaultPolicy(), 5*time.Minute))
	}
	// Catch each record while it waits: done is called between every round of the workers,
	// and the wait lasts seconds.
	st.RunUntil(t, 60*time.Second, true, func() bool {
		for _, k := range keys {
			rec, err := st.Store.Get(context.Background(), k)
			if err == nil && rec.State == notify.StateRetryScheduled {
				retry[k] = rec
			}
		}
		return allDone(st, keys)
	})

	all := st.Sim.Requests()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to := fmt.Sprintf("+1555020%04d", i)
			want := steps(lease, string(notify.StateRetryScheduled)+"/"+string(tc.reason), lease, "sent/PROVIDER_ACCEPTED")
			if diff := cmp.Diff(want, st.Transitions(keys[i])); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			waiting, ok := retry[keys[i]]
			if !ok {
				t.Fatal("the record was never seen in retry_scheduled")
			}
			if got := waiting.NextActionAt.Sub(waiting.UpdatedAt); got < retryAfter {
				t.Errorf("next_action_at is %s after the transition, want at least Retry-After %s", got, retryAfter)
			}
			reqs := requestsTo(all, to)
			if len(reqs) != 2 || reqs[1].HTTPStatus != 201 {
				t.Fatalf("provider saw %v, want the refused attempt and one accepted", modes(reqs))
			}
			if reqs[1].At.Before(waiting.NextActionAt) {
				t.Errorf("second attempt reached the provider at %s, before next_action_at %s", reqs[1].At, waiting.NextActionAt)
			}
			if gap := reqs[1].At.Sub(reqs[0].At); gap < retryAfter {
				t.Errorf("attempts %s apart, want at least Retry-After %s", gap, retryAfter)
			}
		})
	}
}

// allDone reports whether every record of keys is done sending.
func allDone(st *stacktest.Stack, keys []string) bool {
	for _, k := range keys {
		rec, err := st.Store.Get(context.Background(), k)
		if err != nil || !rec.State.SendingDone() {
			return false
		}
	}
	return true
}

// noSecrets fails t when the code or a test number reached the workers' logs.
func noSecrets(t *testing.T, st *stacktest.Stack) {
	t.Helper()
	if out := st.Logs.String(); strings.Contains(out, code) || strings.Contains(out, "+1555") {
		t.Error("a secret reached the workers' logs")
	}
}
