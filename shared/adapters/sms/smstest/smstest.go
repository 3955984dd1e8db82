// Package smstest is the fake HTTP provider the SMS adapter tests share: an httptest server
// that records every request and answers with a chosen handler, the handlers for the ways a
// provider can answer or fail, and table runners for the Send and Lookup cases every adapter
// must classify the same way.
package smstest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// The secrets of every test send: no error an adapter returns may contain them.
const (
	Number = "+447700900123"
	Body   = "Your code is 918273. SECRET"
)

// Request is one request the fake provider received.
type Request struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Body         []byte
}

// Provider is an httptest server that records requests and answers with a handler.
type Provider struct {
	URL  string
	mu   sync.Mutex
	reqs []Request
}

// NewProvider starts a Provider answering with h; it stops when t ends.
func NewProvider(t *testing.T, h http.HandlerFunc) *Provider {
	p := &Provider{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.reqs = append(p.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: b})
		p.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Requests returns the requests received so far.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.reqs...)
}

// Reply answers with code, the given headers and body.
func Reply(code int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// JSON answers with code and a JSON body, with a Retry-After header when retryAfter is not
// empty.
func JSON(code int, retryAfter, body string) http.HandlerFunc {
	h := map[string]string{"Content-Type": "application/json"}
	if retryAfter != "" {
		h["Retry-After"] = retryAfter
	}
	return Reply(code, h, body)
}

// Hijack reads the request, takes over the connection, calls then with it and closes it: the
// provider got the request and the client sees whatever then wrote, or a dropped connection.
func Hijack(then func(net.Conn)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		buf.Flush()
		then(conn)
		conn.Close()
	}
}

// Drop takes the request and closes the connection without an answer.
var Drop = Hijack(func(net.Conn) {})

// Hang reads the request and answers nothing until the client hangs up (or five seconds pass,
// so that a client without a timeout does not hold a test's server open).
func Hang(w http.ResponseWriter, r *http.Request) {
	// The server notices a client hanging up only once the body has been read.
	io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// ClosedURL returns the URL of a loopback port nothing listens on.
func ClosedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// SendCase is one way a provider answers a send, and the outcome the adapter must make of it.
type SendCase struct {
	Name    string
	Handler http.HandlerFunc // nil: the send dials a port nothing listens on
	Hangs   bool             // the case waits for the client timeout

	Class      sms.Class
	Reason     notify.Reason
	MessageID  string
	RetryAfter time.Duration
	Code       string
	// Failover, when true, requires an outcome that lets the next attempt go to another
	// provider (sms.Outcome.FailoverAllowed); a Rejected case without it requires one that
	// does not.
	Failover bool
}

// SendSuite runs SendCases against one adapter.
type SendSuite struct {
	Cases []SendCase
	// HangTimeout is the client timeout for the cases that hang; the others get ten seconds.
	HangTimeout time.Duration
	// Send sends one request to the provider at baseURL with a client of the given timeout.
	Send func(t *testing.T, baseURL string, timeout time.Duration) sms.Outcome
	// CheckRequest checks the one request the provider received.
	CheckRequest func(t *testing.T, r Request)
	// Retried names who would retry a send, for the message when there is more than one
	// request (for example "the SDK").
	Retried string
}

// Run runs every case as a subtest: the outcome must match the case, carry a diagnostic
// error unless accepted, and leak neither secret; the provider must have received exactly
// one request, never a retry.
func (s SendSuite) Run(t *testing.T) {
	for _, tc := range s.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			base := ClosedURL(t)
			var p *Provider
			if tc.Handler != nil {
				p = NewProvider(t, tc.Handler)
				base = p.URL
			}
			timeout := 10 * time.Second
			if tc.Hangs {
				timeout = s.HangTimeout
			}
			CheckOutcome(t, s.Send(t, base, timeout), tc)
			if p == nil {
				return
			}
			reqs := p.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want exactly 1: a send is never retried by %s", len(reqs), s.Retried)
			}
			s.CheckRequest(t, reqs[0])
		})
	}
}

// CheckOutcome fails t unless out has want's class, reason, message ID, retry delay and code,
// carries a diagnostic error unless accepted, and its error names neither secret.
func CheckOutcome(t *testing.T, out sms.Outcome, want SendCase) {
	t.Helper()
	if out.Class != want.Class || out.Reason() != want.Reason {
		t.Fatalf("outcome %s (reason %s, err %v), want %s / %s", out, out.Reason(), out.Err, want.Class, want.Reason)
	}
	if (want.Failover || want.Class == sms.ClassRejected) && out.FailoverAllowed() != want.Failover {
		t.Errorf("outcome %s allows failover = %v, want %v", out, out.FailoverAllowed(), want.Failover)
	}
	if out.MessageID != want.MessageID || out.RetryAfter != want.RetryAfter || out.Code != want.Code {
		t.Errorf("outcome %s: want message ID %q, retry after %s, code %q", out, want.MessageID, want.RetryAfter, want.Code)
	}
	if out.Err != nil {
		if msg := out.Err.Error(); strings.Contains(msg, strings.TrimPrefix(Number, "+")) || strings.Contains(msg, "SECRET") {
			t.Errorf("error leaks a secret: %s", msg)
		}
	} else if want.Class != sms.ClassAccepted {
		t.Error("no diagnostic error")
	}
}

// LookupCase is one answer a provider gives to a lookup, and the result the adapter must make
// of it.
type LookupCase struct {
	Name      string
	MessageID string // the message ID the lookup knows; empty: look up by reference
	Handler   http.HandlerFunc
	Now       time.Time
	WantPath  string
	WantQuery url.Values
	Want      sms.LookupResult
	WantErr   bool
}

// LookupSuite runs LookupCases against one adapter.
type LookupSuite struct {
	Cases []LookupCase
	// Lookup looks the case's attempt up at the provider at baseURL, the clock at now.
	Lookup func(t *testing.T, baseURL string, now time.Time, messageID string) (sms.LookupResult, error)
	// Auth is the Authorization header every lookup must carry.
	Auth string
}

// Run runs every case as a subtest: the result and error must match the case, and the
// provider must have received exactly one GET with the case's path and query, no body and
// the suite's Authorization.
func (s LookupSuite) Run(t *testing.T) {
	for _, tc := range s.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			p := NewProvider(t, tc.Handler)
			got, err := s.Lookup(t, p.URL, tc.Now, tc.MessageID)
			if (err != nil) != tc.WantErr {
				t.Fatalf("error %v, wantErr %v", err, tc.WantErr)
			}
			if diff := cmp.Diff(tc.Want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			reqs := p.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if auth := r.Header.Get("Authorization"); r.Method != http.MethodGet || r.Path != tc.WantPath || auth != s.Auth || len(r.Body) != 0 {
				t.Errorf("request %s %s auth=%q body=%q", r.Method, r.Path, auth, r.Body)
			}
			want := tc.WantQuery
			if want == nil {
				want = url.Values{}
			}
			if diff := cmp.Diff(want, r.Query); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

// CheckJSONPost fails t unless r is a JSON POST to path with auth as its Authorization and no
// Idempotency-Key (the providers' keys would make a re-send look safe when it is not).
func CheckJSONPost(t *testing.T, r Request, path, auth string) {
	t.Helper()
	if a, typ, key := r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"); r.Method != http.MethodPost || r.Path != path || a != auth || typ != "application/json" || key != "" {
		t.Errorf("request %s %s auth=%q type=%q idempotency-key=%q", r.Method, r.Path, a, typ, key)
	}
}

// CheckBody decodes r's JSON body into a new T and fails t unless it equals want.
func CheckBody[T any](t *testing.T, r Request, want T) {
	t.Helper()
	var got T
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatalf("request body %s: %v", r.Body, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

// TransportCases are the send cases every HTTP adapter classifies alike, whatever its
// provider: the connection closed after the request was read (unknown, connection lost), an
// answer slower than the client timeout (unknown, timeout), and a refused dial (not accepted:
// nothing was written).
func TransportCases() []SendCase {
	return []SendCase{
		{Name: "connection closed after the request was read", Handler: Drop, Class: sms.ClassUnknown, Reason: notify.ReasonConnectionLost},
		{Name: "slower than the client timeout", Handler: Hang, Class: sms.ClassUnknown, Reason: notify.ReasonProviderTimeout, Hangs: true},
		{Name: "dial refused", Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderUnavailable},
	}
}
