package workerfaults_test

import (
	"fmt"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// refusedURL returns the URL of a local port that refuses connections: a provider that is down.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// failoverStack is a stack with the chain simulator,simulator2: the primary answers with
// primary (or is the port at primaryURL), the secondary with secondary.
func failoverStack(t *testing.T, primary smssim.Config, primaryURL string, secondary smssim.Config, policy *notify.Policy) *stacktest.Stack {
	primary.Visibility, secondary.Visibility = time.Second, time.Second
	primary.DeliveryDelay, secondary.DeliveryDelay = time.Hour, time.Hour
	return stacktest.NewStack(t, stacktest.StackOptions{
		Sim: primary, SMSURL: primaryURL, Sim2: &secondary, Policy: policy,
		SMSTimeout: 2 * time.Second,
		Visibility: time.Second,
		Worker:     &config.Worker{Lease: 8 * time.Second, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second},
	})
}

// all is a mix that answers every send with m.
func all(m smssim.Mode) smssim.Mix { return smssim.Mix{{Mode: m, Weight: 1}} }

// failoverEvent is one notification of a failover scenario.
type failoverEvent struct{ key, to string }

// submitAll submits n events whose numbers start with prefix, dispatch deadline deadlineIn.
func submitAll(t *testing.T, st *stacktest.Stack, name, prefix string, n int, p notify.Policy, deadlineIn time.Duration) []failoverEvent {
	t.Helper()
	evs := make([]failoverEvent, n)
	for i := range evs {
		evs[i] = failoverEvent{key: fmt.Sprintf("%s-%d", name, i), to: fmt.Sprintf("%s%04d", prefix, i)}
		st.Submit(t, request(evs[i].key, evs[i].to, p, deadlineIn))
	}
	return evs
}

func keysOf(evs []failoverEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.key
	}
	return out
}

// accepted returns every message the two providers accepted for to.
func accepted(st *stacktest.Stack, to string) []smssim.Message {
	return append(st.Sim.Accepted(to), st.Sim2.Accepted(to)...)
}

// checkSentThrough checks that ev's record is sent through provider, as the one message the
// two providers accepted for its number (no double send), with that message's ID and
// reference.
func checkSentThrough(t *testing.T, st *stacktest.Stack, ev failoverEvent, provider string, reason notify.Reason) {
	t.Helper()
	rec := st.Get(t, ev.key)
	msgs := accepted(st, ev.to)
	if len(msgs) != 1 {
		t.Errorf("%s: the providers accepted %d messages, want exactly 1", ev.key, len(msgs))
		return
	}
	if rec.State != notify.StateSent || rec.Reason != reason || rec.Provider != provider {
		t.Errorf("%s: %s/%s through %q, want sent/%s through %s (path %v)", ev.key, rec.State, rec.Reason, rec.Provider, reason, provider, st.Transitions(ev.key))
	}
	if msgs[0].MessageID != rec.ProviderMessageID || msgs[0].ClientRef != sms.AttemptRef(rec.NotificationID, rec.Attempt) {
		t.Errorf("%s: accepted %s as %s; record holds %s at attempt %d", ev.key, msgs[0].ClientRef, msgs[0].MessageID, rec.ProviderMessageID, rec.Attempt)
	}
}

// TestFailoverMatrix runs the provider-chain scenarios with the simulator standing in for two
// providers (simulator, then simulator2), through the real workers, queues and table:
//
//   - the primary refuses connections, or answers "not processed" (503) to every send: every
//     notification is sent through the secondary, exactly once;
//   - the primary accepts and then times out: the secondary never sees those notifications,
//     which end sent through reconciliation at the primary;
//   - the primary refuses one country (country_not_supported): those go through the
//     secondary, the others through the primary;
//   - both are down: attempts alternate and back off, then every record expires, no message
//     is accepted, and no request reaches the secondary after the record's dispatch deadline
//     (the primary's port refuses every connection).
//
// The test never asserts how fast any of this goes.
func TestFailoverMatrix(t *testing.T) {
	const n = 8
	p := notify.DefaultPolicy()
	t.Run("primary refusing connections", func(t *testing.T) {
		st := failoverStack(t, smssim.Config{}, refusedURL(t), smssim.Config{}, nil)
		evs := submitAll(t, st, "refused", "+1555020", n, p, 5*time.Minute)
		st.RunUntil(t, 90*time.Second, true, func() bool { return allDone(st, keysOf(evs)) })
		for _, ev := range evs {
			checkSentThrough(t, st, ev, config.SMSSimulator2, notify.ReasonProviderAccepted)
		}
		noSecrets(t, st)
	})
	t.Run("primary answering not processed", func(t *testing.T) {
		st := failoverStack(t, smssim.Config{Mix: all(smssim.ModeUnavailable)}, "", smssim.Config{}, nil)
		evs := submitAll(t, st, "unavailable", "+1555021", n, p, 5*time.Minute)
		st.RunUntil(t, 90*time.Second, true, func() bool { return allDone(st, keysOf(evs)) })
		for _, ev := range evs {
			checkSentThrough(t, st, ev, config.SMSSimulator2, notify.ReasonProviderAccepted)
			if reqs := requestsTo(st.Sim.Requests(), ev.to); len(reqs) > 1 {
				// The cool-down may spare later notifications the failed first call.
				t.Errorf("%s: the primary saw %v", ev.key, modes(reqs))
			}
		}
		noSecrets(t, st)
	})
	t.Run("primary accepting then timing out", func(t *testing.T) {
		st := failoverStack(t, smssim.Config{Mix: all(smssim.ModeAcceptThenTimeout)}, "", smssim.Config{}, nil)
		evs := submitAll(t, st, "acctimeout", "+1555022", n, p, 5*time.Minute)
		st.RunUntil(t, 120*time.Second, true, func() bool { return allDone(st, keysOf(evs)) })
		for _, ev := range evs {
			if reqs := requestsTo(st.Sim2.Requests(), ev.to); len(reqs) != 0 {
				t.Errorf("%s: the secondary saw %v after the primary had accepted", ev.key, modes(reqs))
			}
			checkSentThrough(t, st, ev, config.SMSSimulator, notify.ReasonReconciledAccepted)
		}
		noSecrets(t, st)
	})
	t.Run("primary refusing one country", func(t *testing.T) {
		st := failoverStack(t, smssim.Config{}, "", smssim.Config{}, nil)
		for i := range n {
			st.Sim.SetFault(fmt.Sprintf("+44770090%04d", i), smssim.ModeRejectCountry)
		}
		uk := submitAll(t, st, "uk", "+44770090", n, p, 5*time.Minute)
		us := submitAll(t, st, "us", "+1555023", n, p, 5*time.Minute)
		st.RunUntil(t, 90*time.Second, true, func() bool { return allDone(st, append(keysOf(uk), keysOf(us)...)) })
		for _, ev := range uk {
			checkSentThrough(t, st, ev, config.SMSSimulator2, notify.ReasonProviderAccepted)
		}
		for _, ev := range us {
			checkSentThrough(t, st, ev, config.SMSSimulator, notify.ReasonProviderAccepted)
			if reqs := requestsTo(st.Sim2.Requests(), ev.to); len(reqs) != 0 {
				t.Errorf("%s: the secondary saw %v", ev.key, modes(reqs))
			}
		}
		noSecrets(t, st)
	})
	t.Run("both down", func(t *testing.T) {
		bp := p
		bp.MaxAttempts = 100
		st := failoverStack(t, smssim.Config{}, refusedURL(t), smssim.Config{Mix: all(smssim.ModeUnavailable)}, &bp)
		evs := submitAll(t, st, "bothdown", "+1555024", n, bp, 6*time.Second)
		st.RunUntil(t, 90*time.Second, true, func() bool { return allDone(st, keysOf(evs)) })
		for _, ev := range evs {
			rec := st.Get(t, ev.key)
			// EXPIRED_UNRESOLVED when the last lease was taken too close to the deadline to call
			// anyone: it ran out, and the primary, asked about it, could not answer.
			if rec.State != notify.StateExpired || (rec.Reason != notify.ReasonExpiredBeforeDispatch && rec.Reason != notify.ReasonExpiredUnresolved) {
				t.Errorf("%s: %s/%s, want expired (path %v)", ev.key, rec.State, rec.Reason, st.Transitions(ev.key))
			}
			reqs := requestsTo(st.Sim2.Requests(), ev.to)
			if len(reqs) == 0 || rec.Attempt < 2 {
				t.Errorf("%s: %d attempts, the secondary saw %d: no failover", ev.key, rec.Attempt, len(reqs))
			}
			for _, r := range reqs {
				if !r.At.Before(rec.DispatchDeadline) {
					t.Errorf("%s: a send reached the secondary at %s, after the deadline %s", ev.key, r.At, rec.DispatchDeadline)
				}
			}
			if msgs := accepted(st, ev.to); len(msgs) != 0 {
				t.Errorf("%s: %d messages accepted while both providers were down", ev.key, len(msgs))
			}
		}
		// A scalar, or the value array of a line folded per invocation (obs.Metrics.Hold).
		if !regexp.MustCompile(`"ProviderCoolDowns":\[?1`).MatchString(st.Logs.String()) {
			t.Error("no provider cooled down while both were down")
		}
		noSecrets(t, st)
	})
}
