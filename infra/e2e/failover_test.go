package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// chainStack returns the stack, skipping t when its chain has one provider.
func chainStack(t *testing.T) *stack {
	t.Helper()
	s := getStack(t)
	if s.sim2 == "" {
		t.Skip("the stack has one provider (RESETNOTIFY_E2E_SIM2 not set)")
	}
	return s
}

// faultPrimary scripts the first provider's modes for to; the second keeps accepting.
func (s *stack) faultPrimary(t *testing.T, to string, modes ...string) {
	t.Helper()
	s.simDoAt(t, s.sim, http.MethodPost, "/control/faults", simapi.Fault{To: to, Modes: modes}, nil)
}

// providersOf lists the provider of each attempt the status shows.
func providersOf(st status) []string {
	var out []string
	for _, a := range st.Attempts {
		out = append(out, a.Provider)
	}
	return out
}

// TestFailoverWhenThePrimaryRefuses: the first provider answers "not processed", or refuses
// the number's country, for every send; the notification is delivered through the second,
// exactly once, and the status and the audit name the provider of each attempt.
func TestFailoverWhenThePrimaryRefuses(t *testing.T) {
	s := chainStack(t)
	for _, mode := range []string{"unavailable", "reject_country"} {
		t.Run(mode, func(t *testing.T) {
			to := number(t)
			s.faultPrimary(t, to, mode)
			n := s.newNotification(t, "failover-"+mode, to, 10*time.Minute)
			if r := s.submit(t, n); r.Code != http.StatusAccepted {
				t.Fatalf("POST: %d %s", r.Code, r.Body)
			}
			st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
			if st.State != "delivered" {
				t.Fatalf("ended %s/%s, want delivered", st.State, st.Reason)
			}
			if got := providersOf(st); !slices.Equal(got, []string{"simulator", "simulator2"}) || st.Provider != "simulator2" {
				t.Errorf("attempts went to %v (latest %q), want simulator then simulator2", got, st.Provider)
			}
			if a, b := s.sentAt(t, s.sim, to), s.sentAt(t, s.sim2, to); a != 0 || b != 1 {
				t.Errorf("the providers accepted %d and %d messages, want 0 and 1", a, b)
			}
			s.audited(t, n.EventID, ": delivered, because")
		})
	}
}

// TestNoFailoverAfterAcceptThenTimeout: the first provider accepts and then times out; the
// unknown outcome is reconciled at that provider, and the second is never called.
func TestNoFailoverAfterAcceptThenTimeout(t *testing.T) {
	s := chainStack(t)
	to := number(t)
	s.faultPrimary(t, to, "accept_then_timeout", "accept")
	n := s.newNotification(t, "no-failover", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" || st.Attempt != 1 || st.Provider != "simulator" {
		t.Errorf("ended %s/%s after %d attempts through %q, want delivered after 1 through simulator", st.State, st.Reason, st.Attempt, st.Provider)
	}
	var log simapi.RequestLog
	s.simDoAt(t, s.sim2, http.MethodGet, "/requests", nil, &log)
	for _, e := range log.Requests {
		if e.To == to {
			t.Errorf("the second provider got send %d although the first had accepted", e.Seq)
		}
	}
}

// refusePrimary closes the first provider's send port, the address the stack sends to, so
// that every connection to it is refused until the test ends; it skips t when the simulator
// has none.
func (s *stack) refusePrimary(t *testing.T) {
	t.Helper()
	if code := s.connections(t, true); code == http.StatusConflict {
		t.Skip("the first simulator has no send port (infra/smssim/cmd -send-addr): it cannot refuse connections")
	} else if code != http.StatusNoContent {
		t.Fatalf("closing the first simulator's send port: %d", code)
	}
	t.Cleanup(func() {
		if code := s.connections(t, false); code != http.StatusNoContent {
			t.Errorf("reopening the first simulator's send port: %d", code)
		}
	})
}

// connections closes (refuse) or reopens the first simulator's send port and returns the
// simulator's answer.
func (s *stack) connections(t *testing.T, refuse bool) int {
	t.Helper()
	b, err := json.Marshal(simapi.Connections{Refuse: refuse})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.http.Post(s.sim+"/control/connections", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("simulator POST /control/connections: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestFailoverWhenThePrimaryRefusesConnections: the first provider is down — every connection
// to it is refused, so no byte of a request leaves the dispatch function, the one transport
// failure that proves nothing was sent. The notification is delivered through the second
// provider, exactly once, and nothing ever reached the first. (A connection cut after the
// request was written proves nothing and never fails over: TestNoFailoverAfterAcceptThenTimeout
// and the reset and drop modes of the fault matrix.)
func TestFailoverWhenThePrimaryRefusesConnections(t *testing.T) {
	s := chainStack(t)
	s.refusePrimary(t)
	to := number(t)
	n := s.newNotification(t, "failover-refused", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" {
		t.Fatalf("ended %s/%s, want delivered", st.State, st.Reason)
	}
	if got := providersOf(st); !slices.Equal(got, []string{"simulator", "simulator2"}) || st.Provider != "simulator2" {
		t.Errorf("attempts went to %v (latest %q), want simulator (refused) then simulator2", got, st.Provider)
	}
	if a, b := s.sentAt(t, s.sim, to), s.sentAt(t, s.sim2, to); a != 0 || b != 1 {
		t.Errorf("the providers accepted %d and %d messages, want 0 and 1", a, b)
	}
	var log simapi.RequestLog
	s.simDo(t, http.MethodGet, "/requests", nil, &log)
	for _, e := range log.Requests {
		if e.To == to {
			t.Errorf("a request reached the first provider although it refused every connection: %+v", e)
		}
	}
	s.audited(t, n.EventID, ": delivered, because")
}
