package providerevents_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// sinchBatch is the batch ID Sinch gave the attempt a1 (the ID dispatch records).
const sinchBatch = "01FC66621XXXXX119Z8PMV1QPQ"

// sinchReport returns a Sinch recipient delivery report as its callback posts it (the fields
// of the SMS REST API's "Delivery report callback", recipient included), with edit applied.
func sinchReport(edit func(m map[string]any)) []byte {
	m := map[string]any{
		"type":               providerevents.SinchReportType,
		"batch_id":           sinchBatch,
		"recipient":          destination,
		"code":               0,
		"status":             "Delivered",
		"at":                 "2026-11-01T12:00:07.250Z",
		"operator_status_at": "2026-11-01T12:00:06Z",
		"client_reference":   a1,
		"applied_originator": origination,
		"operator":           "310800",
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseSinch(t *testing.T) {
	want := func(status sms.ReceiptStatus, detail string) providerevents.Receipt {
		return providerevents.Receipt{AttemptRef: a1, MessageID: sinchBatch, Status: status, At: t0.Add(7250 * time.Millisecond), Provider: "sinch", Detail: detail}
	}
	report := func(status string, code int) func(map[string]any) {
		return func(m map[string]any) { m["status"], m["code"] = status, code }
	}
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	tests := []struct {
		name string
		// raw, when set, is the body instead of sinchReport(edit).
		raw    string
		edit   func(map[string]any)
		want   providerevents.Receipt
		poison string
	}{
		{name: "delivered", want: want(sms.ReceiptDelivered, "Delivered:0")},
		{name: "the SDKs' capitals", edit: report("DELIVERED", 0), want: want(sms.ReceiptDelivered, "DELIVERED:0")},
		{name: "failed", edit: report("Failed", 402), want: want(sms.ReceiptUndelivered, "Failed:402")},
		{name: "expired", edit: report("Expired", 407), want: want(sms.ReceiptUndelivered, "Expired:407")},
		{name: "rejected", edit: report("Rejected", 403), want: want(sms.ReceiptUndelivered, "Rejected:403")},
		{name: "aborted", edit: report("Aborted", 412), want: want(sms.ReceiptUndelivered, "Aborted:412")},
		{name: "cancelled", edit: report("Cancelled", 406), want: want(sms.ReceiptUndelivered, "Cancelled:406")},
		{name: "deleted", edit: report("Deleted", 410), want: want(sms.ReceiptUndelivered, "Deleted:410")},
		{name: "dispatched is intermediate", edit: report("Dispatched", 401), want: want(sms.ReceiptNone, "Dispatched:401")},
		{name: "queued is intermediate", edit: report("Queued", 400), want: want(sms.ReceiptNone, "Queued:400")},
		{name: "unknown proves acceptance only", edit: report("Unknown", 0), want: want(sms.ReceiptNone, "Unknown:0")},
		{name: "a status Sinch may add proves acceptance", edit: report("Read", 0), want: want(sms.ReceiptNone, "Read:0")},
		{name: "no code", edit: func(m map[string]any) { delete(m, "code") }, want: want(sms.ReceiptDelivered, "Delivered")},
		{name: "no time", edit: func(m map[string]any) { delete(m, "at") },
			want: providerevents.Receipt{AttemptRef: a1, MessageID: sinchBatch, Status: sms.ReceiptDelivered, Provider: "sinch", Detail: "Delivered:0"}},
		{name: "free text in the status is dropped", edit: report("sent to "+destination, 0),
			want: providerevents.Receipt{AttemptRef: a1, MessageID: sinchBatch, Status: sms.ReceiptNone, At: t0.Add(7250 * time.Millisecond), Provider: "sinch"}},
		{name: "garbage", raw: "batch_id=" + sinchBatch + "&recipient=" + destination, poison: "not a delivery report"},
		{name: "truncated", raw: string(sinchReport(nil))[:40], poison: "not a delivery report"},
		{name: "empty", raw: "", poison: "not a delivery report"},
		{name: "a batch summary", edit: set("type", "delivery_report_sms"), poison: "not a recipient delivery report"},
		{name: "an MMS report", edit: set("type", "recipient_delivery_report_mms"), poison: "not a recipient delivery report"},
		{name: "an inbound message", raw: `{"type":"mo_text","id":"x","from":"` + destination + `","to":"12345","body":"STOP"}`, poison: "not a recipient delivery report"},
		{name: "no batch ID", edit: set("batch_id", ""), poison: "no batch ID"},
		{name: "no status", edit: func(m map[string]any) { delete(m, "status") }, poison: "no status"},
		{name: "no client reference", edit: func(m map[string]any) { delete(m, "client_reference") }, poison: "no attempt reference"},
		{name: "a reference not ours", edit: set("client_reference", destination), poison: "no attempt reference"},
		{name: "a time that is not ISO-8601", edit: set("at", "yesterday"), poison: "not ISO-8601"},
		{name: "a batch ID over 128 bytes", edit: set("batch_id", strings.Repeat("B", 129)), poison: "bad message ID"},
		{name: "oversize", edit: set("operator", strings.Repeat("x", 9000)), poison: "over 8192 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.raw)
			if tc.raw == "" && tc.name != "empty" {
				body = sinchReport(tc.edit)
			}
			got, err := providerevents.ParseSinch(body)
			if tc.poison != "" {
				if !errors.Is(err, providerevents.ErrPoison) || !strings.Contains(err.Error(), tc.poison) {
					t.Fatalf("ParseSinch = %+v, %v; want ErrPoison saying %q", got, err, tc.poison)
				}
				if strings.Contains(err.Error(), destination) || strings.Contains(err.Error(), sinchBatch) {
					t.Errorf("error quotes the report: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			if s := fmt.Sprintf("%+v", got); strings.Contains(s, destination) || strings.Contains(s, origination) {
				t.Errorf("receipt holds a phone number: %s", s)
			}
		})
	}
}

const sinchToken = "sinch-callback-token-0123"

// acceptedSinch is accepted by Sinch as the batch of sinchReport.
var acceptedSinch = notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: sinchBatch, Provider: "sinch"}

// sinchRequest returns Sinch's callback as API Gateway hands it over: the route, the token in
// the query string (decoded and raw), and the report as the body.
func sinchRequest(body []byte, edit func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              providerevents.SinchRoute,
		RawPath:               "/v1/provider-events/sinch",
		RawQueryString:        "token=" + sinchToken,
		QueryStringParameters: map[string]string{"token": sinchToken},
		Headers:               map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: providerevents.SinchRoute,
			HTTP:     events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, SourceIP: "203.0.113.25"},
		},
		Body: string(body),
	}
	if edit != nil {
		edit(&req)
	}
	return req
}

// previousSinchToken is the callback token being retired in the rotation cases.
const previousSinchToken = "retired-sinch-callback-token-0123"

// withToken sets the callback token of a Sinch webhook request.
func withToken(tok string) func(*events.APIGatewayV2HTTPRequest) {
	return func(r *events.APIGatewayV2HTTPRequest) {
		r.QueryStringParameters["token"], r.RawQueryString = tok, "token="+tok
	}
}

func TestSinchWebhook(t *testing.T) {
	failed := sinchReport(func(m map[string]any) { m["status"], m["code"] = "Failed", 402 })
	sentSinch := []notify.Change{lease, acceptedSinch}
	tests := []struct {
		name string
		// path moves the record for id before the call.
		path    []notify.Change
		req     events.APIGatewayV2HTTPRequest
		noToken bool
		// rotating sets the previous callback token, as during a rotation.
		rotating   bool
		storeErr   error
		wantStatus int
		wantBody   string
		wantState  notify.State
		// wantStored is the status stored for a1 (accepted for an intermediate one), "" when
		// nothing may be stored.
		wantStored string
	}{
		{name: "delivered", path: sentSinch, req: sinchRequest(sinchReport(nil), nil),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateDelivered},
		{name: "failed", path: sentSinch, req: sinchRequest(failed, nil),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateUndelivered},
		{name: "dispatched is recorded only", path: sentSinch,
			req:        sinchRequest(sinchReport(func(m map[string]any) { m["status"], m["code"] = "Dispatched", 401 }), nil),
			wantStatus: 200, wantBody: `{"outcome":"recorded"}`, wantState: notify.StateSent, wantStored: "accepted"},
		{name: "token in the raw query only", path: sentSinch,
			req:        sinchRequest(sinchReport(nil), func(r *events.APIGatewayV2HTTPRequest) { r.QueryStringParameters = nil }),
			wantStatus: 200, wantState: notify.StateDelivered},
		{name: "base64 body", path: sentSinch,
			req:        sinchRequest([]byte(base64.StdEncoding.EncodeToString(sinchReport(nil))), func(r *events.APIGatewayV2HTTPRequest) { r.IsBase64Encoded = true }),
			wantStatus: 200, wantState: notify.StateDelivered},
		{name: "wrong token", path: sentSinch,
			req: sinchRequest(sinchReport(nil), func(r *events.APIGatewayV2HTTPRequest) {
				r.QueryStringParameters["token"], r.RawQueryString = sinchToken+"x", "token="+sinchToken+"x"
			}), wantStatus: 401, wantState: notify.StateSent},
		{name: "no token", path: sentSinch,
			req: sinchRequest(sinchReport(nil), func(r *events.APIGatewayV2HTTPRequest) {
				r.QueryStringParameters, r.RawQueryString = nil, ""
			}), wantStatus: 401, wantState: notify.StateSent},
		{name: "the simulator's header is not the callback token", path: sentSinch,
			req: sinchRequest(sinchReport(nil), func(r *events.APIGatewayV2HTTPRequest) {
				r.QueryStringParameters, r.RawQueryString = nil, ""
				r.Headers[strings.ToLower(simapi.WebhookTokenHeader)] = sinchToken
			}), wantStatus: 401, wantState: notify.StateSent},
		// A rotation: the token being retired and the new one are both accepted, nothing else;
		// once the rotation ends, the retired one is refused.
		{name: "the previous token during a rotation", path: sentSinch, rotating: true,
			req: sinchRequest(sinchReport(nil), withToken(previousSinchToken)), wantStatus: 200, wantState: notify.StateDelivered},
		{name: "the current token during a rotation", path: sentSinch, rotating: true,
			req: sinchRequest(sinchReport(nil), nil), wantStatus: 200, wantState: notify.StateDelivered},
		{name: "a third token during a rotation", path: sentSinch, rotating: true,
			req: sinchRequest(sinchReport(nil), withToken(sinchToken+"x")), wantStatus: 401, wantState: notify.StateSent},
		{name: "the previous token after the rotation", path: sentSinch,
			req: sinchRequest(sinchReport(nil), withToken(previousSinchToken)), wantStatus: 401, wantState: notify.StateSent},
		{name: "webhook disabled", path: sentSinch, req: sinchRequest(sinchReport(nil), nil), noToken: true,
			wantStatus: 401, wantState: notify.StateSent},
		{name: "GET", path: sentSinch,
			req:        sinchRequest(sinchReport(nil), func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = http.MethodGet }),
			wantStatus: 405, wantState: notify.StateSent},
		{name: "garbage is poison", path: sentSinch, req: sinchRequest([]byte("recipient="+destination), nil),
			wantStatus: 400, wantBody: `{"outcome":"poison"}`, wantState: notify.StateSent},
		{name: "too large", path: sentSinch, req: sinchRequest([]byte(strings.Repeat("x", 9000)), nil),
			wantStatus: 413, wantState: notify.StateSent},
		{name: "early", path: []notify.Change{lease}, req: sinchRequest(sinchReport(nil), nil),
			wantStatus: 200, wantBody: `{"outcome":"early"}`, wantState: notify.StateDispatching, wantStored: "delivered"},
		// A receipt that must be stored (its record is still dispatching) and cannot be is
		// answered 503, for Sinch to try again; one applied at once to a sent record does not
		// need the receipts table.
		{name: "store failure", path: []notify.Change{lease}, req: sinchRequest(sinchReport(nil), nil), storeErr: errors.New("dynamodb down"),
			wantStatus: 503, wantState: notify.StateDispatching},
		{name: "receipts store down, applied at once", path: sentSinch, req: sinchRequest(sinchReport(nil), nil), storeErr: errors.New("dynamodb down"),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateDelivered},
		{name: "orphan is acknowledged", path: sentSinch,
			req:        sinchRequest(sinchReport(func(m map[string]any) { m["client_reference"] = sms2() }), nil),
			wantStatus: 200, wantBody: `{"outcome":"orphan"}`, wantState: notify.StateSent},
		// A report naming our attempt that went to another provider, or another batch than the
		// record holds: kept as evidence, alarmed on, never applied.
		{name: "an attempt that went to the simulator", path: []notify.Change{lease, accepted}, req: sinchRequest(failed, nil),
			wantStatus: 200, wantBody: `{"outcome":"mismatch"}`, wantState: notify.StateSent, wantStored: "undelivered"},
		{name: "another batch", path: sentSinch,
			req:        sinchRequest(sinchReport(func(m map[string]any) { m["batch_id"] = "01FC66621XXXXX119Z8PMV0000" }), nil),
			wantStatus: 200, wantBody: `{"outcome":"mismatch"}`, wantState: notify.StateSent, wantStored: "delivered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.admit(t, "k", id, tc.path...)
			f.receipts.Err = tc.storeErr
			h := &providerevents.Handler{Recorder: f.rec, WebhookToken: []byte(token), SinchToken: []byte(sinchToken)}
			if tc.noToken {
				h.SinchToken = nil
			}
			if tc.rotating {
				h.SinchPreviousToken = []byte(previousSinchToken)
			}
			resp, err := h.Handle(context.Background(), mustJSON(t, tc.req))
			if err != nil {
				t.Fatalf("Handle returned an error: %v", err)
			}
			got, ok := resp.(events.APIGatewayV2HTTPResponse)
			if !ok {
				t.Fatalf("Handle answered %T, want an HTTP API response", resp)
			}
			if got.StatusCode != tc.wantStatus || (tc.wantBody != "" && got.Body != tc.wantBody) {
				t.Errorf("answer %d %s, want %d %s", got.StatusCode, got.Body, tc.wantStatus, tc.wantBody)
			}
			if got.StatusCode == 503 && got.Headers["Retry-After"] == "" {
				t.Error("503 without Retry-After")
			}
			if rec, _ := f.store.Get(context.Background(), "k"); rec.State != tc.wantState {
				t.Errorf("state %s, want %s", rec.State, tc.wantState)
			}
			stored, ok := f.receipts.get(a1)
			status := string(stored.Status)
			if ok && stored.Status == sms.ReceiptNone {
				status = "accepted"
			}
			if status != tc.wantStored || (ok && stored.Provider != "sinch") {
				t.Errorf("stored %+v (found %v), want a sinch receipt %q", stored, ok, tc.wantStored)
			}
			if out := f.out.String(); strings.Contains(out, destination) || strings.Contains(out, sinchToken) || strings.Contains(out, origination) ||
				strings.Contains(out, previousSinchToken) {
				t.Errorf("logs hold the number or the token:\n%s", out)
			}
			if mismatch := strings.Contains(f.out.String(), `"Outcome":"mismatch"`); mismatch != strings.Contains(tc.wantBody, "mismatch") {
				t.Errorf("mismatch counted = %v:\n%s", mismatch, f.out.String())
			}
		})
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
