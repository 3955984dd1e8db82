package intake_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/intake"
)

// The secrets the no-leak scenario submits, in right and wrong places.
var (
	secretPhones = []string{phone, "+447700900999", "+15555550142", "+447700900777"}
	secretParams = []string{
		resetURL, "tok-SECRET-71c3",
		"https://shop.example/reset/tok-SECRET-other", "tok-SECRET-other",
		"OTP7Q2K9", "https://shop.example/login/magic?m=LINK-SECRET-5", "LINK-SECRET-5",
		"A7K2Q9", "t0k3n", "Your code is 1234",
	}
)

// needles returns every form in which a secret could show up: raw, JSON-escaped (Go's and the
// \/ style), URL-escaped, and for a phone number its bare digits.
func needles() []string {
	var out []string
	add := func(s string) {
		b, _ := json.Marshal(s)
		esc := string(b[1 : len(b)-1])
		out = append(out, s, esc, strings.ReplaceAll(esc, "/", `\/`), url.QueryEscape(s), url.PathEscape(s))
	}
	for _, p := range secretPhones {
		add(p)
		out = append(out, strings.TrimPrefix(p, "+"))
	}
	for _, p := range secretParams {
		add(p)
	}
	return out
}

func TestNoSecretsLeak(t *testing.T) {
	f := newFixture(t)
	var seen []string // every response body and header value
	run := func(ev eventT) eventResponse {
		resp := f.do(t, ev)
		seen = append(seen, resp.Body)
		for k, v := range resp.Headers {
			seen = append(seen, k+": "+v)
		}
		return resp
	}
	otp := func(m map[string]any) {
		m["event_id"], m["purpose"], m["to"] = "evt-2002", "one_time_code", "+15555550142"
		m["params"] = map[string]any{"code": "OTP7Q2K9"}
	}
	magic := func(m map[string]any) {
		m["event_id"], m["purpose"], m["to"] = "evt-3003", "magic_link", "+447700900777"
		m["params"] = map[string]any{"link": "https://shop.example/login/magic?m=LINK-SECRET-5"}
	}

	// Admissions, replays and a key reuse.
	run(post(body(nil), "idempotency-key", "order-1"))
	run(post(body(otp)))
	run(post(body(magic), "idempotency-key", "magic-1"))
	run(post(body(nil), "idempotency-key", "order-1"))
	run(post(body(func(m map[string]any) {
		m["to"] = "+447700900999"
		m["params"] = map[string]any{"reset_url": "https://shop.example/reset/tok-SECRET-other"}
	}), "idempotency-key", "order-1"))

	// Every malformed request, many carrying a phone number or a URL where they do not belong.
	for _, tc := range badInputs(t0) {
		run(tc.ev)
	}
	run(post(body(nil), "idempotency-key", phone))
	run(post(body(nil), "idempotency-key", resetURL))
	run(get(url.PathEscape(phone)))
	run(del(url.PathEscape(resetURL)))
	run(raw("GET", "/v1/notifications/"+url.PathEscape(phone), "", nil))
	run(raw("PUT", "/v1/notifications/"+url.PathEscape(phone), body(nil), map[string]string{"content-type": "application/json"}))
	run(raw("GET", "/v1/"+url.PathEscape(resetURL), "", nil))
	withQuery := get("order-1")
	withQuery.RawQueryString = "to=" + url.QueryEscape(phone)
	withQuery.QueryStringParameters = map[string]string{"to": phone}
	run(withQuery)

	// Status, cancellation, and the failure paths.
	run(get("order-1"))
	run(del("order-1"))
	run(del("order-1"))
	f.queue.Err = errors.New("sqs: send failed")
	run(post(body(func(m map[string]any) { m["event_id"] = "evt-4004" })))
	f.queue.Err = nil
	f.store.Err = errors.New("store: broken while writing to " + phone + " " + resetURL)
	run(post(body(func(m map[string]any) { m["event_id"] = "evt-5005" })))
	run(get("order-1"))
	f.store.Err = nil
	f.clock.Advance(time.Minute)
	run(post(body(func(m map[string]any) { m["event_id"] = "evt-4004" })))

	var queued []string
	for _, m := range f.queue.Sent() {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, string(b))
	}
	sources := map[string][]string{
		"log":      strings.Split(f.logs.String(), "\n"),
		"metric":   strings.Split(f.metrics.String(), "\n"),
		"response": seen,
		"queue":    queued,
	}
	if len(sources["log"]) < 60 || len(queued) < 4 {
		t.Fatalf("scenario too small: %d log lines, %d queue messages", len(sources["log"]), len(queued))
	}
	for name, items := range sources {
		for _, item := range items {
			for _, n := range needles() {
				if strings.Contains(item, n) {
					t.Errorf("%s holds %q: %s", name, n, item)
				}
			}
		}
	}
	if !strings.Contains(f.logs.String(), intake.RouteSubmit) || !strings.Contains(f.logs.String(), `"level":"ERROR"`) {
		t.Error("the scenario did not log what it should have")
	}
}

// TestLogMasksTheRequestsOwnValues: when a failure's cause quotes what the request carried,
// in any form, the log line still holds none of it.
func TestLogMasksTheRequestsOwnValues(t *testing.T) {
	const code = "Q7K2M9"
	otp := func(m map[string]any) {
		m["purpose"], m["params"] = "one_time_code", map[string]any{"code": code}
	}
	tests := []struct {
		name  string
		cause string
		body  string
	}{
		{"code in the cause", "store: item holds " + code, body(otp)},
		{"number without its plus", "store: no route to " + strings.TrimPrefix(phone, "+"), body(otp)},
		{"URL-encoded number", "store: to=" + url.QueryEscape(phone), body(otp)},
		{"reset URL", "store: " + resetURL, body(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.store.Err = errors.New(tc.cause)
			resp := f.do(t, post(tc.body))
			if resp.StatusCode != 500 {
				t.Fatalf("status %d, want 500", resp.StatusCode)
			}
			logs := f.logs.String()
			for _, s := range []string{code, strings.TrimPrefix(phone, "+"), "tok-SECRET-71c3"} {
				if strings.Contains(logs, s) {
					t.Errorf("log holds %q: %s", s, logs)
				}
			}
			if !strings.Contains(logs, `"error":"intake.submit `) {
				t.Errorf("the cause is not logged at all: %s", logs)
			}
		})
	}
}
