package sinch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/sms/sinch"
)

const (
	number = "+447700900123"
	body   = "Your code is 918273. SECRET"
	ref    = "01JC0000000000000000000000-a3"
	plan   = "plan123"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 250_000_000, time.UTC)

type recorded struct {
	method, path, auth, contentType, idempotencyKey string
	query                                           url.Values
	body                                            []byte
}

type fake struct {
	mu   sync.Mutex
	reqs []recorded
	url  string
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func newFake(t *testing.T, h http.HandlerFunc) *fake {
	f := &fake{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), r.URL.Query(), b})
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func answer(code int, retryAfter, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func hijack(then func(net.Conn)) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		buf.Flush()
		then(conn)
		conn.Close()
	}
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

func newClient(t *testing.T, base string, now time.Time) *sinch.Client {
	return newClientTimeout(t, base, now, 10*time.Second)
}

func newClientTimeout(t *testing.T, base string, now time.Time, timeout time.Duration) *sinch.Client {
	t.Helper()
	c, err := sinch.New(sinch.Config{
		BaseURL: base, ServicePlanID: plan, APIToken: "tok", From: "ShopCo",
		CallbackURL: "https://hooks.example/sinch", Timeout: timeout,
		Visibility: 30 * time.Second, Clock: notifytest.NewClock(now),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSendClassifies(t *testing.T) {
	batch := fmt.Sprintf(`{"id":"01FC66621XXXXX119Z8PMV1QPQ","to":["%s"],"from":"ShopCo","canceled":false,"type":"mt_text","client_reference":"%s"}`, number, ref)
	echo := fmt.Sprintf(`{"code":"syntax_invalid_parameter_format","text":"%s is not a valid number"}`, number)
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		closedPort bool
		class      sms.Class
		reason     notify.Reason
		messageID  string
		retryAfter time.Duration
		code       string
		hangs      bool // the case waits for the client timeout
	}{
		{name: "201", handler: answer(201, "", batch), class: sms.ClassAccepted, reason: notify.ReasonProviderAccepted, messageID: "01FC66621XXXXX119Z8PMV1QPQ"},
		{name: "400 permanent", handler: answer(400, "", echo), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "syntax_invalid_parameter_format"},
		{name: "401", handler: answer(401, "", `{"code":"unauthorized","text":"no"}`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "unauthorized"},
		{name: "403", handler: answer(403, "", `{"code":"forbidden","text":"no"}`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "forbidden"},
		{name: "429 with Retry-After", handler: answer(429, "3", `{"code":"too_many_requests"}`), class: sms.ClassNotAccepted, reason: notify.ReasonProviderThrottled, retryAfter: 3 * time.Second, code: "too_many_requests"},
		{name: "503 is not documented as not processed", handler: answer(503, "3", ``), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "500", handler: answer(500, "", `{"code":"internal"}`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous, code: "internal"},
		{name: "502", handler: answer(502, "", `<html/>`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "504", handler: answer(504, "", ``), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "garbage 201 body", handler: answer(201, "", `{"id":`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "201 without an ID", handler: answer(201, "", `{"canceled":false}`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "201 body cut short", handler: hijack(func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n{\"id\":")
		}), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "connection closed after the request was read", handler: hijack(func(net.Conn) {}), class: sms.ClassUnknown, reason: notify.ReasonConnectionLost},
		{name: "slower than the client timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, class: sms.ClassUnknown, reason: notify.ReasonProviderTimeout, hangs: true},
		{name: "dial refused", closedPort: true, class: sms.ClassNotAccepted, reason: notify.ReasonProviderUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := closedPort(t)
			var f *fake
			if !tc.closedPort {
				f = newFake(t, tc.handler)
				base = f.url
			}
			timeout := 10 * time.Second
			if tc.hangs {
				timeout = 200 * time.Millisecond
			}
			out := newClientTimeout(t, base, t0, timeout).Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 89*time.Second + 900*time.Millisecond})
			if out.Class != tc.class || out.Reason() != tc.reason {
				t.Fatalf("outcome %s (reason %s, err %v), want %s / %s", out, out.Reason(), out.Err, tc.class, tc.reason)
			}
			if out.MessageID != tc.messageID || out.RetryAfter != tc.retryAfter || out.Code != tc.code {
				t.Errorf("outcome %s: want message ID %q, retry after %s, code %q", out, tc.messageID, tc.retryAfter, tc.code)
			}
			if out.Err != nil {
				if msg := out.Err.Error(); strings.Contains(msg, "447700900123") || strings.Contains(msg, "SECRET") {
					t.Errorf("error leaks a secret: %s", msg)
				}
			} else if tc.class != sms.ClassAccepted {
				t.Error("no diagnostic error")
			}
			if f == nil {
				return
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want exactly 1", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != "/xms/v1/plan123/batches" || r.auth != "Bearer tok" || r.contentType != "application/json" || r.idempotencyKey != "" {
				t.Errorf("request %s %s auth=%q type=%q idempotency-key=%q", r.method, r.path, r.auth, r.contentType, r.idempotencyKey)
			}
			var got map[string]any
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			want := map[string]any{
				"from":             "ShopCo",
				"to":               []any{number},
				"body":             body,
				"client_reference": ref,
				// 12:00:00.250 + 89 s, truncated to the second: never later than now + validity.
				"expire_at":       "2026-11-01T12:01:29.000Z",
				"delivery_report": "per_recipient",
				"callback_url":    "https://hooks.example/sinch",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("batch request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendValidity(t *testing.T) {
	f := newFake(t, answer(201, "", `{"id":"b1"}`))
	c := newClient(t, f.url, t0)
	out := c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 999 * time.Millisecond})
	if out.Class != sms.ClassNotAccepted || !errors.Is(out.Err, sms.ErrValidityTooShort) || len(f.requests()) != 0 {
		t.Fatalf("outcome %s (%v), %d requests; want a refusal without a call", out, out.Err, len(f.requests()))
	}
	out = c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 10 * 24 * time.Hour})
	if out.Class != sms.ClassAccepted {
		t.Fatalf("outcome %s (%v)", out, out.Err)
	}
	var got struct {
		ExpireAt string `json:"expire_at"`
	}
	json.Unmarshal(f.requests()[0].body, &got)
	if got.ExpireAt != "2026-11-04T12:00:00.000Z" {
		t.Errorf("expire_at %s, want clamped to 3 days", got.ExpireAt)
	}
}

func TestLookup(t *testing.T) {
	list := func(refs ...string) string {
		var bs []string
		for i, r := range refs {
			bs = append(bs, fmt.Sprintf(`{"id":"b%d","client_reference":"%s","canceled":false}`, i+1, r))
		}
		return fmt.Sprintf(`{"count":%d,"page":0,"page_size":100,"batches":[%s]}`, len(refs), strings.Join(bs, ","))
	}
	// page is the first page of a listing of count batches, n of them on the page, none of
	// them carrying ref.
	page := func(count, n int) string {
		var bs []string
		for i := range n {
			bs = append(bs, fmt.Sprintf(`{"id":"o%d","client_reference":"other-%d-a1","canceled":false}`, i, i))
		}
		return fmt.Sprintf(`{"count":%d,"page":0,"page_size":100,"batches":[%s]}`, count, strings.Join(bs, ","))
	}
	twice := sms.Found("b1", sms.ReceiptNone, time.Time{})
	twice.Matches = 2
	listQuery := url.Values{"client_reference": {ref}, "page_size": {"100"}, "start_date": {"2026-11-01T11:00:00.250Z"}}
	tests := []struct {
		name      string
		messageID string
		handler   http.HandlerFunc
		now       time.Time
		wantPath  string
		wantQuery url.Values
		want      sms.LookupResult
		wantErr   bool
	}{
		{name: "found by reference", handler: answer(200, "", list(ref)), now: t0, wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Found("b1", sms.ReceiptNone, time.Time{})},
		{name: "filter matched loosely", handler: answer(200, "", list(ref+"0", ref)), now: t0, wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Found("b2", sms.ReceiptNone, time.Time{})},
		{name: "found twice", handler: answer(200, "", list(ref, ref)), now: t0, wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: twice},
		{name: "found by batch ID", messageID: "b7", handler: answer(200, "", `{"id":"b7","client_reference":"`+ref+`"}`), now: t0, wantPath: "/xms/v1/plan123/batches/b7", wantQuery: url.Values{}, want: sms.Found("b7", sms.ReceiptNone, time.Time{})},
		{name: "batch of another attempt", messageID: "b7", handler: answer(200, "", `{"id":"b7","client_reference":"x-a1"}`), now: t0, wantPath: "/xms/v1/plan123/batches/b7", wantQuery: url.Values{}, want: sms.Inconclusive("reference_mismatch"), wantErr: true},
		{name: "nothing within the window", handler: answer(200, "", list()), now: t0.Add(29 * time.Second), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Inconclusive("not_visible_yet")},
		{name: "nothing after the window", handler: answer(200, "", list(ref+"0")), now: t0.Add(30 * time.Second), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.LookupResult{Status: sms.LookupNotFound}},
		{name: "no match on the first of more pages", handler: answer(200, "", page(150, 100)), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Inconclusive("more_pages")},
		{name: "no match on the only page", handler: answer(200, "", page(100, 100)), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.LookupResult{Status: sms.LookupNotFound}},
		{name: "batch ID not found", messageID: "b7", handler: answer(404, "", `{"code":"not_found"}`), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches/b7", wantQuery: url.Values{}, want: sms.LookupResult{Status: sms.LookupNotFound}},
		{name: "429", handler: answer(429, "1", ``), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "500", handler: answer(500, "", ``), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "garbage", handler: answer(200, "", `{`), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "connection dropped", handler: hijack(func(net.Conn) {}), now: t0.Add(time.Hour), wantPath: "/xms/v1/plan123/batches", wantQuery: listQuery, want: sms.Inconclusive("provider_error"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.handler)
			got, err := newClient(t, f.url, tc.now).Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, MessageID: tc.messageID, AttemptedAt: t0})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodGet || r.path != tc.wantPath || r.auth != "Bearer tok" || len(r.body) != 0 {
				t.Errorf("request %s %s auth=%q body=%q", r.method, r.path, r.auth, r.body)
			}
			if diff := cmp.Diff(tc.wantQuery, r.query); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	ok := sinch.Config{BaseURL: "https://us.sms.api.sinch.com", ServicePlanID: plan, APIToken: "tok", From: "ShopCo"}
	if _, err := sinch.New(ok); err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, mutate := range []func(*sinch.Config){
		func(c *sinch.Config) { c.BaseURL = "" },
		func(c *sinch.Config) { c.ServicePlanID = "" },
		func(c *sinch.Config) { c.APIToken = "" },
		func(c *sinch.Config) { c.From = "" },
		func(c *sinch.Config) { c.Visibility = -time.Second },
	} {
		cfg := ok
		mutate(&cfg)
		if _, err := sinch.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
