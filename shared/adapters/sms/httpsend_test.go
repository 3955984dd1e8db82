package sms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
	"github.com/resetnotify/resetnotify/shared/notify"
)

const httpRef = "01JC0000000000000000000000-a1"

// testSender is an HTTPSender for a provider that takes {"to","body","ref","ttl"} at /send
// and answers {"id"}, with ClassifySend's defaults.
func testSender(base string, timeout time.Duration) sms.HTTPSender {
	return sms.HTTPSender{
		Op: "test.send", MinValiditySeconds: 5, MaxValiditySeconds: 60,
		Client: &http.Client{}, Timeout: timeout, MaxResponse: 64,
		Request: func(ctx context.Context, req sms.SendRequest, secs int64) (*http.Request, error) {
			body, _ := json.Marshal(map[string]any{"to": req.To, "body": req.Body, "ref": req.AttemptRef, "ttl": secs})
			hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/send", bytes.NewReader(body))
			if err == nil {
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Authorization", "Bearer tok")
			}
			return hr, err
		},
		Classify: func(resp sms.HTTPResponse, req sms.SendRequest) sms.Outcome {
			return sms.ClassifySend(resp, sms.SendAnswer{Provider: "test", Op: "send " + req.AttemptRef,
				MessageID: func(b []byte) (string, bool) {
					var v struct{ ID string }
					err := json.Unmarshal(b, &v)
					return v.ID, err == nil
				}}, time.Now())
		},
	}
}

func testSendRequest(validity time.Duration) sms.SendRequest {
	return sms.SendRequest{To: smstest.Number, Body: smstest.Body, AttemptRef: httpRef, ValidityPeriod: validity}
}

// TestHTTPSenderClassifies runs the cases every HTTP adapter must classify alike through the
// bare skeleton: the transport failures are its own, the answers go to Classify.
func TestHTTPSenderClassifies(t *testing.T) {
	smstest.SendSuite{
		Cases: append([]smstest.SendCase{
			{Name: "201", Handler: smstest.JSON(201, "", `{"id":"m-1"}`), Class: sms.ClassAccepted, Reason: notify.ReasonProviderAccepted, MessageID: "m-1"},
			{Name: "429", Handler: smstest.JSON(429, "4", `{}`), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, RetryAfter: 4 * time.Second},
			{Name: "400", Handler: smstest.JSON(400, "", `{}`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected},
			{Name: "body over MaxResponse is unreadable", Handler: smstest.JSON(201, "", `{"id":"m-1","pad":"`+strings.Repeat("x", 100)+`"}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
		}, smstest.TransportCases()...),
		HangTimeout: 200 * time.Millisecond,
		Send: func(t *testing.T, base string, timeout time.Duration) sms.Outcome {
			return testSender(base, timeout).Send(context.Background(), testSendRequest(90*time.Second+500*time.Millisecond))
		},
		CheckRequest: func(t *testing.T, r smstest.Request) {
			smstest.CheckJSONPost(t, r, "/send", "Bearer tok")
			// 90.5 s is clamped to the provider's 60 s maximum.
			smstest.CheckBody(t, r, map[string]any{"to": smstest.Number, "body": smstest.Body, "ref": httpRef, "ttl": float64(60)})
		},
		Retried: "the skeleton",
	}.Run(t)
}

// TestHTTPSenderSendsNothing covers the two ways a send ends before any request: a validity
// rounding down below the provider's minimum, and a request that cannot be built.
func TestHTTPSenderSendsNothing(t *testing.T) {
	buildErr := errors.New("no request")
	cases := []struct {
		name     string
		validity time.Duration
		request  bool // Request fails
		want     error
	}{
		{name: "validity below the minimum", validity: 4*time.Second + 999*time.Millisecond, want: sms.ErrValidityTooShort},
		{name: "request not built", validity: time.Minute, request: true, want: buildErr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := smstest.NewProvider(t, smstest.JSON(201, "", `{"id":"m-1"}`))
			s := testSender(p.URL, time.Second)
			if tc.request {
				s.Request = func(context.Context, sms.SendRequest, int64) (*http.Request, error) { return nil, buildErr }
			}
			out := s.Send(context.Background(), testSendRequest(tc.validity))
			if out.Class != sms.ClassNotAccepted || out.Detail != sms.DetailNotWritten || !errors.Is(out.Err, tc.want) {
				t.Fatalf("outcome %s (%v), want not accepted / not written wrapping %v", out, out.Err, tc.want)
			}
			if !strings.HasPrefix(out.Err.Error(), "test.send "+httpRef+": ") {
				t.Errorf("error %q does not name the operation and the attempt", out.Err)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestHTTPSenderWrapsTransportErrors checks that a failure without an answer names the
// operation and the attempt.
func TestHTTPSenderWrapsTransportErrors(t *testing.T) {
	out := testSender(smstest.ClosedURL(t), time.Second).Send(context.Background(), testSendRequest(time.Minute))
	if out.Err == nil || !strings.HasPrefix(out.Err.Error(), "test.send "+httpRef+": ") {
		t.Fatalf("error %v does not name the operation and the attempt", out.Err)
	}
}
