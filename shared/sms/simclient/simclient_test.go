package simclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/sms/simclient"
)

const (
	number = "+447700900123"
	body   = "Your code is 918273. SECRET"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func sendReq() sms.SendRequest {
	return sms.SendRequest{To: number, Body: body, AttemptRef: "01JC0000000000000000000000-a2", ValidityPeriod: 89*time.Second + 900*time.Millisecond}
}

// recorded is one request the fake provider received.
type recorded struct {
	method, path, query, auth, contentType, idempotencyKey string
	body                                                   []byte
}

// fake is an httptest server that records requests and answers with handler.
type fake struct {
	mu   sync.Mutex
	reqs []recorded
	srv  *httptest.Server
	stop chan struct{}
}

func newFake(t *testing.T, handler http.HandlerFunc) *fake {
	f := &fake{stop: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), b})
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(func() { close(f.stop); f.srv.Close() })
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func status(code int, retryAfter, body string) http.HandlerFunc {
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

func TestSendClassifies(t *testing.T) {
	echo := fmt.Sprintf(`{"code":"destination_rejected","message":"%s is blocked"}`, number)
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
		{name: "201", handler: status(201, "", `{"message_id":"sim-1"}`), class: sms.ClassAccepted, reason: notify.ReasonProviderAccepted, messageID: "sim-1"},
		{name: "200", handler: status(200, "", `{"message_id":"sim-2"}`), class: sms.ClassAccepted, reason: notify.ReasonProviderAccepted, messageID: "sim-2"},
		{name: "400 permanent", handler: status(400, "", echo), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "destination_rejected"},
		{name: "401", handler: status(401, "", `{"code":"unauthorized"}`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "unauthorized"},
		{name: "429 with Retry-After", handler: status(429, "7", `{"code":"throttled"}`), class: sms.ClassNotAccepted, reason: notify.ReasonProviderThrottled, retryAfter: 7 * time.Second, code: "throttled"},
		{name: "503 not processed", handler: status(503, "2", `{"code":"unavailable_not_processed"}`), class: sms.ClassNotAccepted, reason: notify.ReasonProviderUnavailable, retryAfter: 2 * time.Second, code: "unavailable_not_processed"},
		{name: "500", handler: status(500, "", `{"code":"internal_error"}`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous, code: "internal_error"},
		{name: "502", handler: status(502, "", `<html>bad gateway</html>`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "504", handler: status(504, "", ``), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "408", handler: status(408, "", ``), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "garbage 201 body", handler: status(201, "", `{"message_id":`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "201 without an ID", handler: status(201, "", `{}`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "201 body cut short", handler: hijack(func(c net.Conn) {
			io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"message_id\":")
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
				base = f.srv.URL
			}
			timeout := 10 * time.Second
			if tc.hangs {
				timeout = 200 * time.Millisecond
			}
			c, err := simclient.New(simclient.Config{BaseURL: base, Token: "tok", Timeout: timeout, Clock: notifytest.NewClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			out := c.Send(context.Background(), sendReq())
			if out.Class != tc.class || out.Reason() != tc.reason {
				t.Fatalf("outcome %s (reason %s, err %v), want %s / %s", out, out.Reason(), out.Err, tc.class, tc.reason)
			}
			if out.MessageID != tc.messageID || out.RetryAfter != tc.retryAfter || out.Code != tc.code {
				t.Errorf("outcome %s: want message ID %q, retry after %s, code %q", out, tc.messageID, tc.retryAfter, tc.code)
			}
			if tc.class != sms.ClassAccepted && out.Err == nil {
				t.Error("no diagnostic error")
			}
			if out.Err != nil {
				if msg := out.Err.Error(); strings.Contains(msg, "447700900123") || strings.Contains(msg, "SECRET") {
					t.Errorf("error leaks a secret: %s", msg)
				}
			}
			if f == nil {
				return
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want exactly 1 (never a retry)", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != "/messages" || r.auth != "Bearer tok" || r.contentType != "application/json" || r.idempotencyKey != "" {
				t.Errorf("request %s %s auth=%q type=%q idempotency-key=%q", r.method, r.path, r.auth, r.contentType, r.idempotencyKey)
			}
			var got simapi.SendRequest
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("request body %s: %v", r.body, err)
			}
			want := simapi.SendRequest{To: number, Body: body, ClientRef: "01JC0000000000000000000000-a2", ValiditySeconds: 89}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendRefusesTooShortValidity(t *testing.T) {
	f := newFake(t, status(201, "", `{"message_id":"sim-1"}`))
	c, _ := simclient.New(simclient.Config{BaseURL: f.srv.URL})
	req := sendReq()
	req.ValidityPeriod = 999 * time.Millisecond
	out := c.Send(context.Background(), req)
	if out.Class != sms.ClassNotAccepted || out.Detail != sms.DetailNotWritten || !errors.Is(out.Err, sms.ErrValidityTooShort) {
		t.Fatalf("outcome %s (%v), want not accepted / not written / ErrValidityTooShort", out, out.Err)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestLookup(t *testing.T) {
	const ref = "01JC0000000000000000000000-a2"
	final := t0.Add(time.Minute)
	delivered, _ := json.Marshal(simapi.MessageList{Messages: []simapi.Message{{MessageID: "sim-9", ClientRef: ref, Status: simapi.StatusDelivered, FinalAt: &final}}})
	two, _ := json.Marshal(simapi.MessageList{Messages: []simapi.Message{{MessageID: "sim-9", ClientRef: ref, Status: simapi.StatusAccepted}, {MessageID: "sim-10", ClientRef: ref, Status: simapi.StatusAccepted}}})
	byID, _ := json.Marshal(simapi.Message{MessageID: "sim-9", ClientRef: ref, Status: simapi.StatusUndelivered, FinalAt: &final})
	other, _ := json.Marshal(simapi.Message{MessageID: "sim-9", ClientRef: "other-a1", Status: simapi.StatusAccepted})
	found := sms.Found("sim-9", sms.ReceiptDelivered, final)
	twice := sms.Found("sim-9", sms.ReceiptNone, time.Time{})
	twice.Matches = 2
	tests := []struct {
		name      string
		messageID string
		handler   http.HandlerFunc
		now       time.Time
		wantPath  string
		wantQuery string
		want      sms.LookupResult
		wantErr   bool
	}{
		{name: "found by reference", handler: status(200, "", string(delivered)), now: t0, wantPath: "/messages", wantQuery: "client_ref=" + ref, want: found},
		{name: "found twice", handler: status(200, "", string(two)), now: t0, wantPath: "/messages", wantQuery: "client_ref=" + ref, want: twice},
		{name: "found by ID", messageID: "sim-9", handler: status(200, "", string(byID)), now: t0, wantPath: "/messages/sim-9", want: sms.Found("sim-9", sms.ReceiptUndelivered, final)},
		{name: "ID of another attempt", messageID: "sim-9", handler: status(200, "", string(other)), now: t0, wantPath: "/messages/sim-9", want: sms.Inconclusive("reference_mismatch"), wantErr: true},
		{name: "nothing within the window", handler: status(200, "", `{"messages":[]}`), now: t0.Add(9 * time.Second), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.Inconclusive("not_visible_yet")},
		{name: "nothing after the window", handler: status(200, "", `{"messages":[]}`), now: t0.Add(10 * time.Second), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.LookupResult{Status: sms.LookupNotFound}},
		{name: "ID not found after the window", messageID: "sim-9", handler: status(404, "", `{"code":"not_found"}`), now: t0.Add(time.Hour), wantPath: "/messages/sim-9", want: sms.LookupResult{Status: sms.LookupNotFound}},
		{name: "500", handler: status(500, "", `{"code":"internal_error"}`), now: t0.Add(time.Hour), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "503", handler: status(503, "1", ``), now: t0.Add(time.Hour), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "404 on the list", handler: status(404, "", ``), now: t0.Add(time.Hour), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "garbage", handler: status(200, "", `[`), now: t0.Add(time.Hour), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.Inconclusive("provider_error"), wantErr: true},
		{name: "connection dropped", handler: hijack(func(net.Conn) {}), now: t0.Add(time.Hour), wantPath: "/messages", wantQuery: "client_ref=" + ref, want: sms.Inconclusive("provider_error"), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.handler)
			c, _ := simclient.New(simclient.Config{BaseURL: f.srv.URL, Token: "tok", Visibility: 10 * time.Second, Clock: notifytest.NewClock(tc.now)})
			got, err := c.Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, MessageID: tc.messageID, AttemptedAt: t0})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			reqs := f.requests()
			if len(reqs) != 1 || reqs[0].method != http.MethodGet || reqs[0].path != tc.wantPath || reqs[0].query != tc.wantQuery || reqs[0].auth != "Bearer tok" {
				t.Errorf("requests %+v", reqs)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []simclient.Config{{}, {BaseURL: "ftp://x"}, {BaseURL: "http://127.0.0.1:1", Visibility: -1}} {
		if _, err := simclient.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
