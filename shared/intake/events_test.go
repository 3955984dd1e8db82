package intake_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// eventsDir holds the sample events for `sam local invoke -e`.
const eventsDir = "../../events"

// sampleExpectation is what one sample event must decode to and how the handler must answer
// it. The samples are run in the order of this table against one store, so the GET and DELETE
// samples find what the POST samples stored.
type sampleExpectation struct {
	file      string
	routeKey  string
	method    string
	key       string // path parameter, for GET and DELETE
	status    int
	problem   intake.ProblemType
	state     notify.State // for 2xx
	replayed  bool
	wantQueue int // messages in the queue after this sample (a replay adds none within the enqueue grace)
}

var samples = []sampleExpectation{
	{file: "intake-post.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusAccepted, state: notify.StateAccepted, wantQueue: 1},
	{file: "intake-post-replay.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusOK, state: notify.StateAccepted, replayed: true, wantQueue: 1},
	{file: "intake-post-key-reuse.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusUnprocessableEntity, problem: intake.ProblemKeyReused, wantQueue: 1},
	{file: "intake-post-body-key.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusAccepted, state: notify.StateAccepted, wantQueue: 2},
	{file: "intake-post-base64.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusAccepted, state: notify.StateAccepted, wantQueue: 3},
	{file: "intake-post-expired.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusAccepted, state: notify.StateExpired, wantQueue: 3},
	{file: "intake-get.json", routeKey: intake.RouteStatus, method: "GET", key: "order-4711-reset-1", status: http.StatusOK, state: notify.StateAccepted, wantQueue: 3},
	{file: "intake-get-derived-key.json", routeKey: intake.RouteStatus, method: "GET", key: "evt-9001:sms:magic_link", status: http.StatusOK, state: notify.StateAccepted, wantQueue: 3},
	{file: "intake-get-not-found.json", routeKey: intake.RouteStatus, method: "GET", key: "order-0000-unknown", status: http.StatusNotFound, problem: intake.ProblemNotificationNotFound, wantQueue: 3},
	{file: "intake-get-invalid-key.json", routeKey: intake.RouteStatus, method: "GET", key: "order 4711", status: http.StatusBadRequest, problem: intake.ProblemInvalidRequest, wantQueue: 3},
	{file: "intake-delete.json", routeKey: intake.RouteCancel, method: "DELETE", key: "order-4711-reset-1", status: http.StatusOK, state: notify.StateCancelled, wantQueue: 3},
	{file: "intake-delete-conflict.json", routeKey: intake.RouteCancel, method: "DELETE", key: "order-4711-reset-1", status: http.StatusConflict, problem: intake.ProblemNotCancellable, wantQueue: 3},
	{file: "intake-delete-not-found.json", routeKey: intake.RouteCancel, method: "DELETE", key: "order-0000-unknown", status: http.StatusNotFound, problem: intake.ProblemNotificationNotFound, wantQueue: 3},
	{file: "intake-post-bad-json.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusBadRequest, problem: intake.ProblemMalformedRequest, wantQueue: 3},
	{file: "intake-post-invalid.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusBadRequest, problem: intake.ProblemInvalidRequest, wantQueue: 3},
	{file: "intake-post-key-mismatch.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusBadRequest, problem: intake.ProblemKeyMismatch, wantQueue: 3},
	{file: "intake-post-wrong-content-type.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusUnsupportedMediaType, problem: intake.ProblemUnsupportedMediaType, wantQueue: 3},
	{file: "intake-post-too-large.json", routeKey: intake.RouteSubmit, method: "POST", status: http.StatusRequestEntityTooLarge, problem: intake.ProblemPayloadTooLarge, wantQueue: 3},
}

// TestSampleEventsAreAllCovered fails when a sample event has no expectation, or an
// expectation no file.
func TestSampleEventsAreAllCovered(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(eventsDir, "intake-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	for _, s := range samples {
		want = append(want, s.file)
	}
	sort.Strings(got)
	sort.Strings(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sample events and expectations differ (-expected +files):\n%s", d)
	}
}

func TestSampleEvents(t *testing.T) {
	f := newFixture(t)
	for _, s := range samples {
		t.Run(s.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(eventsDir, s.file))
			if err != nil {
				t.Fatal(err)
			}
			var ev events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatalf("decode: %v", err)
			}
			checkDecodedEvent(t, raw, ev, s)

			// The handler's clock stands where API Gateway stamped the request.
			f.clock.Set(time.UnixMilli(ev.RequestContext.TimeEpoch))
			resp := f.do(t, ev)
			if resp.StatusCode != s.status {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, s.status, resp.Body)
			}
			if s.problem != "" {
				wantProblem(t, resp, s.status, s.problem)
			} else if v := decodeView(t, resp); v.State != s.state {
				t.Errorf("state = %q, want %q", v.State, s.state)
			}
			if got := resp.Headers[intake.HeaderIdempotentReplayed] == "true"; got != s.replayed {
				t.Errorf("replayed = %v, want %v", got, s.replayed)
			}
			if n := len(f.queue.Sent()); n != s.wantQueue {
				t.Errorf("queue holds %d messages, want %d", n, s.wantQueue)
			}
		})
	}
}

// checkDecodedEvent compares a decoded sample with what the file says, and checks that the
// file is an HTTP API payload 2.0 event as API Gateway sends it.
func checkDecodedEvent(t *testing.T, raw []byte, ev events.APIGatewayV2HTTPRequest, s sampleExpectation) {
	t.Helper()
	if ev.Version != "2.0" || ev.RouteKey != s.routeKey || ev.RequestContext.RouteKey != s.routeKey {
		t.Errorf("version %q, route keys %q / %q, want 2.0 and %q", ev.Version, ev.RouteKey, ev.RequestContext.RouteKey, s.routeKey)
	}
	if ev.RequestContext.HTTP.Method != s.method || ev.RequestContext.HTTP.Path != ev.RawPath {
		t.Errorf("method %q path %q raw path %q", ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path, ev.RawPath)
	}
	if ev.RequestContext.RequestID == "" || ev.RequestContext.TimeEpoch == 0 || ev.RequestContext.Stage != "$default" {
		t.Errorf("request context lacks request ID, time or stage: %+v", ev.RequestContext)
	}
	if ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.IAM == nil || ev.RequestContext.Authorizer.IAM.UserARN == "" {
		t.Error("sample lacks the IAM authorizer context the API requires")
	}
	for k := range ev.Headers {
		if k != strings.ToLower(k) {
			t.Errorf("header %q is not lower case, as HTTP API v2 delivers headers", k)
		}
	}
	if s.key != "" && ev.PathParameters[intake.PathParamKey] != s.key {
		t.Errorf("path parameter %q = %q, want %q", intake.PathParamKey, ev.PathParameters[intake.PathParamKey], s.key)
	}
	if cl, ok := ev.Headers["content-length"]; ok {
		body := []byte(ev.Body)
		if ev.IsBase64Encoded {
			var err error
			if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
				t.Fatalf("base64 body: %v", err)
			}
		}
		if cl != itoa(len(body)) {
			t.Errorf("content-length %s, body %d bytes", cl, len(body))
		}
	}

	// Nothing in the file was dropped by decoding: everything it says survives a round trip.
	var original, roundTrip any
	if err := json.Unmarshal(raw, &original); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &roundTrip); err != nil {
		t.Fatal(err)
	}
	for _, p := range missingFrom(original, roundTrip, "") {
		t.Errorf("field %s of the file is lost by events.APIGatewayV2HTTPRequest", p)
	}
}

// missingFrom lists the paths of want that got does not hold with the same value. A null in
// want matches an absent or empty value in got.
func missingFrom(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for k, v := range w {
			out = append(out, missingFrom(v, g[k], path+"."+k)...)
		}
		return out
	case nil:
		if isEmpty(got) {
			return nil
		}
		return []string{path}
	}
	if !reflect.DeepEqual(want, got) {
		return []string{path}
	}
	return nil
}

// isEmpty reports whether v is JSON null, or a zero value, or an object of empty values.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if !isEmpty(e) {
				return false
			}
		}
		return true
	}
	return reflect.ValueOf(v).IsZero()
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestStatusViewListsTheProviderOfEachAttempt: the status shows each attempt with its
// provider, a record written before the list was kept included.
func TestStatusViewListsTheProviderOfEachAttempt(t *testing.T) {
	rec := notify.Record{Attempt: 2, Provider: "sinch", AttemptProviders: []string{"endusersms", "sinch"}}
	want := []intake.AttemptView{{Attempt: 1, Provider: "endusersms"}, {Attempt: 2, Provider: "sinch"}}
	if diff := cmp.Diff(want, intake.NewStatusView(rec).Attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	legacy := notify.Record{Attempt: 1, Provider: "endusersms"}
	if diff := cmp.Diff([]intake.AttemptView{{Attempt: 1, Provider: "endusersms"}}, intake.NewStatusView(legacy).Attempts); diff != "" {
		t.Errorf("legacy attempts (-want +got):\n%s", diff)
	}
}
