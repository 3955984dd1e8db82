package intake_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// t0 is the fake clock's start; requests expire 15 minutes later.
var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const (
	phone    = "+447700900123"
	resetURL = "https://shop.example/reset/tok-SECRET-71c3?u=42&x=1"
	eventID  = "evt-1001"
	derived  = eventID + ":sms:password_reset"
)

// The callers of the tests: every event comes from a session of callerRole unless as says
// otherwise; operatorRole is the fixture's operator.
const (
	callerSession   = "arn:aws:sts::123456789012:assumed-role/shop-backend/i-0abc"
	callerRole      = "arn:aws:iam::123456789012:role/shop-backend"
	otherSession    = "arn:aws:sts::123456789012:assumed-role/other-shop/i-0def"
	operatorSession = "arn:aws:sts::123456789012:assumed-role/support/alice"
	operatorRole    = "arn:aws:iam::123456789012:role/support"
)

// stored returns the key under which the store holds the caller's key of callerRole.
func stored(key string) string {
	return notify.ScopedKey(notifytest.Sealer{}.OwnerFP(callerRole), key)
}

// as returns ev sent by userARN, as API Gateway's IAM authorization describes its caller.
func as(ev events.APIGatewayV2HTTPRequest, userARN string) events.APIGatewayV2HTTPRequest {
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			AccountID: "123456789012", UserARN: userARN, CallerID: "AROAEXAMPLE:" + userARN[strings.LastIndex(userARN, "/")+1:],
		},
	}
	return ev
}

// fixture is a handler wired to fakes, with its logs and metrics captured.
type fixture struct {
	h       *intake.Handler
	intake  *notify.Service
	store   *notifytest.Store
	queue   *notifytest.Queue
	clock   *notifytest.Clock
	logs    *syncBuffer
	metrics *syncBuffer
	seq     atomic.Int64
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{
		store:   notifytest.NewStore(),
		queue:   &notifytest.Queue{},
		clock:   notifytest.NewClock(t0),
		logs:    &syncBuffer{},
		metrics: &syncBuffer{},
	}
	in := &notify.Service{
		Store: f.store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: notifytest.Sealer{}, Queue: f.queue,
		Clock: f.clock, Policy: notify.DefaultPolicy(), NewID: notifytest.IDs("n"),
		Owners: notifytest.Sealer{}, Operator: operatorRole,
	}
	f.intake = in
	f.h = intake.New(in, obs.NewLogger(f.logs, nil), &obs.Metrics{W: f.metrics, Function: "intake", Now: f.clock.Now})
	return f
}

// do runs ev through the handler and checks what every response must carry.
func (f *fixture) do(t *testing.T, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	if ev.RequestContext.RequestID == "" {
		ev.RequestContext.RequestID = fmt.Sprintf("req-%04d", f.seq.Add(1))
	}
	resp, err := f.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	checkCommon(t, ev, resp)
	return resp
}

// checkCommon asserts the headers and body shape every response has.
func checkCommon(t *testing.T, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if got := resp.Headers[intake.HeaderRequestID]; got != ev.RequestContext.RequestID {
		t.Errorf("%s = %q, want %q", intake.HeaderRequestID, got, ev.RequestContext.RequestID)
	}
	ct := resp.Headers[intake.HeaderContentType]
	switch {
	case resp.StatusCode >= 400 && ct != intake.ContentTypeProblem:
		t.Errorf("status %d with Content-Type %q, want %q", resp.StatusCode, ct, intake.ContentTypeProblem)
	case resp.StatusCode < 400 && ct != intake.ContentTypeJSON:
		t.Errorf("status %d with Content-Type %q, want %q", resp.StatusCode, ct, intake.ContentTypeJSON)
	}
	if !json.Valid([]byte(resp.Body)) {
		t.Errorf("body is not JSON: %s", resp.Body)
	}
	if resp.StatusCode >= 400 {
		p := decodeProblem(t, resp)
		if p.Status != resp.StatusCode || p.Title == "" || p.Detail == "" || !strings.HasPrefix(p.Type, intake.ProblemBase) {
			t.Errorf("incomplete problem: %+v", p)
		}
		if p.Instance != "urn:resetnotify:request:"+ev.RequestContext.RequestID {
			t.Errorf("instance = %q", p.Instance)
		}
	}
}

func decodeProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse) intake.Problem {
	t.Helper()
	var p intake.Problem
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %s: %v", resp.Body, err)
	}
	return p
}

func decodeView(t *testing.T, resp events.APIGatewayV2HTTPResponse) intake.StatusView {
	t.Helper()
	var v intake.StatusView
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("status body %s: %v", resp.Body, err)
	}
	return v
}

func wantProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, typ intake.ProblemType) intake.Problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, status, resp.Body)
	}
	p := decodeProblem(t, resp)
	if p.Type != typ.URI() {
		t.Fatalf("problem type = %q, want %q", p.Type, typ.URI())
	}
	return p
}

// body returns the JSON of a valid request, expiring 15 minutes after t0, after edit has
// changed its fields.
func body(edit func(map[string]any)) string { return bodyAt(t0, edit) }

// bodyAt is body for a clock standing at now.
func bodyAt(now time.Time, edit func(map[string]any)) string {
	m := map[string]any{
		"event_id":   eventID,
		"channel":    "sms",
		"purpose":    "password_reset",
		"to":         phone,
		"locale":     "en-GB",
		"params":     map[string]any{"reset_url": resetURL},
		"expires_at": now.Add(15 * time.Minute).Format(time.RFC3339),
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// event returns an HTTP API v2 event as API Gateway builds it for a matched route.
func event(routeKey, rawPath, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	method, _, _ := strings.Cut(routeKey, " ")
	h := map[string]string{
		"accept":     "application/json",
		"host":       "abc123.execute-api.eu-west-1.amazonaws.com",
		"user-agent": "resetnotify-test",
	}
	for k, v := range headers {
		h[k] = v
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: routeKey,
		RawPath:  rawPath,
		Headers:  h,
		Body:     body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:  routeKey,
			AccountID: "123456789012",
			Stage:     "$default",
			APIID:     "abc123",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: method, Path: rawPath, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "resetnotify-test",
			},
		},
	}
	if body != "" {
		ev.Headers["content-length"] = fmt.Sprint(len(body))
	}
	if strings.Contains(routeKey, "{key}") {
		ev.PathParameters = map[string]string{"key": rawPath[strings.LastIndex(rawPath, "/")+1:]}
	}
	return as(ev, callerSession)
}

func post(body string, headers ...string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json"}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			delete(h, headers[i])
			continue
		}
		h[headers[i]] = headers[i+1]
	}
	return event(intake.RouteSubmit, intake.CollectionPath, body, h)
}

func get(key string) events.APIGatewayV2HTTPRequest {
	return event(intake.RouteStatus, intake.CollectionPath+"/"+key, "", nil)
}

func del(key string) events.APIGatewayV2HTTPRequest {
	return event(intake.RouteCancel, intake.CollectionPath+"/"+key, "", nil)
}

// raw returns an event routed only by method and path, as a $default route delivers it.
func raw(method, path, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	ev := event(method+" "+path, path, body, headers)
	ev.RouteKey, ev.RequestContext.RouteKey, ev.PathParameters = "$default", "$default", nil
	return ev
}

// syncBuffer collects the JSON lines of concurrent writers.
type syncBuffer struct{ testenv.SyncBuffer }

// lines returns the JSON lines written so far.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

type eventT = events.APIGatewayV2HTTPRequest

func encodeBase64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// padTo returns the JSON object js with a "pad" field that makes it exactly n bytes long.
func padTo(js string, n int) string {
	prefix := js[:len(js)-1] + `,"pad":"`
	return prefix + strings.Repeat("x", n-len(prefix)-2) + `"}`
}

type eventResponse = events.APIGatewayV2HTTPResponse
