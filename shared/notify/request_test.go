package notify_test

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/resetnotify/resetnotify/shared/notify"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func body(mod func(m map[string]any)) []byte {
	m := map[string]any{
		"event_id": "evt-1", "channel": "sms", "purpose": "password_reset", "to": "+14155550100",
		"locale": "en", "params": map[string]any{"reset_url": "https://shop.example/r/abc"},
		"expires_at": t0.Add(15 * time.Minute).Format(time.RFC3339),
	}
	if mod != nil {
		mod(m)
	}
	return mustJSON(m)
}

// dup returns body(mod) with members, raw JSON, inserted first: a way to build what a map
// cannot hold, such as a member named twice.
func dup(members string, mod func(m map[string]any)) []byte {
	b := body(mod)
	return append([]byte("{"+members+","), b[1:]...)
}

func TestParseRequestValid(t *testing.T) {
	p := notify.DefaultPolicy()
	tests := []struct {
		name      string
		body      []byte
		header    string
		wantKey   string
		wantParam map[string]string
	}{
		{"derived key", body(nil), "", "evt-1:sms:password_reset", map[string]string{"reset_url": "https://shop.example/r/abc"}},
		{"header key", body(nil), "k-1", "k-1", map[string]string{"reset_url": "https://shop.example/r/abc"}},
		{"body key", body(func(m map[string]any) { m["idempotency_key"] = "k-2" }), "", "k-2", map[string]string{"reset_url": "https://shop.example/r/abc"}},
		{"both keys agree", body(func(m map[string]any) { m["idempotency_key"] = "k-3" }), "k-3", "k-3", map[string]string{"reset_url": "https://shop.example/r/abc"}},
		{"code", body(func(m map[string]any) { m["params"] = map[string]any{"code": "123456"} }), "", "evt-1:sms:password_reset", map[string]string{"code": "123456"}},
		{"one time code", body(func(m map[string]any) {
			m["purpose"] = "one_time_code"
			m["params"] = map[string]any{"code": "A1B2"}
		}), "", "evt-1:sms:one_time_code", map[string]string{"code": "A1B2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := notify.ParseRequest(tc.body, tc.header, t0, p)
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if req.IdempotencyKey != tc.wantKey {
				t.Errorf("key = %q, want %q", req.IdempotencyKey, tc.wantKey)
			}
			if diff := cmp.Diff(tc.wantParam, req.Params); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			if !req.ExpiresAt.Equal(t0.Add(15 * time.Minute)) {
				t.Errorf("expires_at = %s", req.ExpiresAt)
			}
		})
	}
}

func TestParseRequestRefusals(t *testing.T) {
	p := notify.DefaultPolicy()
	long := strings.Repeat("k", notify.MaxKeyLen+1)
	tests := []struct {
		name   string
		body   []byte
		header string
		kind   notify.ProblemKind
		field  string
	}{
		{"broken json", []byte(`{"event_id":`), "", notify.ProblemMalformed, "body"},
		{"empty", []byte(``), "", notify.ProblemMalformed, "body"},
		{"array", []byte(`[1,2]`), "", notify.ProblemMalformed, "body"},
		{"two objects", append(body(nil), body(nil)...), "", notify.ProblemMalformed, "body"},
		{"null", []byte(`null`), "", notify.ProblemMalformed, "body"},
		{"null with spaces", []byte(" null \n"), "", notify.ProblemMalformed, "body"},
		{"duplicate to", dup(`"to":"+14155550199"`, nil), "", notify.ProblemMalformed, "body"},
		{"duplicate to in another case", dup(`"TO":"+14155550199"`, nil), "", notify.ProblemMalformed, "body"},
		{"duplicate params with a long s", dup(`"paramſ":{"code":"9999"}`, nil), "", notify.ProblemMalformed, "body"},
		{"duplicate param", dup(`"params":{"code":"1234","code":"5678"}`, func(m map[string]any) { delete(m, "params") }), "", notify.ProblemMalformed, "body"},
		{"duplicate idempotency_key", dup(`"idempotency_key":"k-1","idempotency_key":"k-2"`, nil), "", notify.ProblemMalformed, "body"},
		// The same name in two different objects is no duplicate: this is an unknown field.
		{"param name at top level", dup(`"reset_url":"https://x.example/"`, nil), "", notify.ProblemInvalid, "reset_url"},
		{"missing to", body(func(m map[string]any) { delete(m, "to") }), "", notify.ProblemInvalid, "to"},
		{"missing event", body(func(m map[string]any) { delete(m, "event_id") }), "", notify.ProblemInvalid, "event_id"},
		{"unknown field", body(func(m map[string]any) { m["extra"] = 1 }), "", notify.ProblemInvalid, "extra"},
		{"unknown field named like a number", body(func(m map[string]any) { m["14155550100"] = 1 }), "", notify.ProblemInvalid, "(unnamed)"},
		{"bad e164 no plus", body(func(m map[string]any) { m["to"] = "14155550100" }), "", notify.ProblemInvalid, "to"},
		{"bad e164 letters", body(func(m map[string]any) { m["to"] = "+1415CALLME" }), "", notify.ProblemInvalid, "to"},
		{"bad e164 too long", body(func(m map[string]any) { m["to"] = "+1234567890123456" }), "", notify.ProblemInvalid, "to"},
		{"wrong type", body(func(m map[string]any) { m["to"] = 14155550100 }), "", notify.ProblemInvalid, "to"},
		{"far past", body(func(m map[string]any) { m["expires_at"] = t0.Add(-2 * time.Hour).Format(time.RFC3339) }), "", notify.ProblemInvalid, "expires_at"},
		{"far ahead", body(func(m map[string]any) { m["expires_at"] = t0.Add(25 * time.Hour).Format(time.RFC3339) }), "", notify.ProblemInvalid, "expires_at"},
		{"not rfc3339", body(func(m map[string]any) { m["expires_at"] = "tomorrow" }), "", notify.ProblemInvalid, "expires_at"},
		{"bad key", body(func(m map[string]any) { m["idempotency_key"] = "a b" }), "", notify.ProblemInvalid, "idempotency_key"},
		{"long header key", body(nil), long, notify.ProblemInvalid, "Idempotency-Key"},
		{"unknown purpose", body(func(m map[string]any) { m["purpose"] = "marketing" }), "", notify.ProblemInvalid, "purpose"},
		{"wrong channel", body(func(m map[string]any) { m["channel"] = "email" }), "", notify.ProblemInvalid, "channel"},
		{"missing params", body(func(m map[string]any) { delete(m, "params") }), "", notify.ProblemInvalid, "params"},
		{"empty params", body(func(m map[string]any) { m["params"] = map[string]any{} }), "", notify.ProblemInvalid, "params"},
		{"both params", body(func(m map[string]any) {
			m["params"] = map[string]any{"code": "1234", "reset_url": "https://x.example/"}
		}), "", notify.ProblemInvalid, "params"},
		{"unknown param", body(func(m map[string]any) { m["params"] = map[string]any{"link": "https://x.example/"} }), "", notify.ProblemInvalid, "params.link"},
		{"http url", body(func(m map[string]any) { m["params"] = map[string]any{"reset_url": "http://x.example/"} }), "", notify.ProblemInvalid, "params.reset_url"},
		{"bad code", body(func(m map[string]any) { m["params"] = map[string]any{"code": "12"} }), "", notify.ProblemInvalid, "params.code"},
		{"bad locale", body(func(m map[string]any) { m["locale"] = "english" }), "", notify.ProblemInvalid, "locale"},
		{"keys disagree", body(func(m map[string]any) { m["idempotency_key"] = "k-a" }), "k-b", notify.ProblemKeyMismatch, "idempotency_key"},
	}
	secrets := []string{"14155550100", "shop.example", "x.example", "CALLME"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := notify.ParseRequest(tc.body, tc.header, t0, p)
			var ve *notify.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			if ve.Kind != tc.kind {
				t.Errorf("kind = %s, want %s (%v)", ve.Kind, tc.kind, err)
			}
			if tc.field != "" && !hasField(ve, tc.field) {
				t.Errorf("fields = %+v, want one named %q", ve.Fields, tc.field)
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q repeats submitted value %q", err, s)
				}
			}
		})
	}
}

func hasField(ve *notify.ValidationError, name string) bool {
	for _, f := range ve.Fields {
		if f.Field == name {
			return true
		}
	}
	return false
}

func TestCanonical(t *testing.T) {
	p := notify.DefaultPolicy()
	a, err := notify.ParseRequest(body(nil), "k", t0, p)
	if err != nil {
		t.Fatal(err)
	}
	// Same instant in another zone, same fields in another order: same canonical form.
	b, err := notify.ParseRequest([]byte(`{"to":"+14155550100","params":{"reset_url":"https://shop.example/r/abc"},"purpose":"password_reset","channel":"sms","event_id":"evt-1","locale":"en","expires_at":"`+t0.Add(15*time.Minute).In(time.FixedZone("X", 3600)).Format(time.RFC3339)+`"}`), "other-key", t0, p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Canonical(), b.Canonical()) {
		t.Errorf("equivalent requests have different canonical forms:\n%s\n%s", a.Canonical(), b.Canonical())
	}
	c, _ := notify.ParseRequest(body(func(m map[string]any) { m["to"] = "+14155550101" }), "k", t0, p)
	if bytes.Equal(a.Canonical(), c.Canonical()) {
		t.Error("different destination, same canonical form")
	}
	if bytes.Contains(a.Canonical(), []byte(`"k"`)) {
		t.Errorf("canonical form %s holds the idempotency key", a.Canonical())
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := notify.DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy invalid: %v", err)
	}
	bad := notify.DefaultPolicy()
	bad.Version, bad.MaxAttempts, bad.SafetyMargin = "", 0, -time.Second
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad policy accepted")
	}
	for _, want := range []string{"version", "attempts", "negative"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := notify.DefaultPolicy().Deadline(t0); !got.Equal(t0.Add(-60 * time.Second)) {
		t.Errorf("Deadline = %s", got)
	}
}

// FuzzValidURL checks that whatever ValidURL admits, net/url reads as the rule promises: an
// https URL on a DNS host name (no IP literal) without userinfo, port or fragment, in
// printable ASCII. The table of cases, held against openapi.yaml, is in the root
// openapi_url_test.go; `go test -fuzz FuzzValidURL ./shared/notify` searches further.
func FuzzValidURL(f *testing.F) {
	for _, s := range []string{
		"https://bank.example/reset?t=abc", "https://bank.example", "https://a.b?x=%41", "https://bank.example@evil.example/",
		"https://192.0.2.1/", "https://[::1]/", "https://bank.example:443/", "https://bank.example/#x", "https://b\u202Eank.example/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !notify.ValidURL(s) {
			return
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("ValidURL(%q) but net/url: %v", s, err)
		}
		if u.Scheme != "https" || u.Opaque != "" || u.User != nil || u.Port() != "" || u.Fragment != "" || u.Host != u.Hostname() {
			t.Fatalf("ValidURL(%q) but net/url reads scheme %q, user %v, host %q, fragment %q", s, u.Scheme, u.User, u.Host, u.Fragment)
		}
		if !strings.Contains(u.Host, ".") || net.ParseIP(u.Host) != nil || strings.HasSuffix(u.Host, ".") {
			t.Fatalf("ValidURL(%q) but its host %q is no DNS host name", s, u.Host)
		}
		for _, r := range s {
			if r <= ' ' || r >= 0x7f {
				t.Fatalf("ValidURL(%q) admits %U", s, r)
			}
		}
	})
}
