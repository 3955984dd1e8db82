package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// sinchWebhook returns the stack's Sinch webhook URL and the callback token Sinch would be
// given, skipping t when the stack has no such route (a chain without sinch, deployed) or the
// token is not at hand (RESETNOTIFY_E2E_SINCH_WEBHOOK, RESETNOTIFY_E2E_SINCH_TOKEN_FILE:
// `make e2e` sets both).
func sinchWebhook(t *testing.T) (string, string) {
	t.Helper()
	hook, file := os.Getenv("RESETNOTIFY_E2E_SINCH_WEBHOOK"), os.Getenv("RESETNOTIFY_E2E_SINCH_TOKEN_FILE")
	if hook == "" || file == "" {
		t.Skip("no Sinch webhook to stand in for Sinch at (RESETNOTIFY_E2E_SINCH_WEBHOOK and RESETNOTIFY_E2E_SINCH_TOKEN_FILE not set)")
	}
	token, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return hook, strings.TrimSpace(string(token))
}

// postSinchReport posts a Sinch recipient delivery report for attemptRef, batch batchID, as
// Sinch's callback does, with token in the URL's query (none when empty), and returns the
// answer's status and body.
func (s *stack) postSinchReport(t *testing.T, hook, token, attemptRef, batchID, status, to string) (int, string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"type": "recipient_delivery_report_sms", "batch_id": batchID, "recipient": to, "code": 402,
		"status": status, "at": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "client_reference": attemptRef,
	})
	if err != nil {
		t.Fatal(err)
	}
	u := hook
	if token != "" {
		u += "?" + url.Values{"token": {token}}.Encode()
	}
	resp, err := s.http.Post(u, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST the Sinch webhook: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSinchDeliveryReports stands in for Sinch at the stack's Sinch webhook route: a report
// without the callback token, or with a wrong one, is refused; garbage is poison (400, which
// Sinch does not retry); a well-formed report that names an attempt of ours which went to
// another provider is kept as evidence (mismatch) and never applied, so a neighbour cannot
// turn a delivered notification into an undelivered one; one for a notification that does
// not exist is acknowledged as an orphan.
func TestSinchDeliveryReports(t *testing.T) {
	hook, token := sinchWebhook(t)
	s := getStack(t)
	to := number(t)
	n := s.newNotification(t, "sinch-report", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered")
	ref := fmt.Sprintf("%s-a%d", st.NotificationID, st.Attempt)
	if st.Attempt != 1 || st.Provider == "sinch" {
		t.Fatalf("the notification went to %q in %d attempts; the test needs one attempt through another provider", st.Provider, st.Attempt)
	}
	for _, tc := range []struct {
		name, token, body string
		wantCode          int
		wantBody          string
	}{
		{name: "no token", wantCode: http.StatusUnauthorized},
		{name: "a wrong token", token: token + "x", wantCode: http.StatusUnauthorized},
		{name: "a neighbour's report for our attempt", token: token, wantCode: http.StatusOK, wantBody: `{"outcome":"mismatch"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.postSinchReport(t, hook, tc.token, ref, "01FC66621XXXXX119Z8PMV1QPQ", "Failed", to)
			if code != tc.wantCode || (tc.wantBody != "" && body != tc.wantBody) {
				t.Errorf("answer %d %s, want %d %s", code, body, tc.wantCode, tc.wantBody)
			}
			if strings.Contains(body, to) {
				t.Errorf("the answer echoes the number: %s", body)
			}
		})
	}
	if got := s.get(t, n.key()); got.State != "delivered" || got.Reason != "RECEIPT_DELIVERED" {
		t.Errorf("after the Sinch reports the notification is %s/%s, want delivered/RECEIPT_DELIVERED", got.State, got.Reason)
	}
	resp, err := s.http.Post(hook+"?"+url.Values{"token": {token}}.Encode(), "application/json", strings.NewReader("recipient="+to))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || string(b) != `{"outcome":"poison"}` {
		t.Errorf("garbage: %d %s, want 400 poison", resp.StatusCode, b)
	}
	code, body := s.postSinchReport(t, hook, token, "01JC5ZR2B8K4D6F0H2J4L6N8Q0-a1", "01FC66621XXXXX119Z8PMV0000", "Delivered", to)
	if code != http.StatusOK || body != `{"outcome":"orphan"}` {
		t.Errorf("a report for no notification of ours: %d %s, want 200 orphan", code, body)
	}
}
