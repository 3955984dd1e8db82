package repocheck_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// urlCase is one reset_url (or link) and whether it must be admitted.
type urlCase struct {
	name  string
	url   string
	valid bool
}

// urlCases is the one table of the URL rule: TestURLRuleIsTheSpecs runs each case through the
// handler and through openapi.yaml.
func urlCases() []urlCase {
	const base = "https://bank.example/"
	label63 := strings.Repeat("a", 63)
	return []urlCase{
		{"path and query", "https://bank.example/reset?t=abc", true},
		{"no path", "https://bank.example", true},
		{"root path", base, true},
		{"query without a path", "https://bank.example?t=abc", true},
		{"%-escapes in the path and the query", "https://bank.example/r%C3%A9set/%E2%9C%93?t=a%2Fb%20c", true},
		{"every unescaped path and query character", "https://sub.bank.example/a-b_c.d~e!$&'()*+,;=:@/x?q=/?&r=1", true},
		{"shortest host", "https://a.b", true},
		{"label starting with a digit", "https://1bank.example/r", true},
		{"hyphens inside labels", "https://my-bank.co-op.example/r", true},
		{"upper-case host", "https://Bank.Example/R", true},
		{"label of 63 characters", "https://" + label63 + ".example/", true},
		{"punycode label (ASCII)", "https://xn--bnk-sna.example/r", true},
		{"@ in the path, not before the host", "https://bank.example/u/@me", true},
		{"exactly the length bound", base + strings.Repeat("a", notify.MaxURLLen-len(base)), true},

		{"one over the length bound", base + strings.Repeat("a", notify.MaxURLLen-len(base)+1), false},
		{"empty", "", false},
		{"http", "http://bank.example/reset", false},
		{"upper-case scheme", "HTTPS://bank.example/reset", false},
		{"no scheme", "//bank.example/reset", false},
		{"relative", "/reset?t=abc", false},
		{"javascript", "javascript:alert(1)", false},
		{"userinfo hiding the real host", "https://bank.example@evil.example/", false},
		{"user and password", "https://user:pw@bank.example/", false},
		{"empty userinfo", "https://@bank.example/", false},
		{"fragment", "https://bank.example/reset#t=abc", false},
		{"empty fragment", "https://bank.example/reset#", false},
		{"space in the path", "https://bank.example/re set", false},
		{"space in the query", "https://bank.example/reset?t=a b", false},
		{"leading space", " https://bank.example/", false},
		{"trailing space", "https://bank.example/ ", false},
		{"trailing newline", "https://bank.example/\n", false},
		{"tab", "https://bank.example/\tx", false},
		{"NUL", "https://bank.example/\x00", false},
		{"DEL", "https://bank.example/\x7f", false},
		{"IPv4 literal", "https://192.0.2.1/reset", false},
		{"IPv4 literal with a dot at the end", "https://192.0.2.1./reset", false},
		{"IPv4 in hex", "https://0x7f.0x1/", false},
		{"IPv4 as one number", "https://3221225985/", false},
		{"IPv6 literal", "https://[2001:db8::1]/reset", false},
		{"IPv4-mapped IPv6 literal", "https://[::ffff:192.0.2.1]/", false},
		{"port 443", "https://bank.example:443/reset", false},
		{"port 8443", "https://bank.example:8443/reset", false},
		{"empty port", "https://bank.example:/reset", false},
		{"single-label host", "https://localhost/reset", false},
		{"trailing dot", "https://bank.example./reset", false},
		{"empty label", "https://bank..example/", false},
		{"hyphen first in a label", "https://-bank.example/", false},
		{"hyphen last in a label", "https://bank-.example/", false},
		{"underscore in the host", "https://bank_x.example/", false},
		{"label of 64 characters", "https://" + label63 + "a.example/", false},
		{"last label starting with a digit", "https://bank.1example/", false},
		{"no host", "https:///reset", false},
		{"backslash before @", `https://bank.example\@evil.example/`, false},
		{"backslash in the path", `https://bank.example/a\b`, false},
		{"bad %-escape", "https://bank.example/%zz", false},
		{"cut %-escape", "https://bank.example/a%2", false},
		{"non-ASCII host", "https://bänk.example/reset", false},
		{"Cyrillic look-alike host", "https://bаnk.example/reset", false},
		{"non-ASCII path", "https://bank.example/rés", false},
		{"RIGHT-TO-LEFT OVERRIDE in the path", "https://bank.example/\u202Etxt.exe", false},
		{"RIGHT-TO-LEFT OVERRIDE in the host", "https://bank\u202E.example/", false},
		{"RIGHT-TO-LEFT MARK in the query", "https://bank.example/r?t=\u200F1", false},
		{"RIGHT-TO-LEFT ISOLATE", "https://bank.example/\u2067x", false},
		{"ZERO WIDTH SPACE", "https://bank.example/\u200Bx", false},
		{"fullwidth solidus", "https://bank.example\uFF0Fevil.example/", false},
		{"angle brackets", "https://bank.example/<script>", false},
		{"double quote", `https://bank.example/"x"`, false},
		{"braces, pipe, caret, backtick", "https://bank.example/{a}|^`", false},
		{"square brackets in the path", "https://bank.example/a[0]", false},
	}
}

// TestURLRuleIsTheSpecs runs every case of urlCases, as the reset_url of a password_reset and
// as the link of a magic_link, through the real handler and through openapi.yaml's request
// validation (kin-openapi), and requires both verdicts to be the expected one; the spec's
// pattern and length bound must also be notify's, character for character. A refusal names
// the param and never echoes the URL. Each admitted URL is also parsed by net/url, which must
// find what the rule promises: https, a DNS host name that is no IP, no userinfo, port or
// fragment.
func TestURLRuleIsTheSpecs(t *testing.T) {
	doc := loadSpec(t)
	spec := doc.Components.Schemas["HTTPSURL"].Value
	if spec.Pattern != notify.URLPattern || spec.MaxLength == nil || *spec.MaxLength != notify.MaxURLLen {
		t.Errorf("HTTPSURL: pattern %q, maxLength %v; want notify.URLPattern %q and %d", spec.Pattern, spec.MaxLength, notify.URLPattern, notify.MaxURLLen)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range urlCases() {
		for _, param := range []struct{ purpose, name string }{
			{notify.PurposePasswordReset, notify.ParamResetURL},
			{notify.PurposeMagicLink, notify.ParamLink},
		} {
			t.Run(param.name+"/"+tc.name, func(t *testing.T) {
				body := requestBody(param.purpose, map[string]any{param.name: tc.url}, 10*time.Minute, nil)
				specValid := specAdmits(t, router, body)
				handlerValid := handlerAdmits(t, body, param.name, tc.url)
				if specValid != tc.valid || handlerValid != tc.valid {
					t.Errorf("%q: spec valid = %v, handler admits = %v; want both %v", tc.url, specValid, handlerValid, tc.valid)
				}
				if tc.valid {
					checkParsed(t, tc.url)
				}
			})
		}
	}
}

// specAdmits reports whether openapi.yaml admits a POST of body.
func specAdmits(t *testing.T, router routers.Router, body string) bool {
	t.Helper()
	req := newRequest(http.MethodPost, "/v1/notifications", map[string]string{"Content-Type": "application/json"}, body)
	route, params, err := router.FindRoute(req)
	if err != nil {
		t.Fatal(err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	return openapi3filter.ValidateRequest(t.Context(), in) == nil
}

// handlerAdmits posts body to the real handler and reports whether it answered 202. Any other
// answer must be a 400 invalid-request naming params.<param>, without the URL in it.
func handlerAdmits(t *testing.T, body, param, rawURL string) bool {
	t.Helper()
	resp := newContractFixture(t).serve(http.MethodPost, "/v1/notifications", map[string]string{"Content-Type": "application/json"}, body)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusAccepted {
		return true
	}
	var p intake.Problem
	if err := json.Unmarshal(b, &p); err != nil || resp.StatusCode != http.StatusBadRequest || p.Type != intake.ProblemInvalidRequest.URI() {
		t.Fatalf("status %d, body %s, want 202 or 400 invalid-request", resp.StatusCode, b)
	}
	if len(p.Errors) != 1 || p.Errors[0].Field != "params."+param {
		t.Errorf("errors = %+v, want one for params.%s", p.Errors, param)
	}
	if rawURL != "" {
		escaped, _ := json.Marshal(rawURL)
		for _, form := range []string{rawURL, strings.Trim(string(escaped), `"`), url.QueryEscape(rawURL), url.PathEscape(rawURL)} {
			if strings.Contains(string(b), form) {
				t.Errorf("the refusal echoes the URL: %s", b)
			}
		}
	}
	return false
}

// checkParsed parses an admitted URL with net/url and checks the rule's promises hold there.
func checkParsed(t *testing.T, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		t.Errorf("net/url cannot parse an admitted URL: %v", err)
	case u.Scheme != "https" || u.Opaque != "" || u.User != nil || u.Port() != "" || u.Fragment != "" || strings.Contains(raw, "#"):
		t.Errorf("admitted %q has scheme %q, opaque %q, user %v, port %q, fragment %q", raw, u.Scheme, u.Opaque, u.User, u.Port(), u.Fragment)
	case u.Host != u.Hostname() || !strings.Contains(u.Host, ".") || net.ParseIP(u.Hostname()) != nil:
		t.Errorf("admitted %q has host %q, not a DNS host name", raw, u.Host)
	}
}
