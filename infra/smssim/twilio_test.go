package smssim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/twilio"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

const (
	twilioAccount = "AC00000000000000000000000000000001"
	twilioToken   = "0123456789abcdef0123456789abcdef"
	twilioKeySID  = "SK00000000000000000000000000000001"
	twilioSecret  = "fedcba9876543210fedcba9876543210"
)

// twilioSim is the Twilio mode's configuration for the test account and its API key.
func twilioSim(c smssim.Config) smssim.Config {
	c.Provider, c.TwilioAccountSID, c.TwilioAuthToken = smssim.ProviderTwilio, twilioAccount, twilioToken
	c.TwilioAPIKeySID, c.TwilioAPIKeySecret = twilioKeySID, twilioSecret
	return c
}

// twilioClient is the Twilio adapter for the simulator at base, under the test API key.
func twilioClient(t *testing.T, base, callback string) *twilio.Client {
	t.Helper()
	c, err := twilio.New(twilio.Config{BaseURL: base, AccountSID: twilioAccount, APIKeySID: twilioKeySID, APIKeySecret: twilioSecret, From: "+15005550006", CallbackURL: callback})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// callbackSink records the Twilio status callbacks posted to it, with their signatures.
type callbackSink struct {
	mu    sync.Mutex
	calls []*http.Request
	forms []url.Values
}

func (c *callbackSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(b))
	c.mu.Lock()
	c.calls, c.forms = append(c.calls, r), append(c.forms, form)
	c.mu.Unlock()
}

func (c *callbackSink) wait(t *testing.T, n int) ([]*http.Request, []url.Values) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		if len(c.calls) >= n {
			defer c.mu.Unlock()
			return c.calls, c.forms
		}
		c.mu.Unlock()
	}
	t.Fatalf("fewer than %d callbacks", n)
	return nil, nil
}

// TestTwilioMode sends through the real Twilio adapter to the simulator's Twilio mode: the
// message is accepted with a SID, found at once by SID, left out of the list while it lags,
// and its final status is posted to the StatusCallback URL that names the attempt, with a
// signature provider-events accepts under the token and refuses under another.
func TestTwilioMode(t *testing.T) {
	sink := &callbackSink{}
	hook := httptest.NewServer(sink)
	defer hook.Close()
	srv, base := smssimtest.Start(t, twilioSim(smssim.Config{DeliveryDelay: 50 * time.Millisecond, ListLag: time.Hour}))
	c := twilioClient(t, base, hook.URL+"/v1/provider-events/twilio")
	srv.SetReceipt("+447700900124", simapi.StatusUndelivered)
	out := c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: "n1-a1", ValidityPeriod: time.Minute})
	if out.Class != sms.ClassAccepted || !strings.HasPrefix(out.MessageID, "SM") {
		t.Fatalf("send: %s (%v)", out, out.Err)
	}
	res, err := c.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n1-a1", MessageID: out.MessageID})
	if err != nil || res.Status != sms.LookupFound || res.MessageID != out.MessageID {
		t.Fatalf("lookup by SID: %+v, %v", res, err)
	}
	if got := srv.Accepted(number); len(got) != 1 || got[0].ClientRef != "n1-a1" {
		t.Fatalf("inbox %+v, want the message under its attempt", got)
	}

	calls, forms := sink.wait(t, 1)
	full := hook.URL + calls[0].URL.RequestURI()
	if calls[0].URL.Query().Get("attempt") != "n1-a1" || forms[0].Get("MessageSid") != out.MessageID || forms[0].Get("MessageStatus") != "delivered" {
		t.Errorf("callback %s %v", full, forms[0])
	}
	sig := calls[0].Header.Get(providerevents.TwilioSignatureHeader)
	if !providerevents.TwilioSignatureValid([][]byte{[]byte(twilioToken)}, full, forms[0], sig) {
		t.Error("provider-events refuses the simulator's signature")
	}
	if providerevents.TwilioSignatureValid([][]byte{[]byte("another-token-0123456789abcdef01")}, full, forms[0], sig) {
		t.Error("the signature holds under another token")
	}

	// The list lags: the message is not there, although it was accepted and delivered.
	req, _ := http.NewRequest(http.MethodGet, base+"/2010-04-01/Accounts/"+twilioAccount+"/Messages.json?To="+url.QueryEscape(number), nil)
	req.SetBasicAuth(twilioKeySID, twilioSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Messages []json.RawMessage `json:"messages"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(list.Messages) != 0 {
		t.Errorf("list %d with %d messages, want none while it lags", resp.StatusCode, len(list.Messages))
	}

	// Twilio's refusals, with their codes.
	for mode, want := range map[smssim.Mode]sms.Outcome{
		smssim.ModeThrottle:      {Class: sms.ClassNotAccepted, Code: "20429"},
		smssim.ModeReject:        {Class: sms.ClassRejected, Code: "21211"},
		smssim.ModeRejectCountry: {Class: sms.ClassRejected, Detail: sms.DetailRestricted, Code: "21408"},
	} {
		srv.SetFault("+447700900125", mode)
		got := c.Send(context.Background(), sms.SendRequest{To: "+447700900125", Body: body, AttemptRef: "n2-a1", ValidityPeriod: time.Minute})
		if got.Class != want.Class || got.Code != want.Code || (want.Detail != "" && got.Detail != want.Detail) {
			t.Errorf("%s: %s, want %s code %s", mode, got, want.Class, want.Code)
		}
	}
	refusesBadCredentials(t, srv, base, hook.URL)
}

// refusesBadCredentials: the Twilio mode refuses a wrong key secret, another key's SID, the
// account SID with its auth token, and the key under another account's URL, on sends and
// look-ups alike, and with no message accepted.
func refusesBadCredentials(t *testing.T, srv *smssim.Server, base, hook string) {
	t.Helper()
	for name, cfg := range map[string]twilio.Config{
		"wrong secret":          {AccountSID: twilioAccount, APIKeySID: twilioKeySID, APIKeySecret: "wrong-secret-0123456789abcdef012"},
		"another key":           {AccountSID: twilioAccount, APIKeySID: "SK00000000000000000000000000000002", APIKeySecret: twilioSecret},
		"the auth token":        {AccountSID: twilioAccount, APIKeySID: twilioAccount, APIKeySecret: twilioToken},
		"another account's URL": {AccountSID: "AC00000000000000000000000000000002", APIKeySID: twilioKeySID, APIKeySecret: twilioSecret},
	} {
		cfg.BaseURL, cfg.From, cfg.CallbackURL = base, "+15005550006", hook
		bad, err := twilio.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := bad.Send(context.Background(), sms.SendRequest{To: "+447700900126", Body: body, AttemptRef: "n3-a1", ValidityPeriod: time.Minute}); got.HTTPStatus != 401 || got.Class != sms.ClassNotAccepted {
			t.Errorf("%s: send %s, want 401 not accepted", name, got)
		}
		if res, err := bad.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n1-a1", MessageID: "SM00000000000000000000000000000001"}); err == nil || res.Status != sms.LookupInconclusive {
			t.Errorf("%s: lookup %+v, %v; want refused", name, res, err)
		}
	}
	if got := srv.Accepted("+447700900126"); len(got) != 0 {
		t.Errorf("%d messages accepted under bad credentials", len(got))
	}
}

// TestTwilioSilentReceipt: a destination whose carrier never reports gets no callback.
func TestTwilioSilentReceipt(t *testing.T) {
	sink := &callbackSink{}
	hook := httptest.NewServer(sink)
	defer hook.Close()
	srv, base := smssimtest.Start(t, twilioSim(smssim.Config{DeliveryDelay: 10 * time.Millisecond}))
	srv.SetReceipt(number, simapi.StatusSilent)
	c := twilioClient(t, base, hook.URL)
	if out := c.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: "n1-a1", ValidityPeriod: time.Minute}); out.Class != sms.ClassAccepted {
		t.Fatalf("send: %s", out)
	}
	time.Sleep(100 * time.Millisecond)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.calls) != 0 {
		t.Errorf("%d callbacks, want none", len(sink.calls))
	}
}
