package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/client"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
)

const (
	phone = "+15555550100"
	code  = "482913"
)

// recorded is one request the scripted server received.
type recorded struct {
	at     time.Time
	method string
	path   string
	header http.Header
	body   []byte
}

// scripted is a test server that answers each request with the next answer of its script;
// the last answer repeats.
type scripted struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	answers []http.HandlerFunc
	reqs    []recorded
}

func newScripted(t *testing.T, answers ...http.HandlerFunc) *scripted {
	t.Helper()
	s := &scripted{t: t, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, recorded{at: time.Now(), method: r.Method, path: r.URL.EscapedPath(), header: r.Header.Clone(), body: body})
	i := min(len(s.reqs), len(s.answers)) - 1
	answer := s.answers[i]
	s.mu.Unlock()
	answer(w, r)
}

func (s *scripted) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

// fast are options with short delays, so retries take milliseconds.
func fast(endpoint string) client.Options {
	return client.Options{Endpoint: endpoint, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, TryTimeout: 2 * time.Second}
}

func newClient(t *testing.T, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func statusJSON(key, state string) string {
	return fmt.Sprintf(`{"idempotency_key":%q,"notification_id":"01JC00000000000000000000N1","event_id":"evt-1","channel":"sms",`+
		`"purpose":"one_time_code","state":%q,"reason":"ADMITTED","version":1,"attempt":0,"created_at":"2026-11-01T12:00:00Z",`+
		`"updated_at":"2026-11-01T12:00:00Z","expires_at":"2026-11-01T12:10:00Z","dispatch_deadline":"2026-11-01T12:09:00Z",`+
		`"policy_version":"default-1","safety_margin_ms":60000}`, key, state)
}

func answer(status int, headers map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func accepted(key string) http.HandlerFunc {
	return answer(202, map[string]string{"Content-Type": "application/json", "Location": "/v1/notifications/" + key}, statusJSON(key, "accepted"))
}

func replayed(key string) http.HandlerFunc {
	return answer(200, map[string]string{"Content-Type": "application/json", "Idempotent-Replayed": "true"}, statusJSON(key, "accepted"))
}

func problem(status int, slug string, extra string) http.HandlerFunc {
	body := fmt.Sprintf(`{"type":"https://resetnotify.dev/problems/%s","title":"t","status":%d,"detail":"d","instance":"urn:resetnotify:request:r1"%s}`, slug, status, extra)
	return answer(status, map[string]string{"Content-Type": "application/problem+json", "X-Request-Id": "r1"}, body)
}

// withHeader adds one header to h's answer.
func withHeader(h http.HandlerFunc, k, v string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(k, v)
		h(w, r)
	}
}

// TestRateLimitedCarriesRetryAfter checks that a guard's refusal tells when the key may be
// sent again.
func TestRateLimitedCarriesRetryAfter(t *testing.T) {
	s := newScripted(t, withHeader(problem(429, "rate-limited", ""), "Retry-After", "1800"))
	_, err := newClient(t, fast(s.srv.URL)).Send(t.Context(), otc())
	var ae *client.APIError
	if !errors.As(err, &ae) || !errors.Is(err, client.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if ae.RetryAfter != 30*time.Minute {
		t.Errorf("RetryAfter = %v, want 30m", ae.RetryAfter)
	}
}

func gateway(status int, headers map[string]string) http.HandlerFunc {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	return answer(status, h, `{"message":"`+http.StatusText(status)+`"}`)
}

// dropConnection closes the connection without answering.
func dropConnection(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// hang answers nothing until the client gives up on the try.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func otc() client.Notification {
	return client.Notification{EventID: "evt-1", Purpose: client.PurposeOneTimeCode, To: phone,
		Params: map[string]string{client.ParamCode: code}, ExpiresAt: time.Now().Add(10 * time.Minute)}
}

const derivedKey = "evt-1:sms:one_time_code"

func TestSendFirstAdmission(t *testing.T) {
	s := newScripted(t, accepted(derivedKey))
	n := otc()
	res, err := newClient(t, fast(s.srv.URL)).Send(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	if res.NotificationID != "01JC00000000000000000000N1" || res.State != "accepted" || res.Replayed || res.Tries != 1 ||
		res.Location != "/v1/notifications/"+derivedKey {
		t.Errorf("result = %+v", res)
	}
	req := s.requests()[0]
	if req.method != "POST" || req.path != "/v1/notifications" || req.header.Get("Idempotency-Key") != derivedKey ||
		req.header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s headers %v", req.method, req.path, req.header)
	}
	var body map[string]any
	if err := json.Unmarshal(req.body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"event_id": "evt-1", "channel": "sms", "purpose": "one_time_code", "to": phone,
		"params": map[string]any{"code": code}, "expires_at": n.ExpiresAt.UTC().Format(time.RFC3339Nano)}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestSendUsesTheCallersKey(t *testing.T) {
	s := newScripted(t, accepted("order-7781"))
	n := otc()
	n.IdempotencyKey = "order-7781"
	if _, err := newClient(t, fast(s.srv.URL)).Send(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if got := s.requests()[0].header.Get("Idempotency-Key"); got != "order-7781" {
		t.Errorf("Idempotency-Key = %q", got)
	}
}

// TestSendRetries checks each retryable answer is repeated with the same key and body until a
// success, and that a replay (200) is that success.
func TestSendRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []http.HandlerFunc
		replay  bool
	}{
		{"503 from the handler", []http.HandlerFunc{problem(503, "dispatch-queue-unavailable", ""), replayed(derivedKey)}, true},
		{"503 from the gateway", []http.HandlerFunc{gateway(503, nil), accepted(derivedKey)}, false},
		{"500, 502, 504", []http.HandlerFunc{problem(500, "internal-error", ""), gateway(502, nil), gateway(504, nil), replayed(derivedKey)}, true},
		{"429 with Retry-After 0", []http.HandlerFunc{gateway(429, map[string]string{"Retry-After": "0"}), accepted(derivedKey)}, false},
		{"dropped connection", []http.HandlerFunc{dropConnection, replayed(derivedKey)}, true},
		{"try timeout", []http.HandlerFunc{hang, replayed(derivedKey)}, true},
		{"success with a cut body", []http.HandlerFunc{answer(202, map[string]string{"Content-Type": "application/json"}, `{"idem`), replayed(derivedKey)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, tc.answers...)
			opts := fast(s.srv.URL)
			opts.TryTimeout = time.Second
			res, err := newClient(t, opts).Send(t.Context(), otc())
			if err != nil {
				t.Fatal(err)
			}
			reqs := s.requests()
			if res.Tries != len(tc.answers) || len(reqs) != len(tc.answers) || res.Replayed != tc.replay {
				t.Errorf("tries = %d, requests = %d, replayed = %v; want %d, %d, %v", res.Tries, len(reqs), res.Replayed, len(tc.answers), len(tc.answers), tc.replay)
			}
			for _, r := range reqs[1:] {
				if r.header.Get("Idempotency-Key") != derivedKey || !bytes.Equal(r.body, reqs[0].body) {
					t.Errorf("a repeat changed the key or body: %q %s", r.header.Get("Idempotency-Key"), r.body)
				}
			}
		})
	}
}

// TestSendDoesNotRetryFinalAnswers checks that each answer no repeat can change is returned at
// once, as the matching typed error.
func TestSendDoesNotRetryFinalAnswers(t *testing.T) {
	fields := `,"errors":[{"field":"to","detail":"must be an E.164 number: + then 7 to 15 digits"}]`
	for _, tc := range []struct {
		answer http.HandlerFunc
		want   error
	}{
		{problem(400, "invalid-request", fields), client.ErrInvalidRequest},
		{problem(400, "malformed-request", ""), client.ErrInvalidRequest},
		{gateway(403, nil), client.ErrForbidden},
		{problem(413, "payload-too-large", ""), client.ErrPayloadTooLarge},
		{problem(415, "unsupported-media-type", ""), client.ErrUnsupportedMediaType},
		{problem(422, "idempotency-key-reused", ""), client.ErrKeyReused},
		{problem(422, "destination-not-allowed", ""), client.ErrDestinationNotAllowed},
		{withHeader(problem(429, "rate-limited", ""), "Retry-After", "3600"), client.ErrRateLimited},
		{withHeader(problem(429, "prefix-rate-limited", ""), "Retry-After", "42"), client.ErrRateLimited},
	} {
		t.Run(tc.want.Error(), func(t *testing.T) {
			s := newScripted(t, tc.answer, accepted(derivedKey))
			_, err := newClient(t, fast(s.srv.URL)).Send(t.Context(), otc())
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var ae *client.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err %T is not an *APIError", err)
			}
			if n := len(s.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			for _, other := range []error{client.ErrNotFound, client.ErrNotCancellable, client.ErrUnavailable, client.ErrThrottled,
				client.ErrKeyReused, client.ErrDestinationNotAllowed, client.ErrRateLimited} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("err also matches %v", other)
				}
			}
		})
	}
}

func TestInvalidRequestCarriesFieldErrors(t *testing.T) {
	s := newScripted(t, problem(400, "invalid-request", `,"errors":[{"field":"to","detail":"must be an E.164 number"},{"field":"params.code","detail":"must be 4 to 12 letters or digits"}]`))
	_, err := newClient(t, fast(s.srv.URL)).Send(t.Context(), otc())
	var ae *client.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v", err)
	}
	want := []client.FieldError{{Field: "to", Detail: "must be an E.164 number"}, {Field: "params.code", Detail: "must be 4 to 12 letters or digits"}}
	if diff := cmp.Diff(want, ae.FieldErrors()); diff != "" {
		t.Errorf("field errors (-want +got):\n%s", diff)
	}
	if ae.Problem.Type != client.ProblemInvalidRequest || ae.RequestID != "r1" {
		t.Errorf("problem = %+v, request ID %q", ae.Problem, ae.RequestID)
	}
	if !strings.Contains(err.Error(), "params.code must be 4 to 12") {
		t.Errorf("error does not name the fields: %v", err)
	}
}

// TestErrorsHoldNoSecret checks that no error of the client, whatever the answer, holds the
// number or the param, and that a network error does not quote the endpoint's URL.
func TestErrorsHoldNoSecret(t *testing.T) {
	for _, a := range []http.HandlerFunc{
		problem(400, "invalid-request", `,"errors":[{"field":"to","detail":"must be an E.164 number"}]`),
		gateway(503, nil), dropConnection, hang,
	} {
		s := newScripted(t, a)
		opts := fast(s.srv.URL)
		opts.MaxAttempts, opts.TryTimeout = 2, 100*time.Millisecond
		_, err := newClient(t, opts).Send(t.Context(), otc())
		if err == nil {
			t.Fatal("no error")
		}
		for _, secret := range []string{phone, code, s.srv.URL} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q holds %q", err, secret)
			}
		}
	}
}

// TestRetryAfterIsHonoured checks that the repeat waits at least as long as Retry-After says,
// even though the backoff alone would be a few milliseconds.
func TestRetryAfterIsHonoured(t *testing.T) {
	s := newScripted(t, gateway(429, map[string]string{"Retry-After": "1"}), accepted(derivedKey))
	if _, err := newClient(t, fast(s.srv.URL)).Send(t.Context(), otc()); err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second {
		t.Errorf("repeat after %v, want at least the Retry-After of 1 s", gap)
	}
}

// TestRetryAfterPastTheDeadlineStops checks that a Retry-After that would end after the
// context's deadline ends the call at once, with the last answer, instead of waiting.
func TestRetryAfterPastTheDeadlineStops(t *testing.T) {
	s := newScripted(t, gateway(503, map[string]string{"Retry-After": "30"}), accepted(derivedKey))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := newClient(t, fast(s.srv.URL)).Send(ctx, otc())
	if !errors.Is(err, client.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("err = %v (context %v), want ErrUnavailable before the deadline", err, ctx.Err())
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestSendEndsByItsDeadline checks that a call against a server that is always unavailable
// ends before its context's deadline, with the last answer.
func TestSendEndsByItsDeadline(t *testing.T) {
	s := newScripted(t, gateway(503, nil))
	opts := fast(s.srv.URL)
	opts.MaxAttempts, opts.MaxDelay = 1000, 50*time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	_, err := newClient(t, opts).Send(ctx, otc())
	if !time.Now().Before(dl) {
		t.Errorf("Send returned after its context's deadline")
	}
	if !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	if len(s.requests()) < 2 {
		t.Errorf("only %d requests: no retry happened", len(s.requests()))
	}
}

// TestSendStopsAtExpiresAt checks that no try starts after the notification's expires_at,
// although the context would allow more.
func TestSendStopsAtExpiresAt(t *testing.T) {
	s := newScripted(t, gateway(503, nil))
	clock := &fakeClock{at: time.Now()}
	starts := &startRecorder{now: clock.now}
	opts := fast(s.srv.URL)
	opts.MaxAttempts, opts.MaxDelay, opts.HTTPClient = 1000, 20*time.Millisecond, starts
	c := newClient(t, opts)
	client.SetNow(c, clock.now)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		clock.advance(d)
		return ctx.Err()
	})
	n := otc()
	n.ExpiresAt = clock.now().Add(time.Second)
	_, err := c.Send(t.Context(), n)
	if !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	at := starts.times()
	if len(at) < 2 {
		t.Fatalf("only %d tries: no retry happened", len(at))
	}
	for _, start := range at {
		if !start.Before(n.ExpiresAt) {
			t.Errorf("a try started %v after expires_at", start.Sub(n.ExpiresAt))
		}
	}
}

// TestLateTimerStartsNoTryPastExpiresAt checks the deadline is checked again after a backoff,
// whose timer may fire later than asked.
func TestLateTimerStartsNoTryPastExpiresAt(t *testing.T) {
	s := newScripted(t, gateway(503, nil))
	clock := &fakeClock{at: time.Now()}
	starts := &startRecorder{now: clock.now}
	opts := fast(s.srv.URL)
	opts.HTTPClient = starts
	c := newClient(t, opts)
	client.SetNow(c, clock.now)
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		clock.advance(d + 300*time.Millisecond)
		return ctx.Err()
	})
	n := otc()
	n.ExpiresAt = clock.now().Add(200 * time.Millisecond)
	if _, err := c.Send(t.Context(), n); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
	at := starts.times()
	if len(at) != 1 {
		t.Errorf("%d tries, want the first only: the late timer's try would start past expires_at", len(at))
	}
	for _, start := range at {
		if !start.Before(n.ExpiresAt) {
			t.Errorf("a try started %v after expires_at", start.Sub(n.ExpiresAt))
		}
	}
}

// fakeClock is a clock that moves only when a test's sleep moves it.
type fakeClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

type startRecorder struct {
	mu sync.Mutex
	at []time.Time
	// now is the clock a start is read from (time.Now when nil).
	now func() time.Time
}

func (r *startRecorder) Do(req *http.Request) (*http.Response, error) {
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	r.mu.Lock()
	r.at = append(r.at, now())
	r.mu.Unlock()
	return http.DefaultClient.Do(req)
}

func (r *startRecorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at...)
}

// TestCancellationStopsRetries checks that cancelling the context ends the call during its
// backoff, with an error that matches context.Canceled.
func TestCancellationStopsRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		gateway(503, map[string]string{"Retry-After": "3"})(w, r)
	})
	_, err := newClient(t, fast(s.srv.URL)).Send(ctx, otc())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests after cancellation, want 1", n)
	}
}

func TestStatusAndCancel(t *testing.T) {
	s := newScripted(t, answer(200, map[string]string{"Content-Type": "application/json"}, statusJSON("k:1", "accepted")))
	c := newClient(t, fast(s.srv.URL))
	st, err := c.Status(t.Context(), "k:1")
	if err != nil || st.State != "accepted" || st.ExpiresAt.IsZero() {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	if _, err := c.Cancel(t.Context(), "k:1"); err != nil {
		t.Fatal(err)
	}
	reqs := s.requests()
	if reqs[0].method != "GET" || reqs[1].method != "DELETE" || reqs[0].path != "/v1/notifications/k:1" {
		t.Errorf("requests: %s %s, %s %s", reqs[0].method, reqs[0].path, reqs[1].method, reqs[1].path)
	}
}

func TestCancelAnswers(t *testing.T) {
	cancelled := answer(200, map[string]string{"Content-Type": "application/json"}, statusJSON("k1", "cancelled"))
	for _, tc := range []struct {
		name     string
		answers  []http.HandlerFunc
		want     error
		requests int
	}{
		{"already cancelled is the status", []http.HandlerFunc{problem(409, "not-cancellable", `,"state":"cancelled","reason":"CANCELLED"`), cancelled}, nil, 2},
		{"sent is not cancellable", []http.HandlerFunc{problem(409, "not-cancellable", `,"state":"sent","reason":"PROVIDER_ACCEPTED"`)}, client.ErrNotCancellable, 1},
		{"concurrent change is repeated", []http.HandlerFunc{problem(409, "concurrent-change", ""), cancelled}, nil, 2},
		{"not found", []http.HandlerFunc{problem(404, "notification-not-found", "")}, client.ErrNotFound, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, tc.answers...)
			st, err := newClient(t, fast(s.srv.URL)).Cancel(t.Context(), "k1")
			if !errors.Is(err, tc.want) || (err == nil && st.State != "cancelled") {
				t.Errorf("Cancel = %+v, %v; want error %v", st, err, tc.want)
			}
			if n := len(s.requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestRequestsAreSigned checks every try carries a SigV4 signature for execute-api in the
// endpoint's region that the same credentials reproduce, body included, and that a repeat is
// signed afresh.
func TestRequestsAreSigned(t *testing.T) {
	s := newScripted(t, gateway(503, nil), accepted(derivedKey))
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret-key", "session-token")
	opts := fast(s.srv.URL)
	opts.Credentials, opts.Region = creds, "eu-west-1"
	if _, err := newClient(t, opts).Send(t.Context(), otc()); err != nil {
		t.Fatal(err)
	}
	for i, r := range s.requests() {
		auth := r.header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-1/execute-api/aws4_request") {
			t.Fatalf("try %d: Authorization = %q", i+1, auth)
		}
		if r.header.Get("X-Amz-Security-Token") != "session-token" {
			t.Errorf("try %d: no session token", i+1)
		}
		if got, want := auth, resign(t, s.srv.URL, r, creds); got != want {
			t.Errorf("try %d: signature does not verify:\n got %s\nwant %s", i+1, got, want)
		}
	}
}

// resign signs a copy of the recorded request again, at its own X-Amz-Date, and returns the
// Authorization header a correct signature has.
func resign(t *testing.T, base string, r recorded, creds aws.CredentialsProvider) string {
	t.Helper()
	at, err := time.Parse("20060102T150405Z", r.header.Get("X-Amz-Date"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(r.method, base+r.path, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.header {
		switch k {
		case "Authorization", "X-Amz-Date", "X-Amz-Security-Token", "Accept-Encoding", "Content-Length":
		default:
			req.Header[k] = v
		}
	}
	c, err := creds.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(r.body)
	if err := v4.NewSigner().SignHTTP(t.Context(), c, req, hex.EncodeToString(sum[:]), "execute-api", "eu-west-1", at); err != nil {
		t.Fatal(err)
	}
	return req.Header.Get("Authorization")
}

func TestNewOptions(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKID", "secret", "")
	for _, tc := range []struct {
		name   string
		opts   client.Options
		wantOK bool
	}{
		{"execute-api host names the region", client.Options{Endpoint: "https://abc123.execute-api.eu-west-1.amazonaws.com", Credentials: creds}, true},
		{"custom domain needs a region", client.Options{Endpoint: "https://api.shop.example/notify", Credentials: creds}, false},
		{"custom domain with a region", client.Options{Endpoint: "https://api.shop.example/notify", Credentials: creds, Region: "us-east-1"}, true},
		{"unsigned local stack", client.Options{Endpoint: "http://127.0.0.1:3000"}, true},
		{"not a URL", client.Options{Endpoint: "127.0.0.1:3000"}, false},
		{"query", client.Options{Endpoint: "https://h.example/?x=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := client.New(tc.opts); (err == nil) != tc.wantOK {
				t.Errorf("New: err = %v, want ok = %v", err, tc.wantOK)
			}
		})
	}
}

// TestEndpointBasePath checks the API's paths are appended to an endpoint's own base path.
func TestEndpointBasePath(t *testing.T) {
	s := newScripted(t, accepted(derivedKey))
	if _, err := newClient(t, fast(s.srv.URL+"/notify/")).Send(t.Context(), otc()); err != nil {
		t.Fatal(err)
	}
	if p := s.requests()[0].path; p != "/notify/v1/notifications" {
		t.Errorf("path = %q", p)
	}
}

// TestProblemTypesAreTheAPIs checks the client's problem type constants against the handler's.
func TestProblemTypesAreTheAPIs(t *testing.T) {
	for got, want := range map[string]intake.ProblemType{
		client.ProblemMalformedRequest:     intake.ProblemMalformedRequest,
		client.ProblemInvalidRequest:       intake.ProblemInvalidRequest,
		client.ProblemKeyMismatch:          intake.ProblemKeyMismatch,
		client.ProblemKeyReused:            intake.ProblemKeyReused,
		client.ProblemPayloadTooLarge:      intake.ProblemPayloadTooLarge,
		client.ProblemUnsupportedMediaType: intake.ProblemUnsupportedMediaType,
		client.ProblemNotificationNotFound: intake.ProblemNotificationNotFound,
		client.ProblemNotCancellable:       intake.ProblemNotCancellable,
		client.ProblemConcurrentChange:     intake.ProblemConcurrentChange,
		client.ProblemQueueUnavailable:     intake.ProblemQueueUnavailable,
		client.ProblemGuardUnavailable:     intake.ProblemGuardUnavailable,
		client.ProblemInternal:             intake.ProblemInternal,
	} {
		if got != want.URI() {
			t.Errorf("client has %q, the API %q", got, want.URI())
		}
	}
}

// TestHangingTryEndsBeforeTheDeadline checks that a try the server never answers is cut short
// of the context's deadline, so the call returns by it although the try timeout is longer.
func TestHangingTryEndsBeforeTheDeadline(t *testing.T) {
	s := newScripted(t, hang)
	opts := fast(s.srv.URL)
	opts.TryTimeout = time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	_, err := newClient(t, opts).Send(ctx, otc())
	if !time.Now().Before(dl) {
		t.Error("Send returned after its context's deadline")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want one that matches context.DeadlineExceeded", err)
	}
	// The try ended maxReserve (250 ms) before the deadline, too little for another of use: it
	// was the last. A second try squeezed into those 250 ms kept back only a tenth of them, and
	// a loaded machine returned after the deadline.
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d tries, want 1: none starts once less than its need plus maxReserve is left", n)
	}
}

// TestImportsNothingOfShared keeps the client light for callers: it must not pull in the
// functions' code (shared/...), nor anything of Lambda.
func TestImportsNothingOfShared(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/resetnotify/resetnotify/shared") || strings.HasPrefix(dep, "github.com/aws/aws-lambda-go") {
			t.Errorf("the client depends on %s", dep)
		}
	}
}

// TestWireTypesAreTheAPIs checks the client's JSON types against the handler's: the same fields,
// so a field the API adds or renames fails here first.
func TestWireTypesAreTheAPIs(t *testing.T) {
	for _, tc := range []struct{ client, api reflect.Type }{
		{reflect.TypeFor[client.Status](), reflect.TypeFor[intake.StatusView]()},
		{reflect.TypeFor[client.Attempt](), reflect.TypeFor[intake.AttemptView]()},
		{reflect.TypeFor[client.Problem](), reflect.TypeFor[intake.Problem]()},
		{reflect.TypeFor[client.FieldError](), reflect.TypeFor[notify.FieldError]()},
	} {
		if diff := cmp.Diff(jsonFields(tc.api), jsonFields(tc.client)); diff != "" {
			t.Errorf("%s (-API +client):\n%s", tc.client, diff)
		}
	}
}

// jsonFields returns the JSON tags of typ's fields. omitzero counts as omitempty: the client
// decodes times into time.Time, where only omitzero leaves a zero one out.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		out = append(out, strings.Replace(typ.Field(i).Tag.Get("json"), ",omitzero", ",omitempty", 1))
	}
	sort.Strings(out)
	return out
}

// TestVocabularyIsTheAPIs checks the client's channel, purposes and params against the domain
// core's.
func TestVocabularyIsTheAPIs(t *testing.T) {
	if diff := cmp.Diff(notify.Purposes(), []string{client.PurposeMagicLink, client.PurposeOneTimeCode, client.PurposePasswordReset}); diff != "" {
		t.Errorf("purposes (-API +client):\n%s", diff)
	}
	for got, want := range map[string]string{
		client.ChannelSMS: notify.ChannelSMS, client.ParamResetURL: notify.ParamResetURL,
		client.ParamCode: notify.ParamCode, client.ParamLink: notify.ParamLink,
	} {
		if got != want {
			t.Errorf("client has %q, the API %q", got, want)
		}
	}
}

func TestConvertAnswers(t *testing.T) {
	converted := strings.Replace(statusJSON("k1", "sent"), `"safety_margin_ms":60000}`, `"safety_margin_ms":60000,"converted_at":"2026-11-01T12:01:00Z"}`, 1)
	ok := answer(200, map[string]string{"Content-Type": "application/json"}, converted)
	again := withHeader(ok, "Idempotent-Replayed", "true")
	for _, tc := range []struct {
		name     string
		answers  []http.HandlerFunc
		want     error
		replayed bool
		requests int
	}{
		{"first", []http.HandlerFunc{ok}, nil, false, 1},
		{"feedback unavailable is repeated; the repeat replays", []http.HandlerFunc{
			withHeader(problem(503, "feedback-unavailable", ""), "Retry-After", "0"), again}, nil, true, 2},
		{"concurrent change is repeated", []http.HandlerFunc{problem(409, "concurrent-change", ""), ok}, nil, false, 2},
		{"never sent is final", []http.HandlerFunc{problem(409, "not-sent", `,"state":"dispatching","reason":"LEASE_ACQUIRED"`)}, client.ErrNotSent, false, 1},
		{"not found", []http.HandlerFunc{problem(404, "notification-not-found", "")}, client.ErrNotFound, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, tc.answers...)
			conv, err := newClient(t, fast(s.srv.URL)).Convert(t.Context(), "k1")
			if !errors.Is(err, tc.want) {
				t.Fatalf("Convert = %+v, %v; want error %v", conv, err, tc.want)
			}
			if err == nil && (conv.ConvertedAt.IsZero() || conv.Replayed != tc.replayed) {
				t.Errorf("Convert = %+v, want converted_at and replayed %v", conv, tc.replayed)
			}
			reqs := s.requests()
			if len(reqs) != tc.requests || reqs[0].method != "POST" || reqs[0].path != "/v1/notifications/k1/conversion" {
				t.Errorf("%d requests (%s %s), want %d POST .../k1/conversion", len(reqs), reqs[0].method, reqs[0].path, tc.requests)
			}
		})
	}
}
