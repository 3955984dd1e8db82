package repocheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/localapi/localapitest"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

// specPath is the API contract; docs/api.md points to it.
const specPath = "docs/openapi.yaml"

// localServer is the spec's server entry for `make local`; requests are built against it so
// the router matches them.
const localServer = "http://127.0.0.1:3000"

// gatewayExtension marks a response that API Gateway answers itself: no handler case reaches it.
const gatewayExtension = "x-answered-by"

// contractT0 is the fake clock's time; request bodies expire relative to it.
var contractT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// loadSpec loads and validates openapi.yaml with kin-openapi, as an OpenAPI 3.1 document.
func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(specPath)
	if err != nil {
		t.Fatalf("load %s: %v", specPath, err)
	}
	if !doc.IsOpenAPI31OrLater() || doc.IsOpenAPI32OrLater() {
		t.Fatalf("%s is OpenAPI %s, want 3.1", specPath, doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", specPath, err)
	}
	return doc
}

func TestSpecIsValidOpenAPI31(t *testing.T) {
	loadSpec(t)
}

// contractFixture is the real intake handler, behind the local gateway that serves the routes
// template.yaml declares, wired to fakes whose failures a case can switch on.
type contractFixture struct {
	srv   http.Handler
	store *switchStore
	queue *notifytest.Queue
	// intake is the service behind srv, and guard its abuse guard, admitting until told to
	// refuse.
	intake   *notify.Service
	guard    *notifytest.Guard
	feedback *notifytest.Feedback
}

// switchStore is the fake store with two switches: fail makes every call fail (a 500), and
// conflict makes every transition lose a race (a concurrent change).
type switchStore struct {
	*notifytest.Store
	fail, conflict bool
}

var errStoreDown = errors.New("store unavailable")

func (s *switchStore) Admit(ctx context.Context, rec notify.Record) (notify.Record, bool, error) {
	if s.fail {
		return notify.Record{}, false, errStoreDown
	}
	return s.Store.Admit(ctx, rec)
}

func (s *switchStore) Get(ctx context.Context, key string) (notify.Record, error) {
	if s.fail {
		return notify.Record{}, errStoreDown
	}
	return s.Store.Get(ctx, key)
}

func (s *switchStore) Transition(ctx context.Context, prev, next notify.Record) error {
	if s.conflict {
		return notify.ErrConflict
	}
	return s.Store.Transition(ctx, prev, next)
}

func newContractFixture(t *testing.T) *contractFixture {
	t.Helper()
	f := &contractFixture{store: &switchStore{Store: notifytest.NewStore()}, queue: &notifytest.Queue{}, guard: &notifytest.Guard{}}
	f.intake = localapitest.FakeIntake(f.store, f.queue, notifytest.NewClock(contractT0))
	f.intake.Guard = f.guard
	f.srv = localapitest.Handler(t, "template.yaml", f.intake, nil)
	return f
}

// contractCase is one request; specValid says whether the spec itself admits the request, so
// that the spec is checked to be as strict as the handler wherever a schema can say so.
type contractCase struct {
	name      string
	setup     func(*contractFixture)
	method    string
	path      string
	headers   map[string]string
	body      string
	specValid bool
	status    int
	problem   intake.ProblemType
}

// requestBody returns a valid request of purpose with params, expiring in at from contractT0,
// after edit changed its fields.
func requestBody(purpose string, params map[string]any, in time.Duration, edit func(map[string]any)) string {
	m := map[string]any{
		"event_id": "evt-" + purpose, "channel": "sms", "purpose": purpose, "to": "+15555550100",
		"locale": "en", "params": params, "expires_at": contractT0.Add(in).Format(time.RFC3339),
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

func resetBody(edit func(map[string]any)) string {
	return requestBody(notify.PurposePasswordReset, map[string]any{"reset_url": "https://shop.example/reset/Zk3q"}, 15*time.Minute, edit)
}

// sentK1 is a setup that admits resetBody under key k1 and moves it to sent, as dispatch
// does, with a provider message ID the feedback fake records.
func sentK1(f *contractFixture) {
	admitted(f)
	ctx := context.Background()
	rec, err := f.store.Store.Get(ctx, localapitest.StoredKey(f.intake, "k1"))
	if err != nil {
		panic(err)
	}
	now := rec.UpdatedAt
	leased, _ := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "lt"}, now)
	sent, _ := leased.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "simulator", ProviderMessageID: "pm-1"}, now)
	if err := f.store.Store.Transition(ctx, rec, leased); err != nil {
		panic(err)
	}
	if err := f.store.Store.Transition(ctx, leased, sent); err != nil {
		panic(err)
	}
	f.feedback = &notifytest.Feedback{}
	f.intake.Feedback = f.feedback
}

// admitted is a setup that admits resetBody under key k1.
func admitted(f *contractFixture) {
	f.serve(http.MethodPost, "/v1/notifications", map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k1"}, resetBody(nil))
}

func (f *contractFixture) serve(method, path string, headers map[string]string, body string) *http.Response {
	req := newRequest(method, path, headers, body)
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	return rec.Result()
}

func newRequest(method, path string, headers map[string]string, body string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, localServer+path, r)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

func contractCases() []contractCase {
	js := map[string]string{"Content-Type": "application/json"}
	withKey := func(k string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Idempotency-Key": k}
	}
	const coll = "/v1/notifications"
	return []contractCase{
		{name: "202 password_reset with reset_url", method: "POST", path: coll, headers: withKey("k1"), body: resetBody(nil), specValid: true, status: 202},
		{name: "202 password_reset with code", method: "POST", path: coll, headers: js, specValid: true, status: 202,
			body: requestBody(notify.PurposePasswordReset, map[string]any{"code": "482913"}, 10*time.Minute, nil)},
		{name: "202 one_time_code, key derived", method: "POST", path: coll, headers: js, specValid: true, status: 202,
			body: requestBody(notify.PurposeOneTimeCode, map[string]any{"code": "482913"}, 10*time.Minute, nil)},
		{name: "202 magic_link, key in the body", method: "POST", path: coll, headers: js, specValid: true, status: 202,
			body: requestBody(notify.PurposeMagicLink, map[string]any{"link": "https://shop.example/m/abc"}, 10*time.Minute,
				func(m map[string]any) { m["idempotency_key"] = "ml-1" })},
		{name: "202 admitted as expired", method: "POST", path: coll, headers: withKey("late"), specValid: true, status: 202,
			body: requestBody(notify.PurposeOneTimeCode, map[string]any{"code": "482913"}, -time.Minute, nil)},
		{name: "200 replay", setup: admitted, method: "POST", path: coll, headers: withKey("k1"), body: resetBody(nil), specValid: true, status: 200},
		{name: "400 malformed body", method: "POST", path: coll, headers: js, body: `{"event_id":`, status: 400, problem: intake.ProblemMalformedRequest},
		{name: "400 invalid phone number", method: "POST", path: coll, headers: js, status: 400, problem: intake.ProblemInvalidRequest,
			body: resetBody(func(m map[string]any) { m["to"] = "555-0100" })},
		{name: "400 expiry too far ahead (a rule no schema can state)", method: "POST", path: coll, headers: js, specValid: true,
			status: 400, problem: intake.ProblemInvalidRequest,
			body: resetBody(func(m map[string]any) { m["expires_at"] = contractT0.Add(72 * time.Hour).Format(time.RFC3339) })},
		{name: "400 header and body keys differ", method: "POST", path: coll, headers: withKey("k-header"), specValid: true,
			status: 400, problem: intake.ProblemKeyMismatch,
			body: resetBody(func(m map[string]any) { m["idempotency_key"] = "k-body" })},
		{name: "413 over 8 KiB", method: "POST", path: coll, headers: js, status: 413, problem: intake.ProblemPayloadTooLarge,
			body: resetBody(func(m map[string]any) { m["pad"] = strings.Repeat("x", intake.MaxBodyBytes) })},
		{name: "415 text/plain", method: "POST", path: coll, headers: map[string]string{"Content-Type": "text/plain"},
			body: resetBody(nil), status: 415, problem: intake.ProblemUnsupportedMediaType},
		{name: "422 key reused with another request", setup: admitted, method: "POST", path: coll, headers: withKey("k1"), specValid: true,
			status: 422, problem: intake.ProblemKeyReused,
			body: resetBody(func(m map[string]any) { m["to"] = "+15555550199" })},
		{name: "422 country not allowed", setup: func(f *contractFixture) {
			f.intake.Countries, _ = notify.NewCountries([]string{"GB"}, phoneregion.Regions{})
		},
			method: "POST", path: coll, headers: withKey("c1"), body: resetBody(nil), specValid: true, status: 422, problem: intake.ProblemDestinationNotAllowed},
		{name: "429 destination over its hourly limit", setup: func(f *contractFixture) {
			f.guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: 30 * time.Minute}
		}, method: "POST", path: coll, headers: withKey("r1"), body: resetBody(nil), specValid: true, status: 429, problem: intake.ProblemRateLimited},
		{name: "429 prefix over its velocity ceiling", setup: func(f *contractFixture) {
			f.guard.Refuse = &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: 20 * time.Second}
		}, method: "POST", path: coll, headers: withKey("p1"), body: resetBody(nil), specValid: true, status: 429, problem: intake.ProblemPrefixRateLimited},
		{name: "429 prefix blocked for low conversion", setup: func(f *contractFixture) {
			f.guard.Refuse = &notify.RefusedError{Reason: notify.RefusedPrefixBlocked, RetryAfter: 12 * time.Hour}
		}, method: "POST", path: coll, headers: withKey("b1"), body: resetBody(nil), specValid: true, status: 429, problem: intake.ProblemPrefixBlocked},
		{name: "429 repeat of a refused key", setup: func(f *contractFixture) {
			f.guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationDay, RetryAfter: 3 * time.Hour}
			f.serve(http.MethodPost, "/v1/notifications", map[string]string{"Content-Type": "application/json", "Idempotency-Key": "r2"}, resetBody(nil))
			f.guard.Refuse = nil
		}, method: "POST", path: coll, headers: withKey("r2"), body: resetBody(nil), specValid: true, status: 429, problem: intake.ProblemRateLimited},
		{name: "200 status of a refused key", setup: func(f *contractFixture) {
			f.guard.Refuse = &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: 20 * time.Second}
			f.serve(http.MethodPost, "/v1/notifications", map[string]string{"Content-Type": "application/json", "Idempotency-Key": "r3"}, resetBody(nil))
		}, method: "GET", path: coll + "/r3", specValid: true, status: 200},
		{name: "503 dispatch queue down", setup: func(f *contractFixture) { f.queue.Err = errors.New("queue down") },
			method: "POST", path: coll, headers: withKey("q1"), body: resetBody(nil), specValid: true, status: 503, problem: intake.ProblemQueueUnavailable},
		{name: "503 guard down", setup: func(f *contractFixture) { f.guard.Err = errors.New("guard table down") },
			method: "POST", path: coll, headers: withKey("g1"), body: resetBody(nil), specValid: true, status: 503, problem: intake.ProblemGuardUnavailable},
		{name: "500 POST, store down", setup: func(f *contractFixture) { f.store.fail = true },
			method: "POST", path: coll, headers: withKey("s1"), body: resetBody(nil), specValid: true, status: 500, problem: intake.ProblemInternal},

		{name: "GET 200", setup: admitted, method: "GET", path: coll + "/k1", specValid: true, status: 200},
		{name: "GET 200 derived key", method: "GET", path: coll + "/evt-one_time_code:sms:one_time_code", specValid: true, status: 200,
			setup: func(f *contractFixture) {
				f.serve("POST", coll, js, requestBody(notify.PurposeOneTimeCode, map[string]any{"code": "482913"}, 10*time.Minute, nil))
			}},
		{name: "GET 400 invalid key", method: "GET", path: coll + "/bad%20key%21", status: 400, problem: intake.ProblemInvalidRequest},
		{name: "GET 404", method: "GET", path: coll + "/nope", specValid: true, status: 404, problem: intake.ProblemNotificationNotFound},
		{name: "GET 500 store down", setup: func(f *contractFixture) { f.store.fail = true }, method: "GET", path: coll + "/k1",
			specValid: true, status: 500, problem: intake.ProblemInternal},

		{name: "DELETE 200", setup: admitted, method: "DELETE", path: coll + "/k1", specValid: true, status: 200},
		{name: "DELETE 409 already cancelled", method: "DELETE", path: coll + "/k1", specValid: true, status: 409, problem: intake.ProblemNotCancellable,
			setup: func(f *contractFixture) { admitted(f); f.serve("DELETE", coll+"/k1", nil, "") }},
		{name: "DELETE 409 concurrent change", setup: func(f *contractFixture) { admitted(f); f.store.conflict = true },
			method: "DELETE", path: coll + "/k1", specValid: true, status: 409, problem: intake.ProblemConcurrentChange},
		{name: "DELETE 400 invalid key", method: "DELETE", path: coll + "/" + strings.Repeat("k", notify.MaxKeyLen+1), status: 400, problem: intake.ProblemInvalidRequest},
		{name: "DELETE 404", method: "DELETE", path: coll + "/nope", specValid: true, status: 404, problem: intake.ProblemNotificationNotFound},
		{name: "DELETE 500 store down", setup: func(f *contractFixture) { f.store.fail = true }, method: "DELETE", path: coll + "/k1",
			specValid: true, status: 500, problem: intake.ProblemInternal},

		{name: "conversion 200", setup: sentK1, method: "POST", path: coll + "/k1/conversion", specValid: true, status: 200},
		{name: "conversion 200 repeated", setup: func(f *contractFixture) { sentK1(f); f.serve("POST", coll+"/k1/conversion", nil, "") },
			method: "POST", path: coll + "/k1/conversion", specValid: true, status: 200},
		{name: "conversion 409 never sent", setup: admitted, method: "POST", path: coll + "/k1/conversion", specValid: true,
			status: 409, problem: intake.ProblemNotSent},
		{name: "conversion 409 concurrent change", setup: func(f *contractFixture) { sentK1(f); f.store.conflict = true },
			method: "POST", path: coll + "/k1/conversion", specValid: true, status: 409, problem: intake.ProblemConcurrentChange},
		{name: "conversion 400 invalid key", method: "POST", path: coll + "/bad%20key%21/conversion", status: 400, problem: intake.ProblemInvalidRequest},
		{name: "conversion 404", method: "POST", path: coll + "/nope/conversion", specValid: true, status: 404, problem: intake.ProblemNotificationNotFound},
		{name: "conversion 500 store down", setup: func(f *contractFixture) { f.store.fail = true }, method: "POST", path: coll + "/k1/conversion",
			specValid: true, status: 500, problem: intake.ProblemInternal},
		{name: "conversion 503 provider feedback down", setup: func(f *contractFixture) { sentK1(f); f.feedback.Err = errors.New("down") },
			method: "POST", path: coll + "/k1/conversion", specValid: true, status: 503, problem: intake.ProblemFeedbackUnavailable},
	}
}

// reached is one (operation, status, problem type) a case produced.
type reached struct {
	op      string // "POST /v1/notifications"
	status  int
	problem string // the type URI, or "" for a success
}

// TestHandlerAnswersAsSpecified drives the real handler with each case, checks the request
// against the spec as the case expects and every response against the spec, then checks that
// the cases reach every documented (operation, status, problem type) and nothing else.
func TestHandlerAnswersAsSpecified(t *testing.T) {
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[reached]bool{}
	for _, tc := range contractCases() {
		t.Run(tc.name, func(t *testing.T) {
			f := newContractFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			req := newRequest(tc.method, tc.path, tc.headers, tc.body)
			route, params, err := router.FindRoute(req)
			if err != nil {
				t.Fatalf("the spec has no route for %s %s: %v", tc.method, tc.path, err)
			}
			in := &openapi3filter.RequestValidationInput{
				Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			}
			if err := openapi3filter.ValidateRequest(t.Context(), in); (err == nil) != tc.specValid {
				t.Errorf("spec validation of the request: err = %v, want valid = %v", err, tc.specValid)
			}
			resp := f.serve(tc.method, tc.path, tc.headers, tc.body)
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(t, in, resp, body)
			p := checkStatus(t, resp, body, tc)
			got[reached{op: tc.method + " " + route.Path, status: resp.StatusCode, problem: p}] = true
		})
	}
	want := documented(t, doc)
	if diff := cmp.Diff(sortedReached(want), sortedReached(got)); diff != "" {
		t.Errorf("documented (-) and reached (+) answers differ:\n%s", diff)
	}
}

// checkResponse validates one response against the spec, status and headers included.
func checkResponse(t *testing.T, in *openapi3filter.RequestValidationInput, resp *http.Response, body []byte) {
	t.Helper()
	// Request validation may have read the body; the response check needs only the route.
	in.Request = newRequest(in.Request.Method, in.Request.URL.RequestURI(), nil, "")
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(t.Context(), out); err != nil {
		t.Errorf("%d response outside the spec: %v\nbody: %s", resp.StatusCode, err, body)
	}
}

// checkStatus checks the case's status and problem type and returns the type URI.
func checkStatus(t *testing.T, resp *http.Response, body []byte, tc contractCase) string {
	t.Helper()
	if resp.StatusCode != tc.status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.status, body)
	}
	if tc.problem == "" {
		return ""
	}
	var p intake.Problem
	if err := decodeStrict(body, &p); err != nil {
		t.Fatalf("problem body %s: %v", body, err)
	}
	if p.Type != tc.problem.URI() {
		t.Fatalf("problem type = %q, want %q", p.Type, tc.problem.URI())
	}
	return p.Type
}

// documented returns every (operation, status, problem type) the spec lists for the handler:
// responses marked as API Gateway's own are left out, and so is their application/json
// content next to a handler's problem.
func documented(t *testing.T, doc *openapi3.T) map[reached]bool {
	t.Helper()
	out := map[reached]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code, ref := range op.Responses.Map() {
				resp := ref.Value
				if resp.Extensions[gatewayExtension] == "api-gateway" {
					continue
				}
				status, err := strconv.Atoi(code)
				if err != nil {
					t.Fatalf("%s %s: response %q is not a status", method, path, code)
				}
				r := reached{op: method + " " + path, status: status}
				if mt := resp.Content.Get(intake.ContentTypeProblem); mt != nil {
					for _, typ := range problemTypes(mt.Schema) {
						r.problem = typ
						out[r] = true
					}
					continue
				}
				out[r] = true
			}
		}
	}
	return out
}

// problemTypes collects the const or enum values of the "type" property anywhere in a
// problem schema (through allOf, oneOf and anyOf).
func problemTypes(ref *openapi3.SchemaRef) []string {
	if ref == nil || ref.Value == nil {
		return nil
	}
	s := ref.Value
	var out []string
	if p := s.Properties["type"]; p != nil && p.Value != nil {
		if p.Value.Const != nil {
			out = append(out, p.Value.Const.(string))
		}
		for _, e := range p.Value.Enum {
			out = append(out, e.(string))
		}
	}
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, sub := range group {
			out = append(out, problemTypes(sub)...)
		}
	}
	return out
}

func sortedReached(m map[reached]bool) []string {
	out := make([]string, 0, len(m))
	for r := range m {
		out = append(out, r.op+" "+strconv.Itoa(r.status)+" "+r.problem)
	}
	sort.Strings(out)
	return out
}

// unroutedProblems are the handler's problem types that no caller can meet through API
// Gateway: the template declares explicit routes, so another path or method is refused by the
// gateway (404 {"message": "Not Found"}) before the function runs.
var unroutedProblems = []string{string(intake.ProblemRouteNotFound)}

// TestSpecProblemTypesAreTheCodes checks that the spec's problem types are exactly the
// handler's, read from the constants of type ProblemType in shared/intake, less those no
// routed request can meet.
func TestSpecProblemTypesAreTheCodes(t *testing.T) {
	doc := loadSpec(t)
	inSpec := map[string]bool{}
	for r := range documented(t, doc) {
		if r.problem != "" {
			inSpec[strings.TrimPrefix(r.problem, intake.ProblemBase)] = true
		}
	}
	var code []string
	for _, v := range stringConsts(t, "shared/intake/problem.go", "ProblemType") {
		if !slices.Contains(unroutedProblems, v) {
			code = append(code, v)
		}
	}
	if diff := cmp.Diff(sortedSet(code), sortedKeys(inSpec)); diff != "" {
		t.Errorf("problem types in the code (-) and in %s (+) differ:\n%s", specPath, diff)
	}
}

// TestSpecEnumsAreTheCodes checks the spec's states, reasons and purposes against the domain
// core's.
func TestSpecEnumsAreTheCodes(t *testing.T) {
	doc := loadSpec(t)
	schemas := doc.Components.Schemas
	states := stringConsts(t, "shared/notify/state.go", "State")
	states = slices.DeleteFunc(states, func(s string) bool { return s == string(notify.StateNone) })
	for _, tc := range []struct {
		schema string
		code   []string
	}{
		{"State", states},
		{"Reason", stringConsts(t, "shared/notify/reason.go", "Reason")},
	} {
		var spec []string
		for _, e := range schemas[tc.schema].Value.Enum {
			spec = append(spec, e.(string))
		}
		if diff := cmp.Diff(sortedSet(tc.code), sortedSet(spec)); diff != "" {
			t.Errorf("%s: code (-) and spec (+) differ:\n%s", tc.schema, diff)
		}
	}
	var purposes []string
	for p := range schemas["NotificationRequest"].Value.Discriminator.Mapping {
		purposes = append(purposes, p)
	}
	if diff := cmp.Diff(notify.Purposes(), sortedSet(purposes)); diff != "" {
		t.Errorf("purposes: code (-) and spec (+) differ:\n%s", diff)
	}
}

// TestSpecBodiesAreTheCodes checks the spec's Notification and Problem schemas against the
// JSON fields of the types the handler marshals: the same properties, and required exactly
// when the field is never omitted.
func TestSpecBodiesAreTheCodes(t *testing.T) {
	doc := loadSpec(t)
	for _, tc := range []struct {
		schema string
		typ    reflect.Type
	}{
		{"Notification", reflect.TypeFor[intake.StatusView]()},
		{"Problem", reflect.TypeFor[intake.Problem]()},
		{"FieldError", reflect.TypeFor[notify.FieldError]()},
	} {
		s := doc.Components.Schemas[tc.schema].Value
		var props, required []string
		for name := range s.Properties {
			props = append(props, name)
		}
		var fields, always []string
		for i := range tc.typ.NumField() {
			name, opts, _ := strings.Cut(tc.typ.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
			if !strings.Contains(opts, "omitempty") {
				always = append(always, name)
			}
		}
		required = append(required, s.Required...)
		if diff := cmp.Diff(sortedSet(fields), sortedSet(props)); diff != "" {
			t.Errorf("%s properties: code (-) and spec (+) differ:\n%s", tc.schema, diff)
		}
		if tc.schema == "Problem" {
			// The handler always fills detail and instance, though the type omits them when empty.
			always = append(always, "detail", "instance")
		}
		if diff := cmp.Diff(sortedSet(always), sortedSet(required)); diff != "" {
			t.Errorf("%s required: code (-) and spec (+) differ:\n%s", tc.schema, diff)
		}
	}
}

// TestSpecOperationsAreTheTemplateRoutes checks that the spec describes exactly the routes
// template.yaml gives the intake function, and the handler's route keys.
func TestSpecOperationsAreTheTemplateRoutes(t *testing.T) {
	doc := loadSpec(t)
	var spec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			spec = append(spec, method+" "+path)
		}
	}
	routes, err := localapi.RoutesFromTemplate("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tpl []string
	for _, r := range routes {
		if r.Function == "IntakeFunction" {
			tpl = append(tpl, r.RouteKey())
		}
	}
	handler := []string{intake.RouteSubmit, intake.RouteStatus, intake.RouteCancel, intake.RouteConvert}
	if diff := cmp.Diff(sortedSet(tpl), sortedSet(spec)); diff != "" {
		t.Errorf("template routes (-) and spec operations (+) differ:\n%s", diff)
	}
	if diff := cmp.Diff(sortedSet(handler), sortedSet(spec)); diff != "" {
		t.Errorf("handler routes (-) and spec operations (+) differ:\n%s", diff)
	}
}

// stringConsts returns the values of the string constants of type typeName declared in file.
func stringConsts(t *testing.T, file, typeName string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typeName {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a %s constant is not a string literal", file, typeName)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no constant of type %s", file, typeName)
	}
	return out
}

func sortedSet(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// decodeStrict decodes one JSON value, refusing fields that v does not have.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
