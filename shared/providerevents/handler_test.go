package providerevents_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

const token = "webhook-token-0123456789"

func webhookRequest(body string, edit func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: providerevents.SimulatorRoute,
		RawPath:  "/v1/provider-events/simulator",
		Headers:  map[string]string{"content-type": "application/json", strings.ToLower(simapi.WebhookTokenHeader): token},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, SourceIP: "127.0.0.1"},
		},
		Body: body,
	}
	if edit != nil {
		edit(&req)
	}
	return req
}

func simBody(ref, status string) string {
	b, _ := json.Marshal(simapi.Receipt{MessageID: "msg-1", ClientRef: ref, Status: simapi.Status(status), At: t0})
	return string(b)
}

func TestSimulatorWebhook(t *testing.T) {
	delivered := simBody(a1, "delivered")
	tests := []struct {
		name string
		// path moves the record for id before the call.
		path       []notify.Change
		req        events.APIGatewayV2HTTPRequest
		token      string
		storeErr   error
		recordsErr error
		wantStatus int
		wantBody   string
		wantState  notify.State
	}{
		{name: "delivered", path: []notify.Change{lease, accepted}, req: webhookRequest(delivered, nil),
			wantStatus: 200, wantBody: `{"outcome":"transitioned"}`, wantState: notify.StateDelivered},
		{name: "header name in any case", path: []notify.Change{lease, accepted},
			req: webhookRequest(delivered, func(r *events.APIGatewayV2HTTPRequest) {
				r.Headers = map[string]string{simapi.WebhookTokenHeader: token}
			}), wantStatus: 200, wantState: notify.StateDelivered},
		{name: "base64 body", path: []notify.Change{lease, accepted},
			req:        webhookRequest(base64.StdEncoding.EncodeToString([]byte(delivered)), func(r *events.APIGatewayV2HTTPRequest) { r.IsBase64Encoded = true }),
			wantStatus: 200, wantState: notify.StateDelivered},
		{name: "wrong token", path: []notify.Change{lease, accepted},
			req: webhookRequest(delivered, func(r *events.APIGatewayV2HTTPRequest) {
				r.Headers[strings.ToLower(simapi.WebhookTokenHeader)] = token + "x"
			}), wantStatus: 401, wantState: notify.StateSent},
		{name: "no token", path: []notify.Change{lease, accepted},
			req:        webhookRequest(delivered, func(r *events.APIGatewayV2HTTPRequest) { r.Headers = nil }),
			wantStatus: 401, wantState: notify.StateSent},
		{name: "webhook disabled", path: []notify.Change{lease, accepted}, req: webhookRequest(delivered, nil), token: "-",
			wantStatus: 401, wantState: notify.StateSent},
		{name: "GET", path: []notify.Change{lease, accepted},
			req:        webhookRequest(delivered, func(r *events.APIGatewayV2HTTPRequest) { r.RequestContext.HTTP.Method = http.MethodGet }),
			wantStatus: 405, wantState: notify.StateSent},
		{name: "poison", path: []notify.Change{lease, accepted}, req: webhookRequest(`{"client_ref":"`+destination+`"`, nil),
			wantStatus: 400, wantBody: `{"outcome":"poison"}`, wantState: notify.StateSent},
		{name: "bad base64", path: []notify.Change{lease, accepted},
			req:        webhookRequest("***", func(r *events.APIGatewayV2HTTPRequest) { r.IsBase64Encoded = true }),
			wantStatus: 400, wantState: notify.StateSent},
		{name: "too large", path: []notify.Change{lease, accepted}, req: webhookRequest(strings.Repeat("x", 9000), nil),
			wantStatus: 413, wantState: notify.StateSent},
		{name: "early", path: []notify.Change{lease}, req: webhookRequest(delivered, nil),
			wantStatus: 200, wantBody: `{"outcome":"early"}`, wantState: notify.StateDispatching},
		// A store failure is answered 503 for the provider to try again: the notifications
		// table's for a receipt applied at once, the receipts table's for one that must be
		// stored (its record still dispatching).
		{name: "store failure", path: []notify.Change{lease, accepted}, req: webhookRequest(delivered, nil), recordsErr: errors.New("dynamodb down"),
			wantStatus: 503, wantState: notify.StateSent},
		{name: "receipts store failure", path: []notify.Change{lease}, req: webhookRequest(delivered, nil), storeErr: errors.New("dynamodb down"),
			wantStatus: 503, wantState: notify.StateDispatching},
		{name: "orphan is acknowledged", path: []notify.Change{lease, accepted}, req: webhookRequest(simBody(sms2(), "delivered"), nil),
			wantStatus: 200, wantBody: `{"outcome":"orphan"}`, wantState: notify.StateSent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.admit(t, "k", id, tc.path...)
			f.receipts.Err = tc.storeErr
			f.store.Err = tc.recordsErr
			h := &providerevents.Handler{Recorder: f.rec, WebhookToken: []byte(token)}
			if tc.token == "-" {
				h.WebhookToken = nil
			}
			resp, err := h.HandleSimulatorWebhook(context.Background(), tc.req)
			f.store.Err = nil
			if err != nil {
				t.Fatalf("HandleSimulatorWebhook returned an error: %v", err)
			}
			if resp.StatusCode != tc.wantStatus || (tc.wantBody != "" && resp.Body != tc.wantBody) {
				t.Errorf("answer %d %s, want %d %s", resp.StatusCode, resp.Body, tc.wantStatus, tc.wantBody)
			}
			if resp.StatusCode == 503 && resp.Headers["Retry-After"] == "" {
				t.Error("503 without Retry-After")
			}
			if got, _ := f.store.Get(context.Background(), "k"); got.State != tc.wantState {
				t.Errorf("state %s, want %s", got.State, tc.wantState)
			}
			if out := f.out.String(); strings.Contains(out, destination) || strings.Contains(out, token) {
				t.Errorf("logs hold the number or the token:\n%s", out)
			}
		})
	}
}

func sms2() string { return "01JC5ZR2B8K4D6F0H2J4L6N8Q0-a1" }

func snsEvent(messages ...[]byte) events.SNSEvent {
	var ev events.SNSEvent
	for _, m := range messages {
		ev.Records = append(ev.Records, events.SNSEventRecord{EventSource: "aws:sns", SNS: events.SNSEntity{Message: string(m)}})
	}
	return ev
}

func TestHandleSNS(t *testing.T) {
	ctx := context.Background()
	t.Run("poison records are skipped, good ones recorded", func(t *testing.T) {
		f := newFixture(t)
		f.admit(t, "k", id, lease, acceptedEUM)
		h := &providerevents.Handler{Recorder: f.rec}
		err := h.HandleSNS(ctx, snsEvent([]byte("not json "+destination), eumEvent(func(m map[string]any) { m["eventType"] = "VOICE_COMPLETED" }), eumEvent(nil)))
		if err != nil {
			t.Fatalf("HandleSNS: %v", err)
		}
		if got, _ := f.store.Get(ctx, "k"); got.State != notify.StateDelivered {
			t.Errorf("state %s, want delivered", got.State)
		}
		if n := strings.Count(f.out.String(), `"Outcome":"poison"`); n != 2 {
			t.Errorf("%d poison counts, want 2", n)
		}
		if strings.Contains(f.out.String(), destination) {
			t.Errorf("logs hold the number:\n%s", f.out.String())
		}
	})
	t.Run("an early receipt is held on the record", func(t *testing.T) {
		f := newFixture(t)
		f.admit(t, "k", id, lease)
		h := &providerevents.Handler{Recorder: f.rec}
		if err := h.HandleSNS(ctx, snsEvent(eumEvent(nil))); err != nil {
			t.Fatalf("HandleSNS = %v, want nil: the receipt is held, not retried", err)
		}
		// The worker records sent over the record that holds it; a redelivered event finishes
		// the job as well (the worker would have applied the held receipt itself).
		rec, _ := f.store.Get(ctx, "k")
		if rec.EarlyReceipt.State != notify.StateDelivered || rec.EarlyReceipt.MessageID == "" || rec.EarlyReceipt.Provider == "" || rec.EarlyReceipt.At.IsZero() {
			t.Fatalf("record holds %+v, want the delivered receipt with its provider, message ID and time", rec.EarlyReceipt)
		}
		next, err := rec.Apply(acceptedEUM, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.Transition(ctx, rec, next); err != nil {
			t.Fatal(err)
		}
		if err := h.HandleSNS(ctx, snsEvent(eumEvent(nil))); err != nil {
			t.Fatalf("redelivery: %v", err)
		}
		if got, _ := f.store.Get(ctx, "k"); got.State != notify.StateDelivered {
			t.Errorf("state %s, want delivered", got.State)
		}
	})
	t.Run("a store failure asks for a retry", func(t *testing.T) {
		f := newFixture(t)
		f.receipts.Err = errors.New("dynamodb down")
		h := &providerevents.Handler{Recorder: f.rec}
		if err := h.HandleSNS(ctx, snsEvent(eumEvent(nil))); !errors.Is(err, providerevents.ErrRetryLater) {
			t.Fatalf("HandleSNS = %v, want ErrRetryLater", err)
		}
	})
}

// TestHandleThroughLambda invokes Handle the way lambda.Start does, with raw payloads of each
// shape.
func TestHandleThroughLambda(t *testing.T) {
	f := newFixture(t)
	f.admit(t, "k", id, lease, accepted)
	h := &providerevents.Handler{Recorder: f.rec, WebhookToken: []byte(token)}
	invoke := lambda.NewHandler(h.Handle)
	ctx := context.Background()

	snsPayload, _ := json.Marshal(snsEvent(eumEvent(func(m map[string]any) { m["eventType"] = "TEXT_SUCCESSFUL" })))
	out, err := invoke.Invoke(ctx, snsPayload)
	if err != nil || string(out) != "null" {
		t.Errorf("SNS invoke = %s, %v; want null", out, err)
	}

	httpPayload, _ := json.Marshal(webhookRequest(simBody(a1, "delivered"), nil))
	out, err = invoke.Invoke(ctx, httpPayload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != 200 {
		t.Errorf("HTTP invoke = %s (%v), want a 200 response", out, err)
	}

	for _, p := range []string{`[1,2]`, `{}`, `{"Records":[{"EventSource":"aws:sqs"}]}`, `"` + destination + `"`} {
		out, err := invoke.Invoke(ctx, []byte(p))
		if err != nil || string(out) != "null" {
			t.Errorf("invoke %s = %s, %v; want null, nil", p, out, err)
		}
	}
	if got, _ := f.store.Get(ctx, "k"); got.State != notify.StateDelivered {
		t.Errorf("state %s, want delivered", got.State)
	}
	if n := strings.Count(f.out.String(), `"Outcome":"poison"`); n != 4 {
		t.Errorf("%d poison counts, want 4", n)
	}
	if strings.Contains(f.out.String(), destination) {
		t.Errorf("logs hold the number:\n%s", f.out.String())
	}
}

// TestEndUserEventsOfAnotherConfigurationSet: with the stack's configuration set known, an End
// User Messaging event that names another one is a mismatch: counted and logged, neither
// stored nor applied; one that names this stack's, or none (a message sent before the name was
// put in its context), is applied.
func TestEndUserEventsOfAnotherConfigurationSet(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, set string
		want      notify.State
	}{
		{"another configuration set", "someone-elses", notify.StateSent},
		{"no configuration set (sent before the change)", "", notify.StateDelivered},
		{"this stack's configuration set", "resetnotify-events", notify.StateDelivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.rec.ConfigurationSet = "resetnotify-events"
			f.admit(t, "k", id, lease, acceptedEUM)
			h := &providerevents.Handler{Recorder: f.rec}
			ev := eumEvent(func(m map[string]any) {
				c := map[string]any{"attempt_ref": a1}
				if tc.set != "" {
					c["configuration_set"] = tc.set
				}
				m["context"] = c
			})
			if err := h.HandleSNS(ctx, snsEvent(ev)); err != nil {
				t.Fatalf("HandleSNS: %v", err)
			}
			if got, _ := f.store.Get(ctx, "k"); got.State != tc.want {
				t.Errorf("state %s, want %s", got.State, tc.want)
			}
			mismatch := strings.Contains(f.out.String(), `"Outcome":"mismatch"`)
			if mismatch != (tc.want == notify.StateSent) {
				t.Errorf("mismatch counted = %v:\n%s", mismatch, f.out.String())
			}
		})
	}
}
