package intake_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/intake"
)

// badCase is a malformed request and the answer it must get.
type badCase struct {
	name    string
	ev      eventT
	status  int
	problem intake.ProblemType
	// field, when set, must be named by one of the problem's field errors.
	field string
}

// badInputs returns the malformed requests for a clock standing at now. Each is refused before
// anything is stored or queued.
func badInputs(now time.Time) []badCase {
	b := func(edit func(map[string]any)) string { return bodyAt(now, edit) }
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	drop := func(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }
	params := func(p map[string]any) func(map[string]any) { return set("params", p) }
	const (
		invalid   = intake.ProblemInvalidRequest
		malformed = intake.ProblemMalformedRequest
		bad       = http.StatusBadRequest
	)
	badBase64 := post("eyJldmVudF9pZCI6!!not-base64")
	badBase64.IsBase64Encoded = true
	return []badCase{
		{"broken JSON", post(`{"event_id":"evt-1","to":"` + phone), bad, malformed, "body"},
		{"empty body", post(""), bad, malformed, "body"},
		{"whitespace body", post(" \n"), bad, malformed, "body"},
		{"JSON array", post(`[` + b(nil) + `]`), bad, malformed, "body"},
		{"JSON string", post(`"` + phone + `"`), bad, malformed, "body"},
		{"two objects", post(b(nil) + b(nil)), bad, malformed, "body"},
		{"trailing garbage", post(b(nil) + " " + resetURL), bad, malformed, "body"},
		{"JSON null", post(`null`), bad, malformed, "body"},
		{"duplicate to", post(`{"to":"+447700900999",` + b(nil)[1:]), bad, malformed, "body"},
		{"duplicate to in upper case", post(`{"To":"+447700900999",` + b(nil)[1:]), bad, malformed, "body"},
		{"duplicate param", post(`{"params":{"reset_url":"` + resetURL + `","reset_url":"https://evil.example/r"},` + b(drop("params"))[1:]), bad, malformed, "body"},
		{"missing event_id", post(b(drop("event_id"))), bad, invalid, "event_id"},
		{"missing channel", post(b(drop("channel"))), bad, invalid, "channel"},
		{"missing purpose", post(b(drop("purpose"))), bad, invalid, "purpose"},
		{"missing to", post(b(drop("to"))), bad, invalid, "to"},
		{"missing params", post(b(drop("params"))), bad, invalid, "params"},
		{"missing expires_at", post(b(drop("expires_at"))), bad, invalid, "expires_at"},
		{"empty to", post(b(set("to", ""))), bad, invalid, "to"},
		{"unknown top-level field", post(b(set("message", "Your code is 1234"))), bad, invalid, "message"},
		{"unknown top-level field named like a phone", post(b(set(phone, "x"))), bad, invalid, "(unnamed)"},
		{"unknown param", post(b(params(map[string]any{"reset_url": resetURL, "token": "t0k3n"}))), bad, invalid, "params.token"},
		{"param named like a URL", post(b(params(map[string]any{resetURL: "x"}))), bad, invalid, "params.(unnamed)"},
		{"E.164 without plus", post(b(set("to", "447700900123"))), bad, invalid, "to"},
		{"E.164 national format", post(b(set("to", "07700 900123"))), bad, invalid, "to"},
		{"E.164 with spaces", post(b(set("to", "+44 7700 900123"))), bad, invalid, "to"},
		{"E.164 leading zero", post(b(set("to", "+0447700900123"))), bad, invalid, "to"},
		{"E.164 too short", post(b(set("to", "+123456"))), bad, invalid, "to"},
		{"E.164 too long", post(b(set("to", "+1234567890123456"))), bad, invalid, "to"},
		{"E.164 as tel URI", post(b(set("to", "tel:"+phone))), bad, invalid, "to"},
		{"E.164 as a number", post(b(set("to", 447700900123))), bad, invalid, "to"},
		{"URL in to", post(b(set("to", resetURL))), bad, invalid, "to"},
		{"phone in event_id", post(b(set("event_id", phone))), bad, invalid, "event_id"},
		{"expires_at far in the past", post(b(set("expires_at", now.Add(-3*time.Hour).Format(time.RFC3339)))), bad, invalid, "expires_at"},
		{"expires_at too far ahead", post(b(set("expires_at", now.Add(25*time.Hour).Format(time.RFC3339)))), bad, invalid, "expires_at"},
		{"expires_at not RFC 3339", post(b(set("expires_at", now.Add(time.Hour).Format("2006-01-02 15:04:05")))), bad, invalid, "expires_at"},
		{"expires_at without zone", post(b(set("expires_at", now.Add(time.Hour).Format("2006-01-02T15:04:05")))), bad, invalid, "expires_at"},
		{"expires_at as epoch", post(b(set("expires_at", now.Add(time.Hour).Unix()))), bad, invalid, "expires_at"},
		{"header key bad charset", post(b(nil), "idempotency-key", "order 77/reset"), bad, invalid, "Idempotency-Key"},
		{"header key is a phone", post(b(nil), "idempotency-key", phone), bad, invalid, "Idempotency-Key"},
		{"body key bad charset", post(b(set("idempotency_key", "a/b"))), bad, invalid, "idempotency_key"},
		{"oversized key", post(b(nil), "idempotency-key", strings.Repeat("k", 201)), bad, invalid, "Idempotency-Key"},
		{"unknown purpose", post(b(set("purpose", "marketing"))), bad, invalid, "purpose"},
		{"wrong channel", post(b(set("channel", "email"))), bad, invalid, "channel"},
		{"empty params", post(b(params(map[string]any{}))), bad, invalid, "params"},
		{"two params", post(b(params(map[string]any{"reset_url": resetURL, "code": "A7K2Q9"}))), bad, invalid, "params"},
		{"code too short", post(b(params(map[string]any{"code": "12"}))), bad, invalid, "params.code"},
		{"code with symbols", post(b(params(map[string]any{"code": "12-34"}))), bad, invalid, "params.code"},
		{"code as a number", post(b(params(map[string]any{"code": 123456}))), bad, invalid, "params"},
		{"code for a magic link", post(b(func(m map[string]any) {
			m["purpose"] = "magic_link"
			m["params"] = map[string]any{"code": "A7K2Q9"}
		})), bad, invalid, "params.code"},
		{"http reset_url", post(b(params(map[string]any{"reset_url": "http://shop.example/reset/tok-SECRET-71c3"}))), bad, invalid, "params.reset_url"},
		{"relative reset_url", post(b(params(map[string]any{"reset_url": "/reset/tok-SECRET-71c3"}))), bad, invalid, "params.reset_url"},
		{"reset_url with userinfo", post(b(params(map[string]any{"reset_url": "https://shop.example@evil.example/reset/tok-SECRET-71c3"}))), bad, invalid, "params.reset_url"},
		{"reset_url on an IP", post(b(params(map[string]any{"reset_url": "https://192.0.2.7/reset/tok-SECRET-71c3"}))), bad, invalid, "params.reset_url"},
		{"reset_url with a bidi override", post(b(params(map[string]any{"reset_url": "https://shop.example/reset/tok-SECRET-\u202e3c17"}))), bad, invalid, "params.reset_url"},
		{"link with a fragment", post(b(func(m map[string]any) {
			m["purpose"] = "magic_link"
			m["params"] = map[string]any{"link": "https://shop.example/m#tok-SECRET-71c3"}
		})), bad, invalid, "params.link"},
		{"bad locale", post(b(set("locale", "english"))), bad, invalid, "locale"},
		{"body over 8 KiB", post(padTo(b(nil), intake.MaxBodyBytes+1)), http.StatusRequestEntityTooLarge, intake.ProblemPayloadTooLarge, ""},
		{"wrong content type", post(b(nil), "content-type", "text/plain"), http.StatusUnsupportedMediaType, intake.ProblemUnsupportedMediaType, ""},
		{"form content type", post("to="+phone, "content-type", "application/x-www-form-urlencoded"), http.StatusUnsupportedMediaType, intake.ProblemUnsupportedMediaType, ""},
		{"missing content type", post(b(nil), "content-type", ""), http.StatusUnsupportedMediaType, intake.ProblemUnsupportedMediaType, ""},
		{"header and body keys disagree", post(b(set("idempotency_key", "order-1")), "idempotency-key", "order-2"), bad, intake.ProblemKeyMismatch, "idempotency_key"},
		{"invalid base64 body", badBase64, bad, malformed, ""},
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	// One record already stored, so "nothing new" also means "nothing changed".
	f.do(t, post(body(nil), "idempotency-key", "existing-1"))
	before, sentBefore := f.store.All(), len(f.queue.Sent())

	cases := badInputs(t0)
	if len(cases) < 20 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.do(t, tc.ev)
			checkBadAnswer(t, tc, resp)
			if d := cmp.Diff(before, f.store.All()); d != "" {
				t.Errorf("store changed (-before +after):\n%s", d)
			}
			if n := len(f.queue.Sent()); n != sentBefore {
				t.Errorf("queue got %d messages", n-sentBefore)
			}
		})
	}
}

// checkBadAnswer asserts the status, problem type and field of a refused request, and that the
// answer echoes none of the request's secrets.
func checkBadAnswer(t *testing.T, tc badCase, resp eventResponse) {
	t.Helper()
	p := wantProblem(t, resp, tc.status, tc.problem)
	if tc.field != "" {
		var names []string
		for _, fe := range p.Errors {
			names = append(names, fe.Field)
		}
		found := false
		for _, n := range names {
			found = found || n == tc.field
		}
		if !found {
			t.Errorf("field errors %v do not name %q", names, tc.field)
		}
	}
	if tc.problem == intake.ProblemInvalidRequest && len(p.Errors) == 0 {
		t.Errorf("invalid-request without field errors: %s", resp.Body)
	}
	for _, secret := range []string{phone, "447700900123", resetURL, "tok-SECRET", "A7K2Q9", "t0k3n", "Your code"} {
		if strings.Contains(resp.Body, secret) {
			t.Errorf("answer echoes %q: %s", secret, resp.Body)
		}
	}
}
