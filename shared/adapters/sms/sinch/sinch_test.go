package sinch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/sinch"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

const (
	number = "+447700900123"
	body   = "Your code is 918273. SECRET"
	ref    = "01JC0000000000000000000000-a3"
	plan   = "plan123"
	// callbackToken has a character that must be escaped in a query.
	callbackToken = "cb-token/0123456789"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 250_000_000, time.UTC)

func newClient(t *testing.T, base string, now time.Time) *sinch.Client {
	return newClientTimeout(t, base, now, 10*time.Second)
}

func newClientTimeout(t *testing.T, base string, now time.Time, timeout time.Duration) *sinch.Client {
	t.Helper()
	c, err := sinch.New(sinch.Config{
		BaseURL: base, ServicePlanID: plan, APIToken: "tok", From: "ShopCo",
		CallbackURL: "https://hooks.example/v1/provider-events/sinch", CallbackToken: callbackToken, Timeout: timeout,
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
	smstest.SendSuite{
		Cases: append([]smstest.SendCase{
			{Name: "201", Handler: smstest.JSON(201, "", batch), Class: sms.ClassAccepted, Reason: notify.ReasonProviderAccepted, MessageID: "01FC66621XXXXX119Z8PMV1QPQ"},
			{Name: "400 permanent", Handler: smstest.JSON(400, "", echo), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "syntax_invalid_parameter_format"},
			{Name: "401", Handler: smstest.JSON(401, "", `{"code":"unauthorized","text":"no"}`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "unauthorized"},
			{Name: "403", Handler: smstest.JSON(403, "", `{"code":"forbidden","text":"no"}`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "forbidden"},
			{Name: "429 with Retry-After", Handler: smstest.JSON(429, "3", `{"code":"too_many_requests"}`), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, RetryAfter: 3 * time.Second, Code: "too_many_requests"},
			{Name: "503 is not documented as not processed", Handler: smstest.JSON(503, "3", ``), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "500", Handler: smstest.JSON(500, "", `{"code":"internal"}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous, Code: "internal"},
			{Name: "502", Handler: smstest.JSON(502, "", `<html/>`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "504", Handler: smstest.JSON(504, "", ``), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "garbage 201 body", Handler: smstest.JSON(201, "", `{"id":`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "201 without an ID", Handler: smstest.JSON(201, "", `{"canceled":false}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "201 body cut short", Handler: smstest.Hijack(func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n{\"id\":")
			}), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
		}, smstest.TransportCases()...),
		HangTimeout: 200 * time.Millisecond,
		Send: func(t *testing.T, base string, timeout time.Duration) sms.Outcome {
			return newClientTimeout(t, base, t0, timeout).Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 89*time.Second + 900*time.Millisecond})
		},
		CheckRequest: func(t *testing.T, r smstest.Request) {
			smstest.CheckJSONPost(t, r, "/xms/v1/plan123/batches", "Bearer tok")
			want := map[string]any{
				"from":             "ShopCo",
				"to":               []any{number},
				"body":             body,
				"client_reference": ref,
				// 12:00:00.250 + 89 s, truncated to the second: never later than now + validity.
				"expire_at":       "2026-11-01T12:01:29.000Z",
				"delivery_report": "per_recipient_final",
				"callback_url":    "https://hooks.example/v1/provider-events/sinch?token=cb-token%2F0123456789",
			}
			smstest.CheckBody(t, r, want)
		},
		Retried: "the client",
	}.Run(t)
}

func TestSendValidity(t *testing.T) {
	f := smstest.NewProvider(t, smstest.JSON(201, "", `{"id":"b1"}`))
	c := newClient(t, f.URL, t0)
	out := c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 999 * time.Millisecond})
	if out.Class != sms.ClassNotAccepted || !errors.Is(out.Err, sms.ErrValidityTooShort) || len(f.Requests()) != 0 {
		t.Fatalf("outcome %s (%v), %d requests; want a refusal without a call", out, out.Err, len(f.Requests()))
	}
	out = c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 10 * 24 * time.Hour})
	if out.Class != sms.ClassAccepted {
		t.Fatalf("outcome %s (%v)", out, out.Err)
	}
	var got struct {
		ExpireAt string `json:"expire_at"`
	}
	json.Unmarshal(f.Requests()[0].Body, &got)
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
	smstest.LookupSuite{
		Cases: []smstest.LookupCase{
			{Name: "found by reference", Handler: smstest.JSON(200, "", list(ref)), Now: t0, WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Found("b1", sms.ReceiptNone, time.Time{})},
			{Name: "filter matched loosely", Handler: smstest.JSON(200, "", list(ref+"0", ref)), Now: t0, WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Found("b2", sms.ReceiptNone, time.Time{})},
			{Name: "found twice", Handler: smstest.JSON(200, "", list(ref, ref)), Now: t0, WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: twice},
			{Name: "found by batch ID", MessageID: "b7", Handler: smstest.JSON(200, "", `{"id":"b7","client_reference":"`+ref+`"}`), Now: t0, WantPath: "/xms/v1/plan123/batches/b7", WantQuery: url.Values{}, Want: sms.Found("b7", sms.ReceiptNone, time.Time{})},
			{Name: "batch of another attempt", MessageID: "b7", Handler: smstest.JSON(200, "", `{"id":"b7","client_reference":"x-a1"}`), Now: t0, WantPath: "/xms/v1/plan123/batches/b7", WantQuery: url.Values{}, Want: sms.Inconclusive("reference_mismatch"), WantErr: true},
			{Name: "nothing within the window", Handler: smstest.JSON(200, "", list()), Now: t0.Add(29 * time.Second), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Inconclusive("not_visible_yet")},
			{Name: "nothing after the window", Handler: smstest.JSON(200, "", list(ref+"0")), Now: t0.Add(30 * time.Second), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.LookupResult{Status: sms.LookupNotFound}},
			{Name: "no match on the first of more pages", Handler: smstest.JSON(200, "", page(150, 100)), Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Inconclusive("more_pages")},
			{Name: "no match on the only page", Handler: smstest.JSON(200, "", page(100, 100)), Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.LookupResult{Status: sms.LookupNotFound}},
			{Name: "batch ID not found", MessageID: "b7", Handler: smstest.JSON(404, "", `{"code":"not_found"}`), Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches/b7", WantQuery: url.Values{}, Want: sms.LookupResult{Status: sms.LookupNotFound}},
			{Name: "429", Handler: smstest.JSON(429, "1", ``), Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "500", Handler: smstest.JSON(500, "", ``), Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "garbage", Handler: smstest.JSON(200, "", `{`), Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "connection dropped", Handler: smstest.Drop, Now: t0.Add(time.Hour), WantPath: "/xms/v1/plan123/batches", WantQuery: listQuery, Want: sms.Inconclusive("provider_error"), WantErr: true},
		},
		Lookup: func(t *testing.T, base string, now time.Time, messageID string) (sms.LookupResult, error) {
			return newClient(t, base, now).Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, MessageID: messageID, AttemptedAt: t0})
		},
		Auth: "Bearer tok",
	}.Run(t)
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

// TestDeliveryReports: a batch asks for final delivery reports at the callback URL, with the
// callback token in its query, only when a callback is configured; a callback without a token,
// or one whose URL already has a query, is refused at start-up without quoting the token.
func TestDeliveryReports(t *testing.T) {
	send := func(t *testing.T, cfg sinch.Config) map[string]any {
		t.Helper()
		f := smstest.NewProvider(t, smstest.JSON(201, "", `{"id":"b1"}`))
		cfg.BaseURL, cfg.ServicePlanID, cfg.APIToken, cfg.From, cfg.Clock = f.URL, plan, "tok", "ShopCo", notifytest.NewClock(t0)
		c, err := sinch.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if out := c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: time.Minute}); out.Class != sms.ClassAccepted {
			t.Fatalf("outcome %s (%v)", out, out.Err)
		}
		var got map[string]any
		if err := json.Unmarshal(f.Requests()[0].Body, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Run("no callback, no reports", func(t *testing.T) {
		got := send(t, sinch.Config{})
		if got["delivery_report"] != sinch.ReportNone || got["callback_url"] != nil || got["client_reference"] != ref {
			t.Errorf("batch asks for %v at %v (reference %v), want none at no URL, with the reference", got["delivery_report"], got["callback_url"], got["client_reference"])
		}
	})
	t.Run("callback with its token", func(t *testing.T) {
		got := send(t, sinch.Config{CallbackURL: "https://api.example/v1/provider-events/sinch", CallbackToken: callbackToken})
		u, err := url.Parse(fmt.Sprint(got["callback_url"]))
		if err != nil || u.Query().Get(sinch.CallbackTokenQuery) != callbackToken || u.Path != "/v1/provider-events/sinch" {
			t.Errorf("callback_url %v, want the route with the token in its query", got["callback_url"])
		}
		if got["delivery_report"] != sinch.ReportFinal || got["client_reference"] != ref {
			t.Errorf("batch asks for %v (reference %v), want %s with the attempt reference", got["delivery_report"], got["client_reference"], sinch.ReportFinal)
		}
	})
	for name, cfg := range map[string]sinch.Config{
		"no token":        {CallbackURL: "https://api.example/v1/provider-events/sinch"},
		"a query":         {CallbackURL: "https://api.example/v1/provider-events/sinch?token=x", CallbackToken: callbackToken},
		"not http":        {CallbackURL: "ftp://api.example/x", CallbackToken: callbackToken},
		"user in the URL": {CallbackURL: "https://u:p@api.example/x", CallbackToken: callbackToken},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.BaseURL, cfg.ServicePlanID, cfg.APIToken, cfg.From = "https://sinch.example", plan, "tok", "ShopCo"
			_, err := sinch.New(cfg)
			if err == nil || strings.Contains(err.Error(), callbackToken) {
				t.Errorf("New = %v, want an error that does not quote the token", err)
			}
		})
	}
}
