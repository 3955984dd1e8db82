package sms_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
)

func TestTransportOutcome(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/drop", smstest.Drop)
	mux.HandleFunc("/hang", smstest.Hang)
	plain := httptest.NewServer(mux)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(mux)
	t.Cleanup(tlsSrv.Close)

	tests := []struct {
		name    string
		url     string
		timeout time.Duration
		class   sms.Class
		detail  sms.Detail
	}{
		{"dial refused", smstest.ClosedURL(t) + "/x", time.Second, sms.ClassNotAccepted, sms.DetailNotWritten},
		{"TLS handshake fails", tlsSrv.URL + "/drop", time.Second, sms.ClassNotAccepted, sms.DetailNotWritten},
		{"connection closed after the request was read", plain.URL + "/drop", time.Second, sms.ClassUnknown, sms.DetailConnectionLost},
		{"timeout after the request was written", plain.URL + "/hang", 50 * time.Millisecond, sms.ClassUnknown, sms.DetailTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, tracked := range []bool{true, false} {
				ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
				var tracker *sms.WriteTracker
				if tracked {
					ctx, tracker = sms.TraceWrites(ctx)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, strings.NewReader(`{"to":"+15555550100"}`))
				// A fresh client: the TLS server's certificate is not trusted.
				resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
				cancel()
				if err == nil {
					resp.Body.Close()
					t.Fatalf("tracked=%v: request succeeded with %d", tracked, resp.StatusCode)
				}
				got := sms.TransportOutcome(err, tracker)
				if got.Class != tc.class || got.Detail != tc.detail {
					t.Errorf("tracked=%v: TransportOutcome(%v) = %s, want %s/%s", tracked, err, got, tc.class, tc.detail)
				}
				if !errors.Is(got.Err, err) {
					t.Errorf("tracked=%v: outcome does not wrap the error", tracked)
				}
			}
		})
	}
}

func TestFailedBeforeWrite(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"dial", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"dns", &net.DNSError{Err: "no such host", Name: "sms.example", IsNotFound: true}, true},
		{"read", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, false},
		{"eof", io.ErrUnexpectedEOF, false},
		{"deadline", context.DeadlineExceeded, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sms.FailedBeforeWrite(tc.err); got != tc.want {
				t.Errorf("FailedBeforeWrite(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		want  time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "7", 7 * time.Second},
		{"zero", "0", 0},
		{"negative", "-3", 0},
		{"date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.value != "" {
				h.Set("Retry-After", tc.value)
			}
			if got := sms.RetryAfter(h, now); got != tc.want {
				t.Errorf("RetryAfter(%q) = %s, want %s", tc.value, got, tc.want)
			}
		})
	}
}
