package twilio_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/twilio"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

const (
	number   = smstest.Number
	body     = smstest.Body
	ref      = "01JC0000000000000000000000-a3"
	account  = "AC0123456789abcdef0123456789abcdef"
	keySID   = "SK0123456789abcdef0123456789abcdef"
	secret   = "fedcba9876543210fedcba9876543210"
	callback = "https://hooks.example/v1/provider-events/twilio"
	sid      = "SM0123456789abcdef0123456789abcdef"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 250_000_000, time.UTC)

func newClient(t *testing.T, base string, timeout time.Duration, mutate ...func(*twilio.Config)) *twilio.Client {
	t.Helper()
	cfg := twilio.Config{
		BaseURL: base, AccountSID: account, APIKeySID: keySID, APIKeySecret: secret, MessagingServiceSID: "MG0123",
		CallbackURL: callback, Timeout: timeout, Visibility: 30 * time.Second, Clock: notifytest.NewClock(t0),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := twilio.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// basic is the only Authorization the fakes accept: the API key's SID and secret, never the
// account SID with the auth token.
func basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(keySID+":"+secret))
}

// TestSendClassifies runs Twilio's documented answers through the adapter: each maps to its
// row of the outcome table (docs/providers.md), and the one request is a form post that names
// the attempt in its StatusCallback and asks for the validity left, in whole seconds.
func TestSendClassifies(t *testing.T) {
	created := fmt.Sprintf(`{"sid":"%s","status":"accepted","to":"%s","body":"%s"}`, sid, number, body)
	echo := func(status, code int) string {
		return fmt.Sprintf(`{"code":%d,"message":"The 'To' number %s is not valid.","more_info":"https://www.twilio.com/docs/errors/%d","status":%d}`, code, number, code, status)
	}
	smstest.SendSuite{
		Cases: append([]smstest.SendCase{
			{Name: "201", Handler: smstest.JSON(201, "", created), Class: sms.ClassAccepted, Reason: notify.ReasonProviderAccepted, MessageID: sid},
			{Name: "400 invalid number", Handler: smstest.JSON(400, "", echo(400, 21211)), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "21211"},
			{Name: "400 opted out", Handler: smstest.JSON(400, "", echo(400, 21610)), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "21610"},
			{Name: "400 geo permission", Handler: smstest.JSON(400, "", echo(400, 21408)), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "21408", Failover: true},
			{Name: "400 cannot route", Handler: smstest.JSON(400, "", echo(400, 21612)), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "21612", Failover: true},
			{Name: "401 authentication failed", Handler: smstest.JSON(401, "", echo(401, 20003)), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderUnavailable, Code: "20003", Failover: true},
			{Name: "429 with Retry-After", Handler: smstest.JSON(429, "3", echo(429, 20429)), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, RetryAfter: 3 * time.Second, Code: "20429", Failover: true},
			{Name: "503 is not documented as not processed", Handler: smstest.JSON(503, "3", ``), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "500", Handler: smstest.JSON(500, "", echo(500, 20500)), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous, Code: "20500"},
			{Name: "502", Handler: smstest.JSON(502, "", `<html/>`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "garbage 201 body", Handler: smstest.JSON(201, "", `{"sid":`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "201 without a SID", Handler: smstest.JSON(201, "", `{"status":"queued"}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "201 body cut short", Handler: smstest.Hijack(func(c net.Conn) {
				io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n{\"sid\":")
			}), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
		}, smstest.TransportCases()...),
		HangTimeout: 200 * time.Millisecond,
		Send: func(t *testing.T, base string, timeout time.Duration) sms.Outcome {
			return newClient(t, base, timeout).Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 89*time.Second + 900*time.Millisecond})
		},
		CheckRequest: func(t *testing.T, r smstest.Request) {
			if a, typ, key := r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"); r.Method != "POST" ||
				r.Path != "/2010-04-01/Accounts/"+account+"/Messages.json" || a != basic() || typ != "application/x-www-form-urlencoded" || key != "" {
				t.Errorf("request %s %s type=%q idempotency-key=%q", r.Method, r.Path, typ, key)
			}
			got, err := url.ParseQuery(string(r.Body))
			if err != nil {
				t.Fatal(err)
			}
			want := url.Values{
				"To": {number}, "Body": {body}, "MessagingServiceSid": {"MG0123"},
				// 89.9 s rounded down: never longer than the time left.
				"ValidityPeriod": {"89"},
				"StatusCallback": {callback + "?attempt=" + ref},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("form (-want +got):\n%s", diff)
			}
		},
		Retried: "the client",
	}.Run(t)
}

// TestSendValidity: less than a second left is not sent at all; more than Twilio's maximum is
// clamped to 36,000 s; a From sender is sent as From.
func TestSendValidity(t *testing.T) {
	f := smstest.NewProvider(t, smstest.JSON(201, "", `{"sid":"SM1"}`))
	c := newClient(t, f.URL, 10*time.Second, func(c *twilio.Config) { c.MessagingServiceSID, c.From = "", "+15005550006" })
	out := c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 999 * time.Millisecond})
	if out.Class != sms.ClassNotAccepted || !errors.Is(out.Err, sms.ErrValidityTooShort) || len(f.Requests()) != 0 {
		t.Fatalf("outcome %s (%v), %d requests; want a refusal without a call", out, out.Err, len(f.Requests()))
	}
	out = c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 24 * time.Hour})
	if out.Class != sms.ClassAccepted {
		t.Fatalf("outcome %s (%v)", out, out.Err)
	}
	got, _ := url.ParseQuery(string(f.Requests()[0].Body))
	if got.Get("ValidityPeriod") != "36000" || got.Get("From") != "+15005550006" || got.Has("MessagingServiceSid") {
		t.Errorf("form %v, want ValidityPeriod 36000 from the number", got)
	}
}

// TestLookup: only a SID is ever looked up, and no answer is "not found": not a 404 for the
// SID, not the absence of a SID, however long after the attempt.
func TestLookup(t *testing.T) {
	msg := func(status string) string {
		return fmt.Sprintf(`{"sid":"%s","status":"%s","to":"%s","date_updated":"Sun, 01 Nov 2026 12:00:09 +0000"}`, sid, status, number)
	}
	path := "/2010-04-01/Accounts/" + account + "/Messages/" + sid + ".json"
	late := t0.Add(24 * time.Hour)
	at := time.Date(2026, 11, 1, 12, 0, 9, 0, time.UTC)
	smstest.LookupSuite{
		Cases: []smstest.LookupCase{
			{Name: "sent", MessageID: sid, Handler: smstest.JSON(200, "", msg("sent")), Now: late, WantPath: path, Want: sms.Found(sid, sms.ReceiptNone, time.Time{})},
			{Name: "delivered", MessageID: sid, Handler: smstest.JSON(200, "", msg("delivered")), Now: late, WantPath: path, Want: sms.Found(sid, sms.ReceiptDelivered, at)},
			{Name: "undelivered", MessageID: sid, Handler: smstest.JSON(200, "", msg("undelivered")), Now: late, WantPath: path, Want: sms.Found(sid, sms.ReceiptUndelivered, at)},
			{Name: "failed", MessageID: sid, Handler: smstest.JSON(200, "", msg("failed")), Now: late, WantPath: path, Want: sms.Found(sid, sms.ReceiptUndelivered, at)},
			{Name: "another SID", MessageID: sid, Handler: smstest.JSON(200, "", `{"sid":"SMother","status":"sent"}`), Now: late, WantPath: path, Want: sms.Inconclusive("sid_mismatch"), WantErr: true},
			{Name: "404 is not not-found", MessageID: sid, Handler: smstest.JSON(404, "", `{"code":20404,"status":404}`), Now: late, WantPath: path, Want: sms.Inconclusive("sid_not_found")},
			{Name: "429", MessageID: sid, Handler: smstest.JSON(429, "1", ``), Now: late, WantPath: path, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "garbage", MessageID: sid, Handler: smstest.JSON(200, "", `{`), Now: late, WantPath: path, Want: sms.Inconclusive("provider_error"), WantErr: true},
			{Name: "connection dropped", MessageID: sid, Handler: smstest.Drop, Now: late, WantPath: path, Want: sms.Inconclusive("provider_error"), WantErr: true},
		},
		Lookup: func(t *testing.T, base string, now time.Time, messageID string) (sms.LookupResult, error) {
			c := newClient(t, base, 10*time.Second, func(c *twilio.Config) { c.Clock = notifytest.NewClock(now) })
			return c.Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, MessageID: messageID, AttemptedAt: t0})
		},
		Auth: basic(),
	}.Run(t)
}

// TestLookupWithoutSIDAsksNothing: an attempt whose answer was lost has no SID; the lookup
// neither calls Twilio (its list cannot name the attempt) nor answers "not found", a day
// after the attempt as at once.
func TestLookupWithoutSIDAsksNothing(t *testing.T) {
	f := smstest.NewProvider(t, smstest.JSON(200, "", `{"messages":[]}`))
	for _, now := range []time.Time{t0, t0.Add(24 * time.Hour)} {
		c := newClient(t, f.URL, time.Second, func(c *twilio.Config) { c.Clock = notifytest.NewClock(now) })
		res, err := c.Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, AttemptedAt: t0})
		if err != nil || res.Status != sms.LookupInconclusive || res.Detail != "no_message_sid" {
			t.Errorf("at %s: %+v, %v; want inconclusive no_message_sid", now, res, err)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func TestNewValidates(t *testing.T) {
	ok := twilio.Config{AccountSID: account, APIKeySID: keySID, APIKeySecret: secret, From: "+15005550006", CallbackURL: callback}
	if _, err := twilio.New(ok); err != nil {
		t.Fatalf("New: %v", err)
	}
	for name, mutate := range map[string]func(*twilio.Config){
		"no account":          func(c *twilio.Config) { c.AccountSID = "" },
		"no key SID":          func(c *twilio.Config) { c.APIKeySID = "" },
		"no key secret":       func(c *twilio.Config) { c.APIKeySecret = "" },
		"no sender":           func(c *twilio.Config) { c.From = "" },
		"two senders":         func(c *twilio.Config) { c.MessagingServiceSID = "MG1" },
		"no callback":         func(c *twilio.Config) { c.CallbackURL = "" },
		"callback with query": func(c *twilio.Config) { c.CallbackURL = callback + "?attempt=x" },
		"base not http":       func(c *twilio.Config) { c.BaseURL = "ftp://x" },
		"negative visibility": func(c *twilio.Config) { c.Visibility = -time.Second },
	} {
		cfg := ok
		mutate(&cfg)
		if _, err := twilio.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error quotes the key secret", name)
		}
	}
}
