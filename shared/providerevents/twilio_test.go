package providerevents_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// The Twilio account's two auth tokens during a rotation, and the route's public URL.
const (
	twilioToken     = "0123456789abcdef0123456789abcdef"
	twilioSecondary = "fedcba9876543210fedcba9876543210"
	twilioHook      = "https://api.example/v1/provider-events/twilio"
	twilioSID       = "SM5f2e9c0d7b1a4e3f8c6d2b0a9e7f1c3d"
)

// TestTwilioSignatureVector checks the signature against a value computed apart from this
// code (Python's hmac over the URL and the sorted name+value pairs, keyed with the token).
func TestTwilioSignatureVector(t *testing.T) {
	form := url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"delivered"}, "AccountSid": {"AC1"}, "To": {"+15005550006"}, "ErrorCode": {""}}
	got := providerevents.TwilioSignature([]byte(twilioToken), twilioHook+"?attempt=01JC5ZR2B8K4D6F0H2J4L6N8Q0-a1", form)
	if got != "i110IZUc8BD0fud7mM3xqkblGKE=" {
		t.Errorf("signature %s", got)
	}
}

// twilioCallback returns a status callback for attempt ref as Twilio posts it to the URL
// dispatch gave (the route with ?attempt=ref), signed under key; edit changes the form before
// it is signed.
func twilioCallback(key, ref, status string, edit func(url.Values)) events.APIGatewayV2HTTPRequest {
	form := url.Values{
		"MessageSid": {twilioSID}, "SmsSid": {twilioSID}, "MessageStatus": {status}, "SmsStatus": {status},
		"AccountSid": {"AC0123"}, "To": {destination}, "From": {origination}, "ApiVersion": {"2010-04-01"},
	}
	if edit != nil {
		edit(form)
	}
	raw := url.Values{"attempt": {ref}}.Encode()
	return events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              providerevents.TwilioRoute,
		RawPath:               "/v1/provider-events/twilio",
		RawQueryString:        raw,
		QueryStringParameters: map[string]string{"attempt": ref},
		Headers: map[string]string{
			"content-type":       "application/x-www-form-urlencoded",
			"x-twilio-signature": providerevents.TwilioSignature([]byte(key), twilioHook+"?"+raw, form),
		},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: providerevents.TwilioRoute,
			HTTP:     events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, SourceIP: "203.0.113.25"},
		},
		Body: form.Encode(),
	}
}

func TestTwilioWebhook(t *testing.T) {
	leaseTwilio := lease
	leaseTwilio.Provider = "twilio"
	sentTwilio := []notify.Change{leaseTwilio, {To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: twilioSID, Provider: "twilio"}}
	// A timeout after the request was written: no SID on the record.
	unknownTwilio := []notify.Change{leaseTwilio, timedOut}
	forge := func(r *events.APIGatewayV2HTTPRequest) {
		r.Headers["x-twilio-signature"] = "i110IZUc8BD0fud7mM3xqkblGKE="
	}
	tests := []struct {
		name       string
		path       []notify.Change
		req        events.APIGatewayV2HTTPRequest
		edit       func(*events.APIGatewayV2HTTPRequest)
		disabled   bool
		wantStatus int
		wantBody   string
		wantState  notify.State
		wantStored string
	}{
		// A final callback for a sent record is applied at once: the record holds it, the
		// receipts table does not.
		{name: "delivered", path: sentTwilio, req: twilioCallback(twilioToken, a1, "delivered", nil),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateDelivered},
		{name: "signed with the secondary token during a rotation", path: sentTwilio, req: twilioCallback(twilioSecondary, a1, "delivered", nil),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateDelivered},
		{name: "undelivered with its error code", path: sentTwilio,
			req:        twilioCallback(twilioToken, a1, "undelivered", func(f url.Values) { f.Set("ErrorCode", "30003") }),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateUndelivered},
		{name: "sent is recorded only", path: sentTwilio, req: twilioCallback(twilioToken, a1, "sent", nil),
			wantStatus: 200, wantBody: `{"outcome":"recorded"}`, wantState: notify.StateSent, wantStored: "accepted"},
		{name: "an attempt without a SID is recorded for reconciliation", path: unknownTwilio, req: twilioCallback(twilioToken, a1, "delivered", nil),
			wantStatus: 200, wantBody: `{"outcome":"recorded"}`, wantState: notify.StateDispatchUnknown, wantStored: "delivered"},
		{name: "forged signature", path: sentTwilio, req: twilioCallback(twilioToken, a1, "undelivered", nil), edit: forge,
			wantStatus: 403, wantState: notify.StateSent},
		{name: "signed under another token", path: sentTwilio, req: twilioCallback("not-the-account-token-0123456789", a1, "undelivered", nil),
			wantStatus: 403, wantState: notify.StateSent},
		{name: "no signature", path: sentTwilio, req: twilioCallback(twilioToken, a1, "undelivered", nil),
			edit: func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, "x-twilio-signature") }, wantStatus: 403, wantState: notify.StateSent},
		{name: "a genuine callback replayed for another attempt", path: sentTwilio, req: twilioCallback(twilioToken, "01JC5ZR2B8K4D6F0H2J4L6N8Q0-a9", "undelivered", nil),
			edit: func(r *events.APIGatewayV2HTTPRequest) {
				r.RawQueryString, r.QueryStringParameters = url.Values{"attempt": {a1}}.Encode(), map[string]string{"attempt": a1}
			}, wantStatus: 403, wantState: notify.StateSent},
		{name: "the body changed after signing", path: sentTwilio, req: twilioCallback(twilioToken, a1, "delivered", nil),
			edit: func(r *events.APIGatewayV2HTTPRequest) {
				r.Body = strings.Replace(r.Body, "delivered", "undelivered", 2)
			}, wantStatus: 403, wantState: notify.StateSent},
		{name: "signed under a webhooks rule", path: sentTwilio, req: twilioCallback(twilioToken, a1, "delivered", nil),
			edit: func(r *events.APIGatewayV2HTTPRequest) {
				r.Headers["x-twilio-webhooks-signature-settings"] = "key=K,algorithm=HMAC_SHA256"
			}, wantStatus: 403, wantState: notify.StateSent},
		{name: "webhook disabled", path: sentTwilio, req: twilioCallback(twilioToken, a1, "delivered", nil), disabled: true,
			wantStatus: 403, wantState: notify.StateSent},
		{name: "GET", path: sentTwilio, req: twilioCallback(twilioToken, a1, "delivered", nil),
			edit: func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = http.MethodGet }, wantStatus: 405, wantState: notify.StateSent},
		{name: "signed but no MessageSid is poison", path: sentTwilio,
			req:        twilioCallback(twilioToken, a1, "delivered", func(f url.Values) { f.Del("MessageSid") }),
			wantStatus: 400, wantBody: `{"outcome":"poison"}`, wantState: notify.StateSent},
		{name: "signed but no attempt in the URL is poison", path: sentTwilio, req: twilioCallback(twilioToken, "", "delivered", nil),
			wantStatus: 400, wantBody: `{"outcome":"poison"}`, wantState: notify.StateSent},
		{name: "an attempt that went to the simulator", path: []notify.Change{lease, accepted}, req: twilioCallback(twilioToken, a1, "undelivered", nil),
			wantStatus: 200, wantBody: `{"outcome":"mismatch"}`, wantState: notify.StateSent, wantStored: "undelivered"},
		{name: "another SID", path: sentTwilio,
			req:        twilioCallback(twilioToken, a1, "undelivered", func(f url.Values) { f.Set("MessageSid", "SMother") }),
			wantStatus: 200, wantBody: `{"outcome":"mismatch"}`, wantState: notify.StateSent, wantStored: "undelivered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.admit(t, "k", id, tc.path...)
			h := &providerevents.Handler{Recorder: f.rec, TwilioTokens: [][]byte{[]byte(twilioToken), []byte(twilioSecondary)}, TwilioCallbackURL: twilioHook}
			if tc.disabled {
				h.TwilioTokens = nil
			}
			req := tc.req
			if tc.edit != nil {
				tc.edit(&req)
			}
			resp, err := h.Handle(context.Background(), mustJSON(t, req))
			if err != nil {
				t.Fatalf("Handle returned an error: %v", err)
			}
			got := resp.(events.APIGatewayV2HTTPResponse)
			if got.StatusCode != tc.wantStatus || (tc.wantBody != "" && got.Body != tc.wantBody) {
				t.Errorf("answer %d %s, want %d %s", got.StatusCode, got.Body, tc.wantStatus, tc.wantBody)
			}
			if rec, _ := f.store.Get(context.Background(), "k"); rec.State != tc.wantState {
				t.Errorf("state %s, want %s", rec.State, tc.wantState)
			}
			stored, ok := f.receipts.get(a1)
			status := string(stored.Status)
			if ok && stored.Status == sms.ReceiptNone {
				status = "accepted"
			}
			if status != tc.wantStored || (ok && (stored.Provider != "twilio" || stored.MessageID == "")) {
				t.Errorf("stored %+v (found %v), want a twilio receipt %q", stored, ok, tc.wantStored)
			}
			if out := f.out.String(); strings.Contains(out, destination) || strings.Contains(out, twilioToken) || strings.Contains(out, origination) {
				t.Errorf("logs hold a number or the token:\n%s", out)
			}
		})
	}
}

// TestTwilioReplayChangesNothing: the same signed callback twice moves the record once; the
// second is a duplicate and writes nothing, and a replayed "undelivered" after "delivered"
// changes nothing on the record either (it is stale, stored as evidence).
func TestTwilioReplayChangesNothing(t *testing.T) {
	f := newFixture(t)
	leaseTwilio := lease
	leaseTwilio.Provider = "twilio"
	f.admit(t, "k", id, leaseTwilio, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: twilioSID, Provider: "twilio"})
	h := &providerevents.Handler{Recorder: f.rec, TwilioTokens: [][]byte{[]byte(twilioToken)}, TwilioCallbackURL: twilioHook}
	delivered := twilioCallback(twilioToken, a1, "delivered", nil)
	var bodies []string
	for _, req := range []events.APIGatewayV2HTTPRequest{delivered, delivered, twilioCallback(twilioToken, a1, "undelivered", nil)} {
		resp, err := h.HandleHTTP(context.Background(), req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("answer %d %s, %v", resp.StatusCode, resp.Body, err)
		}
		bodies = append(bodies, resp.Body)
	}
	if bodies[0] != `{"outcome":"transitioned"}` || bodies[1] != `{"outcome":"duplicate"}` || bodies[2] == `{"outcome":"transitioned"}` {
		t.Errorf("answers %v", bodies)
	}
	rec, _ := f.store.Get(context.Background(), "k")
	if stored, _ := f.receipts.get(a1); rec.State != notify.StateDelivered || stored.Status != sms.ReceiptUndelivered || f.receipts.puts != 1 {
		t.Errorf("record %s, stored %s after %d puts; want the record delivered, one put: the stale undelivered one", rec.State, stored.Status, f.receipts.puts)
	}
}
