package e2e_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// twilioStack returns the stack and its Twilio status callback route and auth token
// (RESETNOTIFY_E2E_TWILIO_SIM, RESETNOTIFY_E2E_TWILIO_WEBHOOK and
// RESETNOTIFY_E2E_TWILIO_TOKEN_FILE). `make e2e` and `make emulator-e2e` both set them and
// RESETNOTIFY_E2E=required, under which a stack without them fails t: both chains hold Twilio.
// Another stack (the suite run by hand) skips, saying so.
func twilioStack(t *testing.T) (s *stack, hook, token string) {
	t.Helper()
	s = getStack(t)
	hook, file := os.Getenv("RESETNOTIFY_E2E_TWILIO_WEBHOOK"), os.Getenv("RESETNOTIFY_E2E_TWILIO_TOKEN_FILE")
	if s.sim2 == "" || s.twilio == "" || hook == "" || file == "" {
		msg := "no Twilio in the stack's chain (RESETNOTIFY_E2E_SIM2, RESETNOTIFY_E2E_TWILIO_SIM, _WEBHOOK or _TOKEN_FILE not set)"
		if os.Getenv("RESETNOTIFY_E2E") == "required" {
			t.Fatal(msg + " although RESETNOTIFY_E2E=required: make e2e and make emulator-e2e both run Twilio")
		}
		t.Skip(msg)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return s, hook, strings.TrimSpace(string(b))
}

// viaTwilio scripts the chain so that to's attempts reach Twilio, the third provider: the two
// simulators refuse the number's country (a restriction of their own, which fails over at once
// without counting against their health), and Twilio answers twilioModes. first are the first
// simulator's modes after its refusal, for an attempt that comes back to it.
func (s *stack) viaTwilio(t *testing.T, to string, first []string, twilioModes ...string) {
	t.Helper()
	s.simDoAt(t, s.sim, http.MethodPost, "/control/faults", simapi.Fault{To: to, Modes: append([]string{"reject_country"}, first...)}, nil)
	s.simDoAt(t, s.sim2, http.MethodPost, "/control/faults", simapi.Fault{To: to, Mode: "reject_country"}, nil)
	s.simDoAt(t, s.twilio, http.MethodPost, "/control/faults", simapi.Fault{To: to, Modes: twilioModes}, nil)
}

// requestsAt returns the send requests the simulator at base received for to.
func (s *stack) requestsAt(t *testing.T, base, to string) []simapi.RequestEntry {
	t.Helper()
	var log simapi.RequestLog
	s.simDoAt(t, base, http.MethodGet, "/requests", nil, &log)
	var out []simapi.RequestEntry
	for _, e := range log.Requests {
		if e.To == to {
			out = append(out, e)
		}
	}
	return out
}

// twilioSign signs a status callback to fullURL with form under token as Twilio documents it
// (HMAC-SHA1 of the URL followed by the parameters sorted by name, base64): written here
// apart from the stack's code, as a caller outside it would.
func twilioSign(token, fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	data := fullURL
	for _, k := range keys {
		for _, v := range form[k] {
			data += k + v
		}
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// postTwilioCallback posts a status callback for attempt ref and message sid with status to
// the route, signed under key (no signature when key is empty), and returns the answer.
func (s *stack) postTwilioCallback(t *testing.T, hook, key, ref, sid, status, to string) (int, string) {
	t.Helper()
	full := hook + "?" + url.Values{"attempt": {ref}}.Encode()
	form := url.Values{"MessageSid": {sid}, "SmsSid": {sid}, "MessageStatus": {status}, "SmsStatus": {status}, "To": {to}, "ApiVersion": {"2010-04-01"}}
	req, err := http.NewRequest(http.MethodPost, full, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if key != "" {
		req.Header.Set("X-Twilio-Signature", twilioSign(key, full, form))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("POST the Twilio webhook: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// twilioDelivered sends one notification through Twilio and waits until its signed status
// callback has delivered it; it returns the status and the attempt reference.
func (s *stack) twilioDelivered(t *testing.T, name, to string) (status, string) {
	t.Helper()
	s.viaTwilio(t, to, nil, "accept")
	n := s.newNotification(t, name, to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" || st.Reason != "RECEIPT_DELIVERED" {
		t.Fatalf("ended %s/%s, want delivered/RECEIPT_DELIVERED", st.State, st.Reason)
	}
	if got := providersOf(st); !slices.Equal(got, []string{"simulator", "simulator2", "twilio"}) || !strings.HasPrefix(st.ProviderMessageID, "SM") {
		t.Fatalf("attempts went to %v, message %q; want simulator, simulator2 (both refusing the country), then twilio with a Message SID", got, st.ProviderMessageID)
	}
	return st, fmt.Sprintf("%s-a%d", st.NotificationID, st.Attempt)
}

// TestTwilioDeliveredBySignedCallback: Twilio accepts; its status callback, posted to the URL
// that names the attempt and signed with the auth token, delivers the notification. One
// message, at Twilio, asked to live no longer than the time left before the deadline.
func TestTwilioDeliveredBySignedCallback(t *testing.T) {
	s, _, _ := twilioStack(t)
	to := number(t)
	st, ref := s.twilioDelivered(t, "twilio-delivered", to)
	if a, b, c := s.sentAt(t, s.sim, to), s.sentAt(t, s.sim2, to), s.sentAt(t, s.twilio, to); a != 0 || b != 0 || c != 1 {
		t.Errorf("the providers accepted %d, %d and %d messages, want 0, 0 and 1", a, b, c)
	}
	var inbox simapi.Inbox
	s.simDoAt(t, s.twilio, http.MethodGet, "/inbox", nil, &inbox)
	m := inbox.Destinations[to].Messages[0]
	deadline, err := time.Parse(time.RFC3339Nano, st.DispatchDeadline)
	if err != nil {
		t.Fatal(err)
	}
	if m.MessageID != st.ProviderMessageID || m.ClientRef != ref || m.ValidUntil.After(deadline) || m.ValiditySeconds < 1 {
		t.Errorf("Twilio holds %+v; want SID %s, the attempt %s in its callback URL, valid until no later than %s", m, st.ProviderMessageID, ref, deadline)
	}
	s.audited(t, st.EventID, ": delivered, because")
}

// TestTwilioForgedCallback: a callback for a delivered Twilio attempt that is not signed, or
// signed with another token, is answered 403 and changes nothing; a genuine one replayed
// (signed with the auth token) is acknowledged and changes nothing either.
func TestTwilioForgedCallback(t *testing.T) {
	s, hook, token := twilioStack(t)
	to := number(t)
	st, ref := s.twilioDelivered(t, "twilio-forged", to)
	for _, tc := range []struct {
		name, key, status string
		wantCode          int
	}{
		{name: "unsigned", status: "undelivered", wantCode: http.StatusForbidden},
		{name: "signed with another token", key: strings.Repeat("f", len(token)), status: "undelivered", wantCode: http.StatusForbidden},
		{name: "a genuine callback replayed", key: token, status: "delivered", wantCode: http.StatusOK},
		{name: "a genuine contradiction", key: token, status: "undelivered", wantCode: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.postTwilioCallback(t, hook, tc.key, ref, st.ProviderMessageID, tc.status, to)
			if code != tc.wantCode || (code == http.StatusOK && body == `{"outcome":"transitioned"}`) || strings.Contains(body, to) {
				t.Errorf("answer %d %s, want %d changing nothing", code, body, tc.wantCode)
			}
			if got := s.get(t, st.IdempotencyKey); got.State != "delivered" || got.Reason != "RECEIPT_DELIVERED" {
				t.Errorf("the notification is %s/%s, want still delivered/RECEIPT_DELIVERED", got.State, got.Reason)
			}
		})
	}
	if got := s.sent(t, to); got != 1 {
		t.Errorf("%d messages sent, want 1", got)
	}
}

// TestTwilioTimeoutSettledByLateCallback: Twilio accepts, then the answer is lost (the call
// times out after the request was written), so the attempt has no Message SID and is
// dispatch_unknown. Its status callback, which names the attempt in its URL, arrives after the
// timeout and settles it: delivered, with the SID the callback carried, never re-sent.
func TestTwilioTimeoutSettledByLateCallback(t *testing.T) {
	s, _, _ := twilioStack(t)
	to := number(t)
	s.viaTwilio(t, to, nil, "accept_then_timeout", "accept")
	n := s.newNotification(t, "twilio-late-callback", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" || st.Attempt != 3 || st.Provider != "twilio" {
		t.Fatalf("ended %s/%s after %d attempts through %q, want delivered after 3 through twilio", st.State, st.Reason, st.Attempt, st.Provider)
	}
	var inbox simapi.Inbox
	s.simDoAt(t, s.twilio, http.MethodGet, "/inbox", nil, &inbox)
	if d := inbox.Destinations[to]; d.Count != 1 || d.Messages[0].MessageID != st.ProviderMessageID {
		t.Errorf("Twilio holds %+v, want one message whose SID the status shows (%s)", d, st.ProviderMessageID)
	}
	if got := s.sent(t, to); got != 1 {
		t.Errorf("%d messages sent, want 1", got)
	}
	if reqs := s.requestsAt(t, s.twilio, to); len(reqs) != 1 {
		t.Errorf("Twilio got %d send requests, want 1", len(reqs))
	}
	s.audited(t, n.EventID, "(PROVIDER_TIMEOUT)", "(RECONCILED_BY_RECEIPT)", ": delivered, because")
}

// TestTwilioTimeoutWithoutCallbackExpires: the call to Twilio times out and no status
// callback ever comes. Without a SID nothing can be looked up (Twilio's message list names no
// attempt and lags, here ten minutes, far past the visibility window), so nothing counts as
// "not found": the notification stays dispatch_unknown and expires unresolved at its deadline,
// and Twilio is never asked again. Whether Twilio had not accepted the message (expired
// unsent) or had (its callback lost), exactly what Twilio got once is all that is sent.
func TestTwilioTimeoutWithoutCallbackExpires(t *testing.T) {
	s, _, _ := twilioStack(t)
	for _, tc := range []struct {
		name, mode string
		wantSent   int
	}{
		{name: "never accepted", mode: "timeout_before_accept", wantSent: 0},
		{name: "accepted, its callback lost", mode: "accept_then_timeout", wantSent: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			to := number(t)
			s.viaTwilio(t, to, nil, tc.mode, "accept")
			s.simDoAt(t, s.twilio, http.MethodPost, "/control/faults", simapi.Fault{To: to, Modes: []string{tc.mode, "accept"}, Receipt: simapi.StatusSilent}, nil)
			n := s.newNotification(t, "twilio-no-callback-"+tc.mode, to, 40*time.Second)
			if r := s.submit(t, n); r.Code != http.StatusAccepted {
				t.Fatalf("POST: %d %s", r.Code, r.Body)
			}
			st := s.waitState(t, n.key(), settle, "expired", "sent", "delivered", "undelivered", "failed")
			if st.State != "expired" || st.Reason != "EXPIRED_UNRESOLVED" || st.Provider != "twilio" {
				t.Fatalf("ended %s/%s through %q, want expired/EXPIRED_UNRESOLVED through twilio", st.State, st.Reason, st.Provider)
			}
			if got := s.sent(t, to); got != tc.wantSent {
				t.Errorf("%d messages sent, want %d", got, tc.wantSent)
			}
			if reqs := s.requestsAt(t, s.twilio, to); len(reqs) != 1 {
				t.Errorf("Twilio got %d send requests, want 1: an unknown outcome is never re-sent", len(reqs))
			}
			s.audited(t, n.EventID, "(PROVIDER_TIMEOUT)", ": expired, because")
		})
	}
}

// TestTwilioThrottleFailsOver: Twilio answers 429 (error 20429, not processed), which proves
// it did not send, so the next attempt goes at once to the next provider of the chain (the
// first, cyclically), which delivers. Twilio accepted nothing.
func TestTwilioThrottleFailsOver(t *testing.T) {
	s, _, _ := twilioStack(t)
	to := number(t)
	s.viaTwilio(t, to, []string{"accept"}, "throttle")
	n := s.newNotification(t, "twilio-throttle", to, 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	st := s.waitState(t, n.key(), settle, "delivered", "undelivered", "failed", "expired")
	if st.State != "delivered" {
		t.Fatalf("ended %s/%s, want delivered", st.State, st.Reason)
	}
	if got := providersOf(st); !slices.Equal(got, []string{"simulator", "simulator2", "twilio", "simulator"}) {
		t.Errorf("attempts went to %v, want simulator, simulator2, twilio (429), then simulator", got)
	}
	if a, c := s.sentAt(t, s.sim, to), s.sentAt(t, s.twilio, to); a != 1 || c != 0 || s.sent(t, to) != 1 {
		t.Errorf("the first simulator accepted %d and Twilio %d (in all %d), want 1, 0 and 1", a, c, s.sent(t, to))
	}
	if reqs := s.requestsAt(t, s.twilio, to); len(reqs) != 1 || reqs[0].HTTPStatus != http.StatusTooManyRequests {
		t.Errorf("Twilio's requests %+v, want one answered 429", reqs)
	}
	s.audited(t, n.EventID, "(PROVIDER_THROTTLED)", ": delivered, because")
}
