package smssim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

const (
	number = "+447700900123"
	body   = "Your reset link: https://shop.example/r/SECRET-TOKEN"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

type response struct {
	status     int
	retryAfter string
	err        error
	body       []byte
}

func send(t *testing.T, base, to, ref string, timeout time.Duration) response {
	t.Helper()
	return sendWith(t, base, "", simapi.SendRequest{To: to, Body: body, ClientRef: ref, ValiditySeconds: 60}, timeout)
}

func sendWith(t *testing.T, base, token string, req simapi.SendRequest, timeout time.Duration) response {
	t.Helper()
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/messages", bytes.NewReader(b))
	hr.Header.Set("Content-Type", "application/json")
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: rb, err: err}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: decode: %v", url, err)
		}
	}
	return resp.StatusCode
}

func postJSON(t *testing.T, url string, v any) int {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestModes(t *testing.T) {
	tests := []struct {
		mode       smssim.Mode
		status     int // 0: no response
		retryAfter string
		code       string
		recorded   bool
	}{
		{smssim.ModeAccept, http.StatusCreated, "", "", true},
		{smssim.ModeLatency, http.StatusCreated, "", "", true},
		{smssim.ModeReject, http.StatusBadRequest, "", simapi.CodeDestinationRejected, false},
		{smssim.ModeThrottle, http.StatusTooManyRequests, "3", simapi.CodeThrottled, false},
		{smssim.ModeUnavailable, http.StatusServiceUnavailable, "3", simapi.CodeNotProcessed, false},
		{smssim.ModeErrorAfterAccept, http.StatusInternalServerError, "", simapi.CodeInternal, true},
		{smssim.ModeTimeoutBeforeAccept, 0, "", "", false},
		{smssim.ModeAcceptThenTimeout, 0, "", "", true},
		{smssim.ModeAcceptThenDrop, 0, "", "", true},
		{smssim.ModeBadGatewayBeforeAccept, http.StatusBadGateway, "", "", false},
		{smssim.ModeBadGatewayAfterAccept, http.StatusBadGateway, "", "", true},
		{smssim.ModeGatewayTimeoutAfterAccept, http.StatusGatewayTimeout, "", "", true},
		{smssim.ModeTruncatedAfterAccept, http.StatusCreated, "", "", true},
		{smssim.ModeGarbageAfterAccept, http.StatusOK, "", "", true},
		{smssim.ModeResetAfterAccept, 0, "", "", true},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			srv, base := smssimtest.Start(t, smssim.Config{RetryAfter: 2500 * time.Millisecond, Latency: 10 * time.Millisecond})
			srv.SetFault(number, tc.mode)
			timeout := 10 * time.Second
			if tc.mode == smssim.ModeTimeoutBeforeAccept || tc.mode == smssim.ModeAcceptThenTimeout {
				timeout = 300 * time.Millisecond
			}
			resp := send(t, base, number, "n1-a1", timeout)
			if resp.status != tc.status {
				t.Fatalf("status = %d (err %v), want %d", resp.status, resp.err, tc.status)
			}
			if tc.status == 0 && resp.err == nil {
				t.Fatal("want a transport error")
			}
			switch tc.mode {
			case smssim.ModeTruncatedAfterAccept:
				if resp.err == nil {
					t.Errorf("body %s read whole, want it cut short", resp.body)
				}
			case smssim.ModeBadGatewayBeforeAccept, smssim.ModeBadGatewayAfterAccept, smssim.ModeGatewayTimeoutAfterAccept, smssim.ModeGarbageAfterAccept:
				if json.Valid(resp.body) || !strings.HasPrefix(string(resp.body), "<html>") {
					t.Errorf("body %q, want a gateway's HTML", resp.body)
				}
			}
			if resp.retryAfter != tc.retryAfter {
				t.Errorf("Retry-After = %q, want %q", resp.retryAfter, tc.retryAfter)
			}
			if tc.code != "" {
				var e simapi.Error
				if err := json.Unmarshal(resp.body, &e); err != nil || e.Code != tc.code {
					t.Errorf("error body %s, want code %s", resp.body, tc.code)
				}
			}
			if got := len(srv.Accepted(number)); got != map[bool]int{true: 1}[tc.recorded] {
				t.Errorf("accepted %d messages, recorded = %v", got, tc.recorded)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Mode != string(tc.mode) || reqs[0].Recorded != tc.recorded || reqs[0].HTTPStatus != tc.status {
				t.Errorf("request log %+v", reqs)
			}
		})
	}
}

func TestLatencyClientGoneIsNotRecorded(t *testing.T) {
	srv, base := smssimtest.Start(t, smssim.Config{Latency: 10 * time.Second})
	srv.SetFault(number, smssim.ModeLatency)
	if resp := send(t, base, number, "n1-a1", 100*time.Millisecond); resp.err == nil {
		t.Fatalf("status %d, want a client timeout", resp.status)
	}
	waitFor(t, func() bool { r := srv.Requests(); return len(r) == 1 && r[0].Note != "" })
	if r := srv.Requests()[0]; r.Recorded || r.Note != "client_gone" {
		t.Errorf("request %+v, want not recorded, client_gone", r)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d messages recorded", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestScriptedFaultsAndRules(t *testing.T) {
	srv, base := smssimtest.Start(t, smssim.Config{
		Rules: []smssim.Rule{{Suffix: "13", Mode: smssim.ModeReject}},
		Mix:   smssim.Mix{{Mode: smssim.ModeThrottle, Weight: 1}},
	})
	if code := postJSON(t, base+"/control/faults", simapi.Fault{To: number, Modes: []string{"throttle", "accept-then-drop", "accept"}}); code != http.StatusNoContent {
		t.Fatalf("POST /control/faults = %d", code)
	}
	var got []int
	for i := range 4 {
		got = append(got, send(t, base, number, fmt.Sprintf("n1-a%d", i+1), time.Second).status)
	}
	if diff := cmp.Diff([]int{429, 0, 201, 201}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if s := send(t, base, "+15555550113", "n2-a1", time.Second).status; s != http.StatusBadRequest {
		t.Errorf("rule: status %d, want 400", s)
	}
	if s := send(t, base, "+15555550100", "n3-a1", time.Second).status; s != http.StatusTooManyRequests {
		t.Errorf("mix: status %d, want 429", s)
	}
	srv.ClearFaults()
	if s := send(t, base, number, "n1-a5", time.Second).status; s != http.StatusTooManyRequests {
		t.Errorf("after ClearFaults: status %d, want the mix's 429", s)
	}
	for _, bad := range []simapi.Fault{{To: number, Mode: "explode"}, {Mode: "accept"}, {To: number, Receipt: "maybe"}} {
		if code := postJSON(t, base+"/control/faults", bad); code != http.StatusBadRequest {
			t.Errorf("POST /control/faults %+v = %d, want 400", bad, code)
		}
	}
}

// modesOf returns the mode sequence each destination saw.
func modesOf(reqs []simapi.RequestEntry) map[string][]string {
	out := map[string][]string{}
	for _, r := range reqs {
		out[r.To] = append(out[r.To], r.Mode)
	}
	return out
}

func TestMixIsDeterministicPerDestination(t *testing.T) {
	mix, err := smssim.ParseMix("accept=40,reject=20,throttle=20,unavailable=20")
	if err != nil {
		t.Fatal(err)
	}
	dests := []string{"+15555550101", "+15555550102", "+15555550103"}
	run := func(order []int, seed int64) map[string][]string {
		srv, base := smssimtest.Start(t, smssim.Config{Seed: seed, Mix: mix})
		for i, d := range order {
			send(t, base, dests[d], fmt.Sprintf("r%d", i), time.Second)
		}
		return modesOf(srv.Requests())
	}
	a := run([]int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}, 7)
	b := run([]int{2, 1, 0, 2, 1, 0, 0, 2, 1, 1, 0, 2}, 7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, other interleaving (-a +b):\n%s", diff)
	}
	c := run([]int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}, 8)
	if cmp.Equal(a, c) {
		t.Errorf("seeds 7 and 8 gave the same modes %v", a)
	}
}

func TestMixProportions(t *testing.T) {
	mix, _ := smssim.ParseMix("accept=50,throttle=50")
	srv := smssim.New(smssim.Config{Seed: 1, Mix: mix})
	defer srv.Close()
	h := httptest.NewServer(srv)
	defer h.Close()
	for i := range 400 {
		send(t, h.URL, fmt.Sprintf("+1555555%04d", i), "r", time.Second)
	}
	n := 0
	for _, r := range srv.Requests() {
		if r.Mode == string(smssim.ModeAccept) {
			n++
		}
	}
	if n < 150 || n > 250 {
		t.Errorf("%d of 400 accepted with a 50%% mix", n)
	}
}

func TestLookupVisibility(t *testing.T) {
	clock := notifytest.NewClock(t0)
	_, base := smssimtest.Start(t, smssim.Config{Clock: clock, Visibility: 10 * time.Second, DeliveryDelay: time.Minute})
	resp := send(t, base, number, "n1-a1", time.Second)
	var sr simapi.SendResponse
	if err := json.Unmarshal(resp.body, &sr); err != nil || sr.MessageID == "" {
		t.Fatalf("send: %d %s", resp.status, resp.body)
	}
	var list simapi.MessageList
	if code := getJSON(t, base+"/messages?client_ref=n1-a1", &list); code != 200 || len(list.Messages) != 0 {
		t.Errorf("before the window: %d %+v, want an empty list", code, list)
	}
	if code := getJSON(t, base+"/messages/"+sr.MessageID, nil); code != http.StatusNotFound {
		t.Errorf("by ID before the window: %d, want 404", code)
	}
	clock.Advance(10 * time.Second)
	want := simapi.Message{MessageID: sr.MessageID, ClientRef: "n1-a1", Status: simapi.StatusAccepted, AcceptedAt: t0, ValiditySeconds: 60}
	if code := getJSON(t, base+"/messages?client_ref=n1-a1", &list); code != 200 {
		t.Fatalf("list: %d", code)
	}
	if diff := cmp.Diff([]simapi.Message{want}, list.Messages); diff != "" {
		t.Errorf("list after the window (-want +got):\n%s", diff)
	}
	var got simapi.Message
	if code := getJSON(t, base+"/messages/"+sr.MessageID, &got); code != 200 {
		t.Fatalf("by ID: %d", code)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("by ID (-want +got):\n%s", diff)
	}
	clock.Advance(time.Minute)
	getJSON(t, base+"/messages/"+sr.MessageID, &got)
	if got.Status != simapi.StatusDelivered || got.FinalAt == nil || !got.FinalAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("after delivery: %+v", got)
	}
	if code := getJSON(t, base+"/messages/nope", nil); code != http.StatusNotFound {
		t.Errorf("unknown ID: %d", code)
	}
	if code := getJSON(t, base+"/messages", nil); code != http.StatusBadRequest {
		t.Errorf("list without client_ref: %d", code)
	}
}

func TestLookupFaults(t *testing.T) {
	srv, base := smssimtest.Start(t, smssim.Config{Hang: 50 * time.Millisecond})
	send(t, base, number, "n1-a1", time.Second)
	for mode, want := range map[string]int{"unavailable": 503, "error": 500, "timeout": 0, "normal": 200} {
		if code := postJSON(t, base+"/control/lookup", simapi.LookupFault{Mode: mode}); code != http.StatusNoContent {
			t.Fatalf("POST /control/lookup %s = %d", mode, code)
		}
		resp, err := http.Get(base + "/messages?client_ref=n1-a1")
		got := 0
		if err == nil {
			got = resp.StatusCode
			resp.Body.Close()
		}
		if got != want {
			t.Errorf("lookup mode %s: status %d (%v), want %d", mode, got, err, want)
		}
	}
	srv.SetLookupMode(smssim.LookupError)
	srv.Reset()
	if code := getJSON(t, base+"/messages?client_ref=n1-a1", nil); code != 200 {
		t.Errorf("after Reset: %d", code)
	}
}

func TestValidityLapseAndReceipts(t *testing.T) {
	var (
		mu       sync.Mutex
		receipts []simapi.Receipt
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rc simapi.Receipt
		json.NewDecoder(r.Body).Decode(&rc)
		mu.Lock()
		receipts = append(receipts, rc)
		mu.Unlock()
	}))
	defer hook.Close()
	srv, base := smssimtest.Start(t, smssim.Config{WebhookURL: hook.URL, DeliveryDelay: 1500 * time.Millisecond})
	srv.SetReceipt("+15555550102", simapi.StatusUndelivered)
	for i, tc := range []struct {
		to       string
		validity int64
	}{{"+15555550101", 60}, {"+15555550102", 60}, {"+15555550103", 1}} {
		r := sendWith(t, base, "", simapi.SendRequest{To: tc.to, Body: body, ClientRef: fmt.Sprintf("n%d-a1", i), ValiditySeconds: tc.validity}, time.Second)
		if r.status != http.StatusCreated {
			t.Fatalf("send %d: %d", i, r.status)
		}
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(receipts) == 3 })
	got := map[string]simapi.Receipt{}
	for _, rc := range receipts {
		got[rc.ClientRef] = simapi.Receipt{Status: rc.Status, Reason: rc.Reason}
	}
	want := map[string]simapi.Receipt{
		"n0-a1": {Status: simapi.StatusDelivered},
		"n1-a1": {Status: simapi.StatusUndelivered, Reason: simapi.ReasonCarrierFailed},
		"n2-a1": {Status: simapi.StatusUndelivered, Reason: simapi.ReasonValidityExpired},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("receipts (-want +got):\n%s", diff)
	}
	var inbox simapi.Inbox
	getJSON(t, base+"/inbox", &inbox)
	lapsed := inbox.Destinations["+15555550103"]
	if lapsed.Count != 1 || !lapsed.Messages[0].Lapsed || lapsed.Messages[0].Body != "" {
		t.Errorf("inbox entry for the lapsed message: %+v", lapsed)
	}
	getJSON(t, base+"/inbox?include=body", &inbox)
	if b := inbox.Destinations["+15555550101"].Messages[0].Body; b != body {
		t.Errorf("inbox with bodies: body %q", b)
	}
}

func TestConcurrentSendsAreAllCounted(t *testing.T) {
	srv, base := smssimtest.Start(t, smssim.Config{})
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() { send(t, base, fmt.Sprintf("+1555555%04d", i%3), "same-ref", 5*time.Second) })
	}
	wg.Wait()
	total := 0
	for _, msgs := range srv.Inbox() {
		total += len(msgs)
	}
	var list simapi.MessageList
	getJSON(t, base+"/messages?client_ref=same-ref", &list)
	if total != 60 || len(list.Messages) != 60 {
		t.Errorf("inbox holds %d, lookup %d; want every one of 60 sends (no dedupe)", total, len(list.Messages))
	}
}

func TestInvalidAndUnauthorized(t *testing.T) {
	_, base := smssimtest.Start(t, smssim.Config{Token: "tok"})
	ok := simapi.SendRequest{To: number, Body: body, ClientRef: "n1-a1", ValiditySeconds: 60}
	tests := []struct {
		name  string
		token string
		req   simapi.SendRequest
		want  int
	}{
		{"ok", "tok", ok, 201},
		{"no token", "", ok, 401},
		{"wrong token", "nope", ok, 401},
		{"bad number", "tok", simapi.SendRequest{To: "447700900123", Body: body, ClientRef: "r", ValiditySeconds: 60}, 400},
		{"no validity", "tok", simapi.SendRequest{To: number, Body: body, ClientRef: "r"}, 400},
		{"no ref", "tok", simapi.SendRequest{To: number, Body: body, ValiditySeconds: 60}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sendWith(t, base, tc.token, tc.req, time.Second)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d", r.status, tc.want)
			}
			if strings.Contains(string(r.body), "447700900123") {
				t.Errorf("error echoes the number: %s", r.body)
			}
		})
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	srv, base := smssimtest.Start(t, smssim.Config{Logger: logger, Hang: 20 * time.Millisecond})
	for _, m := range smssim.Modes {
		srv.SetFault(number, m)
		send(t, base, number, "n1-a1", time.Second)
	}
	waitFor(t, func() bool { return len(srv.Requests()) == len(smssim.Modes) })
	srv.Close()
	out := logs.String()
	if !strings.Contains(out, "n1-a1") {
		t.Fatalf("no request logged: %s", out)
	}
	if strings.Contains(out, "447700900123") || strings.Contains(out, "SECRET") {
		t.Errorf("logs hold a secret:\n%s", out)
	}
}

func TestStartAndCloseEndHangingRequests(t *testing.T) {
	srv := smssim.New(smssim.Config{})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if srv.URL() != base {
		t.Errorf("URL() = %q, want %q", srv.URL(), base)
	}
	srv.SetFault(number, smssim.ModeAcceptThenTimeout)
	done := make(chan response, 1)
	go func() { done <- send(t, base, number, "n1-a1", time.Minute) }()
	waitFor(t, func() bool { return len(srv.Messages()) == 1 })
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := <-done; r.err == nil {
		t.Errorf("hanging request ended with %d, want a dropped connection", r.status)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestParse(t *testing.T) {
	mix, err := smssim.ParseMix("accept=55, accept-then-timeout=15,accept_then_drop=10,timeout_before_accept=10,throttle=10,500-after-accept=5,reject=5")
	if err != nil {
		t.Fatal(err)
	}
	if got := mix.String(); got != "accept=55,accept_then_timeout=15,accept_then_drop=10,timeout_before_accept=10,throttle=10,500_after_accept=5,reject=5" {
		t.Errorf("String() = %s", got)
	}
	for _, bad := range []string{"accept", "accept=x", "explode=1", "accept=0", "accept=-1"} {
		if _, err := smssim.ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	rules, err := smssim.ParseRules("13=reject, 7=unavailable-503")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]smssim.Rule{{Suffix: "13", Mode: smssim.ModeReject}, {Suffix: "7", Mode: smssim.ModeUnavailable}}, rules); diff != "" {
		t.Errorf("ParseRules (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"x=reject", "=reject", "13", "13=explode"} {
		if _, err := smssim.ParseRules(bad); err == nil {
			t.Errorf("ParseRules(%q) accepted", bad)
		}
	}
}

func TestResetWhileARequestHangs(t *testing.T) {
	srv, base := smssimtest.Start(t, smssim.Config{})
	srv.SetFault(number, smssim.ModeAcceptThenTimeout)
	done := make(chan response, 1)
	go func() { done <- send(t, base, number, "n1-a1", 300*time.Millisecond) }()
	waitFor(t, func() bool { return len(srv.Messages()) == 1 })
	srv.Reset()
	<-done
	send(t, base, number, "n1-a2", 5*time.Second)
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].ClientRef != "n1-a2" || reqs[0].HTTPStatus != http.StatusCreated {
		t.Errorf("requests after Reset: %+v", reqs)
	}
}

// TestSecondProviderMode: a simulator started as simulator2 stamps its receipts with that
// provider and numbers its messages simulator2-<n>, so that provider-events tells its receipts
// from the first simulator's; the first simulator's receipts name it too; and reject_country
// answers 400 country_not_supported without recording.
func TestSecondProviderMode(t *testing.T) {
	var (
		mu       sync.Mutex
		receipts []simapi.Receipt
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rc simapi.Receipt
		json.NewDecoder(r.Body).Decode(&rc)
		mu.Lock()
		receipts = append(receipts, rc)
		mu.Unlock()
	}))
	defer hook.Close()
	first, base1 := smssimtest.Start(t, smssim.Config{WebhookURL: hook.URL, DeliveryDelay: 100 * time.Millisecond})
	second, base2 := smssimtest.Start(t, smssim.Config{WebhookURL: hook.URL, DeliveryDelay: 100 * time.Millisecond, Provider: "simulator2"})
	for _, base := range []string{base1, base2} {
		if r := send(t, base, "+15555550111", "n-a1", time.Second); r.status != http.StatusCreated {
			t.Fatalf("send to %s: %d", base, r.status)
		}
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(receipts) == 2 })
	got := map[string]string{}
	for _, rc := range receipts {
		got[rc.MessageID] = rc.Provider
	}
	want := map[string]string{first.Messages()[0].MessageID: "simulator", second.Messages()[0].MessageID: "simulator2"}
	if diff := cmp.Diff(want, got); diff != "" || !strings.HasPrefix(second.Messages()[0].MessageID, "simulator2-") {
		t.Errorf("receipts by message ID (-want +got):\n%s", diff)
	}
	second.SetFault("+15555550112", smssim.ModeRejectCountry)
	if r := send(t, base2, "+15555550112", "n-a2", time.Second); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), simapi.CodeCountryNotSupported) {
		t.Errorf("reject_country answered %d %s", r.status, r.body)
	}
	if len(second.Accepted("+15555550112")) != 0 {
		t.Error("reject_country recorded the message")
	}
}
