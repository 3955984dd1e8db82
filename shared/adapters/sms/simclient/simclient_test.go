package simclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simclient"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

const (
	number = "+447700900123"
	body   = "Your code is 918273. SECRET"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func sendReq() sms.SendRequest {
	return sms.SendRequest{To: number, Body: body, AttemptRef: "01JC0000000000000000000000-a2", ValidityPeriod: 89*time.Second + 900*time.Millisecond}
}

func TestSendClassifies(t *testing.T) {
	echo := fmt.Sprintf(`{"code":"destination_rejected","message":"%s is blocked"}`, number)
	smstest.SendSuite{
		Cases: append([]smstest.SendCase{
			{Name: "201", Handler: smstest.JSON(201, "", `{"message_id":"sim-1"}`), Class: sms.ClassAccepted, Reason: notify.ReasonProviderAccepted, MessageID: "sim-1"},
			{Name: "200", Handler: smstest.JSON(200, "", `{"message_id":"sim-2"}`), Class: sms.ClassAccepted, Reason: notify.ReasonProviderAccepted, MessageID: "sim-2"},
			{Name: "400 permanent", Handler: smstest.JSON(400, "", echo), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "destination_rejected"},
			{Name: "400 country not supported: the next provider may serve it", Handler: smstest.JSON(400, "", `{"code":"country_not_supported"}`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "country_not_supported", Failover: true},
			{Name: "401", Handler: smstest.JSON(401, "", `{"code":"unauthorized"}`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "unauthorized"},
			{Name: "429 with Retry-After", Handler: smstest.JSON(429, "7", `{"code":"throttled"}`), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, RetryAfter: 7 * time.Second, Code: "throttled"},
			{Name: "503 not processed", Handler: smstest.JSON(503, "2", `{"code":"unavailable_not_processed"}`), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderUnavailable, RetryAfter: 2 * time.Second, Code: "unavailable_not_processed"},
			{Name: "500", Handler: smstest.JSON(500, "", `{"code":"internal_error"}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous, Code: "internal_error"},
			{Name: "502", Handler: smstest.JSON(502, "", `<html>bad gateway</html>`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "504", Handler: smstest.JSON(504, "", ``), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "408", Handler: smstest.JSON(408, "", ``), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "garbage 201 body", Handler: smstest.JSON(201, "", `{"message_id":`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "201 without an ID", Handler: smstest.JSON(201, "", `{}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "201 body cut short", Handler: smstest.Hijack(func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"message_id\":")
			}), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
		}, smstest.TransportCases()...),
		HangTimeout: 200 * time.Millisecond,
		Send: func(t *testing.T, base string, timeout time.Duration) sms.Outcome {
			c, err := simclient.New(simclient.Config{BaseURL: base, Token: "tok", Timeout: timeout, Clock: notifytest.NewClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			return c.Send(context.Background(), sendReq())
		},
		CheckRequest: func(t *testing.T, r smstest.Request) {
			smstest.CheckJSONPost(t, r, "/messages", "Bearer tok")
			want := simapi.SendRequest{To: number, Body: body, ClientRef: "01JC0000000000000000000000-a2", ValiditySeconds: 89}
			smstest.CheckBody(t, r, want)
		},
		Retried: "the client",
	}.Run(t)
}

func TestSendRefusesTooShortValidity(t *testing.T) {
	f := smstest.NewProvider(t, smstest.JSON(201, "", `{"message_id":"sim-1"}`))
	c, _ := simclient.New(simclient.Config{BaseURL: f.URL})
	req := sendReq()
	req.ValidityPeriod = 999 * time.Millisecond
	out := c.Send(context.Background(), req)
	if out.Class != sms.ClassNotAccepted || out.Detail != sms.DetailNotWritten || !errors.Is(out.Err, sms.ErrValidityTooShort) {
		t.Fatalf("outcome %s (%v), want not accepted / not written / ErrValidityTooShort", out, out.Err)
	}
	if n := len(f.Requests()); n != 0 {
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
	smstest.LookupSuite{
		Cases: []smstest.LookupCase{
			{Name: "found by reference", Handler: smstest.JSON(200, "", string(delivered)), Now: t0, WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: found},
			{Name: "found twice", Handler: smstest.JSON(200, "", string(two)), Now: t0, WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: twice},
			{Name: "found by ID", MessageID: "sim-9", Handler: smstest.JSON(200, "", string(byID)), Now: t0, WantPath: "/messages/sim-9", Want: sms.Found("sim-9", sms.ReceiptUndelivered, final)},
			{Name: "ID of another attempt", MessageID: "sim-9", Handler: smstest.JSON(200, "", string(other)), Now: t0, WantPath: "/messages/sim-9", Want: sms.Inconclusive("reference_mismatch"), WantErr: true},
			{Name: "nothing within the window", Handler: smstest.JSON(200, "", `{"messages":[]}`), Now: t0.Add(9 * time.Second), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.Inconclusive("not_visible_yet")},
			{Name: "nothing after the window", Handler: smstest.JSON(200, "", `{"messages":[]}`), Now: t0.Add(10 * time.Second), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.LookupResult{Status: sms.LookupNotFound}},
			{Name: "ID not found after the window", MessageID: "sim-9", Handler: smstest.JSON(404, "", `{"code":"not_found"}`), Now: t0.Add(time.Hour), WantPath: "/messages/sim-9", Want: sms.LookupResult{Status: sms.LookupNotFound}},
			{Name: "500", Handler: smstest.JSON(500, "", `{"code":"internal_error"}`), Now: t0.Add(time.Hour), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "503", Handler: smstest.JSON(503, "1", ``), Now: t0.Add(time.Hour), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "404 on the list", Handler: smstest.JSON(404, "", ``), Now: t0.Add(time.Hour), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "garbage", Handler: smstest.JSON(200, "", `[`), Now: t0.Add(time.Hour), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "connection dropped", Handler: smstest.Drop, Now: t0.Add(time.Hour), WantPath: "/messages", WantQuery: url.Values{"client_ref": {ref}}, Want: sms.Inconclusive("provider_error"), WantErr: true},
		},
		Lookup: func(t *testing.T, base string, now time.Time, messageID string) (sms.LookupResult, error) {
			c, _ := simclient.New(simclient.Config{BaseURL: base, Token: "tok", Visibility: 10 * time.Second, Clock: notifytest.NewClock(now)})
			return c.Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, MessageID: messageID, AttemptedAt: t0})
		},
		Auth: "Bearer tok",
	}.Run(t)
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []simclient.Config{{}, {BaseURL: "ftp://x"}, {BaseURL: "http://127.0.0.1:1", Visibility: -1}} {
		if _, err := simclient.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
