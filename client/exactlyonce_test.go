package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/client"
	"github.com/resetnotify/resetnotify/infra/localapi/localapitest"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// backend is the real intake handler behind the local gateway (the routes of template.yaml),
// served over HTTP, with its request log kept to count first admissions.
type backend struct {
	url   string
	store notify.Store
	// stored is the key under which the store holds a caller's key (keys are scoped to their
	// owner).
	stored func(key string) string
	logs   *testenv.SyncBuffer
	// created counts the stored records per key that Admit created, when the store can tell.
	created func() map[string]int
}

// countingStore is the fake store, counting the admissions that created a record.
type countingStore struct {
	*notifytest.Store
	mu      sync.Mutex
	created map[string]int
}

func (s *countingStore) Admit(ctx context.Context, rec notify.Record) (notify.Record, bool, error) {
	got, created, err := s.Store.Admit(ctx, rec)
	if created {
		s.mu.Lock()
		s.created[rec.IdempotencyKey]++
		s.mu.Unlock()
	}
	return got, created, err
}

func (s *countingStore) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.created)
}

// newFakeBackend wires the handler to the in-memory fakes.
func newFakeBackend(t *testing.T) *backend {
	t.Helper()
	store := &countingStore{Store: notifytest.NewStore(), created: map[string]int{}}
	b := serveBackend(t, localapitest.FakeIntake(store, &notifytest.Queue{}, nil))
	b.created = store.counts
	return b
}

// newDynamoBackend wires the handler to DynamoDB Local, real sealing and an SQS queue on
// moto_server, as the intake function is wired; it skips (or fails under make test) as
// package testenv says.
func newDynamoBackend(t *testing.T) *backend {
	t.Helper()
	ddb := testenv.DynamoDB(t)
	sqsClient := testenv.SQS(t)
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit")}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := tablesetup.Create(ctx, ddb, names); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	keys, err := seal.NewStaticKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := seal.NewFingerprinter([]byte("client-test-pepper"))
	if err != nil {
		t.Fatal(err)
	}
	fingerprints, err := seal.NewRequestFingerprinter([]byte("client-test-request-fingerprint-key!"))
	if err != nil {
		t.Fatal(err)
	}
	in := &notify.Service{
		Store: dynamostore.New(ddb, names.Notifications), Sealer: seal.New(keys), Hasher: hasher, Fingerprints: fingerprints,
		Queue: sqsqueue.New(sqsClient, testenv.Queue(t, sqsClient, testenv.UniqueName(t, "dispatch")), ""),
		Clock: notify.SystemClock{}, Policy: notify.DefaultPolicy(), NewID: func() string { return ulid.Make().String() },
	}
	return serveBackend(t, in)
}

func serveBackend(t *testing.T, in *notify.Service) *backend {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	srv := localapitest.Server(t, "../template.yaml", in, obs.NewLogger(logs, nil))
	return &backend{url: srv.URL, store: in.Store, logs: logs, stored: func(key string) string { return localapitest.StoredKey(in, key) }}
}

// firstAdmissions counts, per key, the 202 answers the handler logged.
func (b *backend) firstAdmissions(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(b.logs.String()), "\n") {
		var entry struct {
			Msg    string `json:"msg"`
			Status int    `json:"status"`
			Key    string `json:"key"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if entry.Msg == "request" && entry.Status == http.StatusAccepted {
			out[entry.Key]++
		}
	}
	return out
}

// fault is what the proxy does to one request.
type fault string

const (
	pass             fault = "pass"
	dropAfter        fault = "drop-after-handler"     // the handler answered; the connection is closed instead
	timeoutAfter     fault = "timeout-after-handler"  // the handler answered; nothing comes back
	timeoutBefore    fault = "timeout-before-handler" // the request never reaches the handler
	unavailable      fault = "503-before-handler"
	unavailableAfter fault = "503-after-handler" // the handler answered; a gateway 503 comes back
	throttled        fault = "429-before-handler"
)

var faults = []fault{dropAfter, timeoutAfter, timeoutBefore, unavailable, unavailableAfter, throttled}

// faultProxy sits between the client and the backend. Each key's first requests (one to
// maxFaults of them) meet faults, in turn through the list; later ones pass. Every request is
// kept, to be checked against openapi.yaml afterwards.
type faultProxy struct {
	t         *testing.T
	target    string
	router    routers.Router
	mu        sync.Mutex
	index     map[string]int // order of first sight, per key
	tries     map[string]int
	seen      map[fault]int
	requests  []*http.Request
	maxFaults int
	srv       *httptest.Server
}

func newFaultProxy(t *testing.T, target string, maxFaults int) *faultProxy {
	t.Helper()
	p := &faultProxy{t: t, target: target, index: map[string]int{}, tries: map[string]int{}, seen: map[fault]int{}, maxFaults: maxFaults}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	p.router = specRouter(t, p.srv.URL)
	return p
}

// specRouter loads openapi.yaml with the proxy as its only server.
func specRouter(t *testing.T, server string) routers.Router {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = openapi3.Servers{{URL: server}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return router
}

func (p *faultProxy) next(key string) fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.index[key]
	if !ok {
		i = len(p.index)
		p.index[key] = i
	}
	n := p.tries[key]
	p.tries[key]++
	f := pass
	// Key i (in order of first sight) meets 1 + i%maxFaults faults, starting at faults[i]: with
	// at least len(faults) keys, every fault is applied, whatever order the requests come in.
	if n < 1+i%p.maxFaults {
		f = faults[(i+n)%len(faults)]
	}
	p.seen[f]++
	return f
}

func (p *faultProxy) counts() map[fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.seen)
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	p.record(r, body)
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		key = r.URL.Path
	}
	switch f := p.next(key); f {
	case timeoutBefore:
		<-r.Context().Done()
		return
	case unavailable:
		gateway(503, nil)(w, r)
		return
	case throttled:
		gateway(429, map[string]string{"Retry-After": "0"})(w, r)
		return
	default:
		resp, err := forward(p.target, r, body)
		if err != nil {
			p.t.Errorf("proxy: forward: %v", err)
			gateway(502, nil)(w, r)
			return
		}
		switch f {
		case dropAfter:
			dropConnection(w, r)
		case timeoutAfter:
			<-r.Context().Done()
		case unavailableAfter:
			gateway(503, nil)(w, r)
		default:
			for k, v := range resp.header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.status)
			_, _ = w.Write(resp.body)
		}
	}
}

type proxied struct {
	status int
	header http.Header
	body   []byte
}

// forward sends the request to the backend and reads its whole answer, whatever becomes of
// the client's connection: the handler's work is done before any fault.
func forward(target string, r *http.Request, body []byte) (*proxied, error) {
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &proxied{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// record keeps a copy of a request for checkRequests.
func (p *faultProxy) record(r *http.Request, body []byte) {
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
}

// checkRequests validates every request the client sent against openapi.yaml, requiring a
// SigV4 Authorization header for the spec's sigv4 scheme. It runs after the calls, so that
// schema validation never slows a try down.
func (p *faultProxy) checkRequests(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	reqs := p.requests
	p.mu.Unlock()
	for _, req := range reqs {
		route, params, err := p.router.FindRoute(req)
		if err != nil {
			t.Errorf("client request %s %s has no route in the spec: %v", req.Method, req.URL.Path, err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: func(_ context.Context, a *openapi3filter.AuthenticationInput) error {
				if a.SecuritySchemeName != "sigv4" || !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
					return errors.New("no SigV4 signature")
				}
				return nil
			}}}
		if err := openapi3filter.ValidateRequest(t.Context(), in); err != nil {
			t.Errorf("client request %s %s is outside the spec: %v", req.Method, req.URL.Path, err)
		}
	}
	if len(reqs) == 0 {
		t.Error("the proxy saw no request")
	}
}

// proofOptions are client options for a proxy whose timeouts hold a try until it gives up. The
// try timeout leaves room for a busy machine: a try that merely ran slow and timed out would
// still be safe, but would make the proof take longer.
func proofOptions(endpoint string) client.Options {
	return client.Options{
		Endpoint: endpoint, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
		MaxAttempts: 50, TryTimeout: 5 * time.Second, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond,
	}
}

// TestExactlyOnceThroughFaults is the proof that the client keeps exactly-once admission end
// to end: 12 notifications, each sent by three concurrent callers, through a proxy that drops
// answers after the handler gave them, holds requests until the try times out (before and
// after the handler), and answers 503 and 429. Every call succeeds with the one notification
// ID the store holds, each key is admitted once, and no call outlives its deadline.
func TestExactlyOnceThroughFaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(*testing.T) *backend
	}{
		{"fakes", newFakeBackend},
		{"dynamodb-local", newDynamoBackend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.new(t)
			proxy := newFaultProxy(t, b.url, 4)
			c := newClient(t, proofOptions(proxy.srv.URL))
			const keys, callers = 12, 3
			results := make([][]*client.Result, keys)
			var wg sync.WaitGroup
			for i := range keys {
				results[i] = make([]*client.Result, callers)
				n := proofNotification(i)
				for j := range callers {
					wg.Go(func() { results[i][j] = sendByDeadline(t, c, n, 3*time.Minute) })
				}
			}
			wg.Wait()
			checkExactlyOnce(t, b, results)
			proxy.checkRequests(t)
			seen := proxy.counts()
			for _, f := range faults {
				if seen[f] == 0 {
					t.Errorf("the proxy never applied %s: the proof did not cover it (seen %v)", f, seen)
				}
			}
			t.Logf("faults applied: %v", seen)
		})
	}
}

// proofNotification is notification i; odd ones carry the caller's key, even ones the derived
// key.
func proofNotification(i int) client.Notification {
	n := client.Notification{
		EventID: fmt.Sprintf("evt-proof-%02d", i), Purpose: client.PurposePasswordReset, To: phone,
		Params: map[string]string{client.ParamResetURL: fmt.Sprintf("https://shop.example/reset/tok-%02d", i)}, ExpiresAt: time.Now().Add(10 * time.Minute),
	}
	if i%2 == 1 {
		n.IdempotencyKey = fmt.Sprintf("order-%02d-reset", i)
	}
	return n
}

// sendByDeadline sends n within a context of d and checks that the call ended before its
// deadline.
func sendByDeadline(t *testing.T, c *client.Client, n client.Notification, d time.Duration) *client.Result {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	dl, _ := ctx.Deadline()
	res, err := c.Send(ctx, n)
	if !time.Now().Before(dl) {
		t.Errorf("%s: Send outlived its deadline", n.Key())
	}
	if err != nil {
		t.Errorf("%s: Send: %v", n.Key(), err)
		return nil
	}
	return res
}

// checkExactlyOnce checks, per key, one notification ID across every caller's result, equal
// to the stored one; one record per key; one first admission (202) logged per key; and, when
// the store can tell, one record created per key.
func checkExactlyOnce(t *testing.T, b *backend, results [][]*client.Result) {
	t.Helper()
	first := b.firstAdmissions(t)
	var created map[string]int
	if b.created != nil {
		created = b.created()
	}
	for _, rs := range results {
		if rs[0] == nil {
			continue
		}
		key := rs[0].IdempotencyKey
		rec, err := b.store.Get(t.Context(), b.stored(key))
		if err != nil {
			t.Errorf("%s: not stored: %v", key, err)
			continue
		}
		for _, r := range rs {
			if r != nil && (r.NotificationID != rec.NotificationID || r.IdempotencyKey != key) {
				t.Errorf("%s: a caller ended with %s/%s, the store holds %s", key, r.IdempotencyKey, r.NotificationID, rec.NotificationID)
			}
		}
		if rec.Version != 1 || rec.State != notify.StateAccepted {
			t.Errorf("%s: stored at version %d in %s, want one admission (version 1, accepted)", key, rec.Version, rec.State)
		}
		if first[key] != 1 {
			t.Errorf("%s: %d first admissions (202) logged, want 1", key, first[key])
		}
		if created != nil && created[b.stored(key)] != 1 {
			t.Errorf("%s: %d records created, want 1", key, created[b.stored(key)])
		}
	}
	if len(first) != len(results) {
		t.Errorf("%d keys admitted, want %d", len(first), len(results))
	}
}

// TestGivingUpStillAdmitsOnce checks the case where every answer is lost: the call fails by its
// deadline, the notification is nonetheless admitted exactly once, and the next call for the
// key gets its ID as a replay.
func TestGivingUpStillAdmitsOnce(t *testing.T) {
	b := newFakeBackend(t)
	drop := &dropAll{t: t, target: b.url}
	srv := httptest.NewServer(drop)
	t.Cleanup(srv.Close)
	n := proofNotification(0)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	dl, _ := ctx.Deadline()
	if _, err := newClient(t, fast(srv.URL)).Send(ctx, n); err == nil {
		t.Fatal("Send through a proxy that drops every answer succeeded")
	}
	if !time.Now().Before(dl) {
		t.Error("Send outlived its deadline")
	}
	if tries := drop.count(); tries < 2 {
		t.Fatalf("%d tries: no retry happened", tries)
	}
	if got := b.firstAdmissions(t)[n.Key()]; got != 1 {
		t.Fatalf("%d first admissions, want 1", got)
	}
	rec, err := b.store.Get(t.Context(), b.stored(n.Key()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := newClient(t, proofOptions(b.url)).Send(t.Context(), n)
	if err != nil || !res.Replayed || res.NotificationID != rec.NotificationID {
		t.Fatalf("a later Send = %+v, %v; want a replay of %s", res, err, rec.NotificationID)
	}
}

// dropAll forwards every request to the backend and drops every answer.
type dropAll struct {
	t      *testing.T
	target string
	mu     sync.Mutex
	n      int
}

func (d *dropAll) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
	if _, err := forward(d.target, r, body); err != nil {
		d.t.Errorf("forward: %v", err)
	}
	dropConnection(w, r)
}

func (d *dropAll) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}
