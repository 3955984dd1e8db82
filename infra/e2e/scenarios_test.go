package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// settle is how long a notification may take to reach a final state on a busy machine: a
// queue poll, a provider call, the simulator's delivery delay and its receipt, and for the
// slower stories a reconciliation delay or a sweep (every minute).
const settle = 3 * time.Minute

func TestDelivered(t *testing.T) {
	s := getStack(t)
	to := number(t)
	n := s.newNotification(t, "delivered", to, 10*time.Minute)
	r := s.submit(t, n)
	if r.Code != http.StatusAccepted || r.Header.Get("Location") == "" {
		t.Fatalf("POST: %d, Location %q, %s", r.Code, r.Header.Get("Location"), r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered")
	if st.Attempt != 1 {
		t.Errorf("delivered after %d attempts, want 1", st.Attempt)
	}
	if got := s.sent(t, to); got != 1 {
		t.Errorf("simulator accepted %d messages, want 1", got)
	}
	s.audited(t, n.EventID, "Accepted at", "(PROVIDER_ACCEPTED)", "(RECEIPT_DELIVERED)", ": delivered, because")
}

func TestConcurrentDuplicatesSendOnce(t *testing.T) {
	s := getStack(t)
	to := number(t)
	n := s.newNotification(t, "duplicates", to, 10*time.Minute)
	body, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	const callers = 50
	codes := make([]int, callers)
	replayed := make([]bool, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.call(t, http.MethodPost, "/v1/notifications", http.Header{"Idempotency-Key": {n.key()}}, body)
			codes[i], replayed[i] = r.Code, r.Header.Get("Idempotent-Replayed") == "true"
		}()
	}
	wg.Wait()
	admitted, replays := 0, 0
	for i, c := range codes {
		switch {
		case c == http.StatusAccepted:
			admitted++
		case c == http.StatusOK && replayed[i]:
			replays++
		default:
			t.Errorf("caller %d: status %d (replayed %v)", i, c, replayed[i])
		}
	}
	if admitted != 1 || replays != callers-1 {
		t.Errorf("%d admitted, %d replays; want 1 and %d", admitted, replays, callers-1)
	}
	s.waitState(t, n.key(), settle, "delivered")
	if got := s.sent(t, to); got != 1 {
		t.Errorf("simulator accepted %d messages for %d duplicate requests, want 1", got, callers)
	}
	s.audited(t, n.EventID, ": 1 notification.", "Attempt 1:", "(RECEIPT_DELIVERED)", ": delivered, because")
}

// TestAcceptThenTimeoutReconciled: the provider accepts the first send but never answers, so
// the outcome is unknown; reconciliation finds the message and nothing is sent again.
func TestAcceptThenTimeoutReconciled(t *testing.T) {
	s := getStack(t)
	to := number(t)
	s.fault(t, to, "accept_then_timeout", "accept")
	n := s.newNotification(t, "unknown", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" || st.Attempt != 1 {
		t.Errorf("ended %s/%s after %d attempts, want delivered after 1", st.State, st.Reason, st.Attempt)
	}
	if got := s.sent(t, to); got != 1 {
		t.Errorf("simulator accepted %d messages, want exactly 1 (an unknown outcome must not be re-sent)", got)
	}
	// The attempt's delivery receipt usually reaches provider-events before reconciliation
	// runs, and reconciliation reads stored receipts before it asks the provider's lookup.
	ev := s.audited(t, n.EventID, "(PROVIDER_TIMEOUT)", ": delivered, because")
	if !strings.Contains(ev, "(RECONCILED_BY_RECEIPT)") && !strings.Contains(ev, "(RECONCILED_ACCEPTED)") {
		t.Errorf("evidence does not say that reconciliation settled the unknown outcome:\n%s", ev)
	}
}

// TestProviderDownPastDeadline: the providers (every one of the chain) answer "not processed"
// until the dispatch deadline has passed, so the notification expires and nothing is sent.
func TestProviderDownPastDeadline(t *testing.T) {
	s := getStack(t)
	to := number(t)
	s.fault(t, to, "unavailable")
	// The deadline comes before the attempts run out: with Retry-After (1 s) and the
	// workers' backoff (1 s doubling), a fifth attempt cannot come sooner than 8 s after the
	// first, so the record must expire rather than fail.
	n := s.newNotification(t, "down", to, 8*time.Second)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "expired", "sent", "delivered", "failed")
	if st.State != "expired" {
		t.Fatalf("ended %s/%s, want expired", st.State, st.Reason)
	}
	deadline, err := time.Parse(time.RFC3339Nano, st.DispatchDeadline)
	if err != nil {
		t.Fatal(err)
	}
	// Attempts were made (the provider refused them) and none at or after the deadline.
	var all []simapi.RequestEntry
	for _, base := range s.sims() {
		var log simapi.RequestLog
		s.simDoAt(t, base, http.MethodGet, "/requests", nil, &log)
		all = append(all, log.Requests...)
	}
	attempts := 0
	for _, e := range all {
		if e.To != to {
			continue
		}
		attempts++
		if !e.At.Before(deadline) {
			t.Errorf("send request %d at %s, at or after the dispatch deadline %s", e.Seq, e.At, deadline)
		}
	}
	if attempts == 0 {
		t.Errorf("no send was attempted: the provider outage was never met")
	}
	if got := s.sent(t, to); got != 0 {
		t.Errorf("simulator accepted %d messages, want 0", got)
	}
	s.audited(t, n.EventID, "(PROVIDER_UNAVAILABLE)", ": expired, because")
}

// TestCancelBeforeDispatch cancels a notification the provider has not taken yet (it keeps
// throttling): it ends cancelled and nothing is sent, even after the provider recovers.
func TestCancelBeforeDispatch(t *testing.T) {
	s := getStack(t)
	to := number(t)
	s.fault(t, to, "throttle")
	n := s.newNotification(t, "cancel", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	// A DELETE that meets a worker holding the lease answers 409; the next one, once the
	// record is back in retry_scheduled, cancels.
	deadline := time.Now().Add(settle)
	var r response
	for time.Now().Before(deadline) {
		r = s.call(t, http.MethodDelete, "/v1/notifications/"+n.key(), nil, nil)
		if r.Code < 300 {
			break
		}
		if r.Code != http.StatusConflict {
			t.Fatalf("DELETE: %d %s", r.Code, r.Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.Code >= 300 {
		t.Fatalf("DELETE never succeeded: %d %s", r.Code, r.Body)
	}
	s.fault(t, to, "accept")
	if st := s.get(t, n.key()); st.State != "cancelled" {
		t.Fatalf("after DELETE: %s/%s, want cancelled", st.State, st.Reason)
	}
	if r := s.call(t, http.MethodDelete, "/v1/notifications/"+n.key(), nil, nil); r.Code != http.StatusConflict && r.Code >= 300 {
		t.Errorf("second DELETE: %d %s", r.Code, r.Body)
	}
	s.audited(t, n.EventID, ": cancelled, because the caller cancelled it (CANCELLED)")
	if got := s.sent(t, to); got != 0 {
		t.Errorf("simulator accepted %d messages for a cancelled notification, want 0", got)
	}
	if st := s.get(t, n.key()); st.State != "cancelled" {
		t.Errorf("later: %s/%s, want still cancelled", st.State, st.Reason)
	}
}

// TestLookupOutage: the send's outcome is unknown and the provider's lookup is down, so
// reconciliation cannot conclude from it; the record waits in dispatch_unknown (never sent
// again) until the provider's view is readable, then settles with the one SMS.
func TestLookupOutage(t *testing.T) {
	s := getStack(t)
	to := number(t)
	s.fault(t, to, "accept_then_timeout", "accept")
	for _, base := range s.sims() { // whichever provider the chain sends through
		s.simDoAt(t, base, http.MethodPost, "/control/lookup", simapi.LookupFault{Mode: "unavailable"}, nil)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			for _, base := range s.sims() {
				s.simDoAt(t, base, http.MethodPost, "/control/lookup", simapi.LookupFault{Mode: "normal"}, nil)
			}
		}
	}
	t.Cleanup(restore)
	n := s.newNotification(t, "lookup-outage", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "dispatch_unknown", "sent", "delivered")
	if st.State == "dispatch_unknown" {
		// Hold the outage for a few reconcile rounds: no send may happen meanwhile.
		time.Sleep(5 * time.Second)
		if got := s.sent(t, to); got != 1 {
			t.Errorf("during the lookup outage the simulator accepted %d messages, want 1", got)
		}
	}
	restore()
	st = s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" || st.Attempt != 1 {
		t.Errorf("ended %s/%s after %d attempts, want delivered after 1", st.State, st.Reason, st.Attempt)
	}
	if got := s.sent(t, to); got != 1 {
		t.Errorf("simulator accepted %d messages, want exactly 1", got)
	}
	ev := s.audited(t, n.EventID, "(PROVIDER_TIMEOUT)", ": delivered, because")
	if !strings.Contains(ev, "RECONCILED_BY_RECEIPT") && !strings.Contains(ev, "RECONCILED_ACCEPTED") && !strings.Contains(ev, "RECEIPT_DELIVERED") {
		t.Errorf("evidence does not say how the unknown outcome was settled:\n%s", ev)
	}
}

// TestConversionReachesTheProvider: the caller reports the code used; the record stays
// delivered with CONVERTED, a repeat changes nothing, the simulator that sent the message
// (the first of the chain, or the second while the first cools down after the failover
// tests) records the feedback on it, and the audit trail tells it.
func TestConversionReachesTheProvider(t *testing.T) {
	s := getStack(t)
	to := number(t)
	n := s.newNotification(t, "converted", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered")
	path := "/v1/notifications/" + n.key() + "/conversion"
	r := s.call(t, http.MethodPost, path, nil, nil)
	conv := r.status(t)
	if r.Code != http.StatusOK || conv.State != "delivered" || conv.Reason != "CONVERTED" || conv.ConvertedAt == "" {
		t.Fatalf("conversion: %d %s", r.Code, r.Body)
	}
	again := s.call(t, http.MethodPost, path, nil, nil)
	if again.Code != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || again.status(t).ConvertedAt != conv.ConvertedAt {
		t.Errorf("repeated conversion: %d %v %s", again.Code, again.Header, again.Body)
	}
	var msg simapi.Message
	s.simDoAt(t, s.simOf(t, st.Provider), http.MethodGet, "/messages/"+st.ProviderMessageID, nil, &msg)
	if msg.Feedback != simapi.FeedbackReceived {
		t.Errorf("the simulator holds feedback %q for %s, want %s", msg.Feedback, st.ProviderMessageID, simapi.FeedbackReceived)
	}
	s.audited(t, n.EventID, "(RECEIPT_DELIVERED)", "(CONVERTED)")
}

// TestAcceptedFaultsKeepMessageID: the provider accepts the send, then the answer is lost
// (accept_then_timeout, accept_then_drop, 500_after_accept), so the outcome is unknown and a
// receipt, held on the record while it was dispatching or stored, or the lookup settles it.
// Whichever does, the record ends with the provider's message ID in its status and in the
// last entry of its audit trail, and nothing is sent again.
func TestAcceptedFaultsKeepMessageID(t *testing.T) {
	s := getStack(t)
	for _, mode := range []string{"accept_then_timeout", "accept_then_drop", "500_after_accept"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			to := number(t)
			s.fault(t, to, mode, "accept")
			n := s.newNotification(t, "msgid-"+strings.ReplaceAll(mode, "_", "-"), to, 10*time.Minute)
			if r := s.submit(t, n); r.Code != http.StatusAccepted {
				t.Fatalf("POST: %d %s", r.Code, r.Body)
			}
			st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
			if st.State != "delivered" && st.State != "undelivered" {
				t.Fatalf("ended %s/%s, want delivered or undelivered", st.State, st.Reason)
			}
			if st.ProviderMessageID == "" {
				t.Errorf("status %s/%s has no provider_message_id", st.State, st.Reason)
			}
			if got := s.sent(t, to); got != 1 {
				t.Errorf("simulator accepted %d messages, want exactly 1", got)
			}
			last := s.lastAuditEntry(t, n.EventID, st.State)
			if last["provider_message_id"] != st.ProviderMessageID {
				t.Errorf("last audit entry (%v -> %v, %v) has provider_message_id %q, want the status's %q",
					last["from_state"], last["to_state"], last["reason"], last["provider_message_id"], st.ProviderMessageID)
			}
		})
	}
}

// lastAuditEntry waits until the last audit entry of event eventID (it has one notification)
// moves to state, and returns it, as `auditctl timeline --format jsonl` prints it.
func (s *stack) lastAuditEntry(t *testing.T, eventID, state string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var out string
	for time.Now().Before(deadline) {
		out, _ = s.auditctl(t, "timeline", "--event-id", eventID, "--format", "jsonl")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err == nil && last["to_state"] == state {
			return last
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("audit timeline of %s never ended in %s:\n%s", eventID, state, out)
	return nil
}
