package intake_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
)

func TestSubmitFirstAdmission(t *testing.T) {
	f := newFixture(t)
	resp := f.do(t, post(body(nil)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status = %d, want 202; body %s", resp.StatusCode, resp.Body)
	}
	if got, want := resp.Headers[intake.HeaderLocation], "/v1/notifications/"+derived; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	if _, ok := resp.Headers[intake.HeaderIdempotentReplayed]; ok {
		t.Errorf("first admission carries %s", intake.HeaderIdempotentReplayed)
	}
	want := intake.StatusView{
		IdempotencyKey: derived, NotificationID: "n-0001", EventID: eventID, Channel: "sms",
		Purpose: "password_reset", State: notify.StateAccepted, Reason: notify.ReasonAdmitted, Version: 1,
		CreatedAt: "2026-11-01T12:00:00Z", UpdatedAt: "2026-11-01T12:00:00Z",
		ExpiresAt: "2026-11-01T12:15:00Z", DispatchDeadline: "2026-11-01T12:14:00Z",
		PolicyVersion: notify.DefaultPolicy().Version, SafetyMarginMS: 60000,
	}
	if d := cmp.Diff(want, decodeView(t, resp)); d != "" {
		t.Errorf("status view (-want +got):\n%s", d)
	}
	for _, field := range []string{"sealed", "destination_fp", "fingerprint", "to", "params"} {
		if strings.Contains(resp.Body, `"`+field) {
			t.Errorf("status view exposes %s: %s", field, resp.Body)
		}
	}
	wantMsgs := []notify.Message{{IdempotencyKey: stored(derived), NotificationID: "n-0001", Version: 1}}
	if d := cmp.Diff(wantMsgs, f.queue.Sent()); d != "" {
		t.Errorf("queue (-want +got):\n%s", d)
	}
}

func TestSubmitKeyFromHeaderOrBody(t *testing.T) {
	tests := []struct {
		name    string
		ev      func() eventT
		wantKey string
	}{
		{"header", func() eventT { return post(body(nil), "idempotency-key", "order-77.reset") }, "order-77.reset"},
		{"quoted header (IETF draft)", func() eventT { return post(body(nil), "idempotency-key", `"order-77.reset"`) }, "order-77.reset"},
		{"mixed-case header names", func() eventT {
			ev := post(body(nil))
			delete(ev.Headers, "content-type")
			ev.Headers["Content-Type"] = "Application/JSON; Charset=UTF-8"
			ev.Headers["Idempotency-Key"] = "order-77.reset"
			return ev
		}, "order-77.reset"},
		{"body", func() eventT {
			return post(body(func(m map[string]any) { m["idempotency_key"] = "order-77.reset" }))
		}, "order-77.reset"},
		{"header and body equal", func() eventT {
			return post(body(func(m map[string]any) { m["idempotency_key"] = "order-77.reset" }), "idempotency-key", "order-77.reset")
		}, "order-77.reset"},
		{"derived", func() eventT { return post(body(nil)) }, derived},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.do(t, tc.ev())
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status = %d; body %s", resp.StatusCode, resp.Body)
			}
			if got := decodeView(t, resp).IdempotencyKey; got != tc.wantKey {
				t.Errorf("key = %q, want %q", got, tc.wantKey)
			}
			if got := resp.Headers[intake.HeaderLocation]; got != "/v1/notifications/"+tc.wantKey {
				t.Errorf("Location = %q", got)
			}
		})
	}
}

func TestSubmitReplay(t *testing.T) {
	f := newFixture(t)
	first := f.do(t, post(body(nil)))
	f.clock.Advance(5 * time.Second)
	replay := f.do(t, post(body(nil)))
	if replay.StatusCode != http.StatusOK {
		t.Fatalf("replay status = %d; body %s", replay.StatusCode, replay.Body)
	}
	if got := replay.Headers[intake.HeaderIdempotentReplayed]; got != "true" {
		t.Errorf("%s = %q, want true", intake.HeaderIdempotentReplayed, got)
	}
	if _, ok := replay.Headers[intake.HeaderLocation]; ok {
		t.Error("replay carries Location")
	}
	if d := cmp.Diff(decodeView(t, first), decodeView(t, replay)); d != "" {
		t.Errorf("replay differs from the first answer (-first +replay):\n%s", d)
	}
	if n := len(f.store.All()); n != 1 {
		t.Errorf("store holds %d records, want 1", n)
	}
	// A replay inside the enqueue grace presumes the first message on its way: no second one.
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("queue got %d messages, want 1", n)
	}

	// Once a worker has moved the record on, a replay shows the current state and queues nothing.
	rec := f.store.All()[0]
	next, err := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: f.clock.Now().Add(time.Minute)}, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(t.Context(), rec, next); err != nil {
		t.Fatal(err)
	}
	later := f.do(t, post(body(nil)))
	if later.StatusCode != http.StatusOK || decodeView(t, later).State != notify.StateDispatching {
		t.Errorf("replay after lease: status %d, body %s", later.StatusCode, later.Body)
	}
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("queue got %d messages after a replay of a dispatching record, want 1", n)
	}
}

func TestSubmitKeyReuse(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil)))
	before := f.store.All()
	sentBefore := len(f.queue.Sent())
	for _, edit := range []func(map[string]any){
		func(m map[string]any) { m["to"] = "+447700900999" },
		func(m map[string]any) { m["params"] = map[string]any{"reset_url": "https://shop.example/reset/other"} },
		func(m map[string]any) { m["expires_at"] = t0.Add(20 * time.Minute).Format(time.RFC3339) },
		func(m map[string]any) { m["locale"] = "fr" },
	} {
		resp := f.do(t, post(body(edit)))
		p := wantProblem(t, resp, http.StatusUnprocessableEntity, intake.ProblemKeyReused)
		if len(p.Errors) != 0 || p.State != "" {
			t.Errorf("422 tells more than it should: %s", resp.Body)
		}
	}
	if d := cmp.Diff(before, f.store.All()); d != "" {
		t.Errorf("key reuse changed the stored record (-before +after):\n%s", d)
	}
	if n := len(f.queue.Sent()); n != sentBefore {
		t.Errorf("key reuse queued %d messages", n-sentBefore)
	}
}

func TestSubmitQueueUnavailable(t *testing.T) {
	f := newFixture(t)
	f.queue.Err = errors.New("sqs: connection refused")
	resp := f.do(t, post(body(nil)))
	p := wantProblem(t, resp, http.StatusServiceUnavailable, intake.ProblemQueueUnavailable)
	if got := resp.Headers[intake.HeaderRetryAfter]; got != "2" {
		t.Errorf("Retry-After = %q, want 2", got)
	}
	if strings.Contains(resp.Body, "connection refused") || strings.Contains(p.Detail, "sqs") {
		t.Errorf("503 leaks the cause: %s", resp.Body)
	}
	recs := f.store.All()
	if len(recs) != 1 || recs[0].State != notify.StateAccepted {
		t.Fatalf("store = %+v, want one accepted record", recs)
	}

	f.queue.Err = nil
	replay := f.do(t, post(body(nil)))
	if replay.StatusCode != http.StatusOK || replay.Headers[intake.HeaderIdempotentReplayed] != "true" {
		t.Fatalf("replay: status %d, headers %v", replay.StatusCode, replay.Headers)
	}
	want := []notify.Message{notify.MessageOf(recs[0])}
	if d := cmp.Diff(want, f.queue.Sent()); d != "" {
		t.Errorf("replay did not queue the accepted record (-want +got):\n%s", d)
	}
}

func TestSubmitPastDeadlineAdmittedAsExpired(t *testing.T) {
	tests := []struct {
		name      string
		expiresIn time.Duration
	}{
		{"inside the safety margin", 30 * time.Second},
		{"exactly at the deadline", 60 * time.Second},
		{"already expired, within lateness", -10 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.do(t, post(body(func(m map[string]any) {
				m["expires_at"] = t0.Add(tc.expiresIn).Format(time.RFC3339)
			})))
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status = %d; body %s", resp.StatusCode, resp.Body)
			}
			v := decodeView(t, resp)
			if v.State != notify.StateExpired || v.Reason != notify.ReasonExpiredAtAdmission {
				t.Errorf("state %s reason %s, want expired EXPIRED_AT_ADMISSION", v.State, v.Reason)
			}
			if n := len(f.queue.Sent()); n != 0 {
				t.Errorf("queued %d messages for an expired admission", n)
			}
			if recs := f.store.All(); len(recs) != 1 || recs[0].Sealed != nil {
				t.Errorf("store = %+v, want one record without a sealed payload", recs)
			}
		})
	}
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	f := newFixture(t)
	f.store.Err = errors.New("dynamodb: ValidationException near +447700900123")
	for _, ev := range []eventT{post(body(nil)), get(derived), del(derived)} {
		resp := f.do(t, ev)
		wantProblem(t, resp, http.StatusInternalServerError, intake.ProblemInternal)
		if strings.Contains(resp.Body, "dynamodb") || strings.Contains(resp.Body, "Validation") {
			t.Errorf("500 leaks the cause: %s", resp.Body)
		}
	}
	if strings.Contains(f.logs.String(), phone) {
		t.Errorf("log holds the phone number: %s", f.logs.String())
	}
	if !strings.Contains(f.logs.String(), `"level":"ERROR"`) {
		t.Errorf("500 was not logged as an error: %s", f.logs.String())
	}
}

func TestStatus(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil), "idempotency-key", "order-77"))

	resp := f.do(t, get("order-77"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d; body %s", resp.StatusCode, resp.Body)
	}
	if v := decodeView(t, resp); v.IdempotencyKey != "order-77" || v.NotificationID != "n-0001" || v.State != notify.StateAccepted {
		t.Errorf("view = %+v", v)
	}
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("looking caused work: %d messages", n)
	}

	// Keys with ":" arrive percent-encoded in the raw path and maybe in the parameter.
	f.do(t, post(body(nil)))
	ev := get("evt-1001%3Asms%3Apassword_reset")
	if resp := f.do(t, ev); resp.StatusCode != http.StatusOK {
		t.Errorf("encoded key: status = %d; body %s", resp.StatusCode, resp.Body)
	}

	wantProblem(t, f.do(t, get("order-404")), http.StatusNotFound, intake.ProblemNotificationNotFound)
	p := wantProblem(t, f.do(t, get("bad%20key")), http.StatusBadRequest, intake.ProblemInvalidRequest)
	if len(p.Errors) != 1 || p.Errors[0].Field != intake.PathParamKey {
		t.Errorf("errors = %+v, want one for %q", p.Errors, intake.PathParamKey)
	}
	wantProblem(t, f.do(t, get(strings.Repeat("k", notify.MaxKeyLen+1))), http.StatusBadRequest, intake.ProblemInvalidRequest)
}

func TestCancel(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil), "idempotency-key", "order-1"))
	f.clock.Advance(time.Second)

	resp := f.do(t, del("order-1"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d; body %s", resp.StatusCode, resp.Body)
	}
	v := decodeView(t, resp)
	if v.State != notify.StateCancelled || v.Reason != notify.ReasonCancelled || v.Version != 2 || v.UpdatedAt != "2026-11-01T12:00:01Z" {
		t.Errorf("view = %+v", v)
	}

	again := f.do(t, del("order-1"))
	p := wantProblem(t, again, http.StatusConflict, intake.ProblemNotCancellable)
	if p.State != notify.StateCancelled || p.Reason != notify.ReasonCancelled || !strings.Contains(p.Detail, "cancelled") {
		t.Errorf("409 does not tell the current state: %s", again.Body)
	}

	// A record a worker is dispatching can no longer be cancelled.
	f.do(t, post(body(nil), "idempotency-key", "order-2"))
	rec, err := f.store.Get(t.Context(), stored("order-2"))
	if err != nil {
		t.Fatal(err)
	}
	next, err := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: f.clock.Now().Add(time.Minute)}, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(t.Context(), rec, next); err != nil {
		t.Fatal(err)
	}
	p = wantProblem(t, f.do(t, del("order-2")), http.StatusConflict, intake.ProblemNotCancellable)
	if p.State != notify.StateDispatching {
		t.Errorf("state = %q, want dispatching", p.State)
	}

	wantProblem(t, f.do(t, del("order-404")), http.StatusNotFound, intake.ProblemNotificationNotFound)
	wantProblem(t, f.do(t, del("a+b")), http.StatusBadRequest, intake.ProblemInvalidRequest)
}

func TestRouting(t *testing.T) {
	json := map[string]string{"content-type": "application/json"}
	tests := []struct {
		name    string
		ev      eventT
		status  int
		problem intake.ProblemType
	}{
		{"route key POST", post(body(nil)), http.StatusAccepted, ""},
		{"route key GET", get("order-404"), http.StatusNotFound, intake.ProblemNotificationNotFound},
		{"route key DELETE", del("order-404"), http.StatusNotFound, intake.ProblemNotificationNotFound},
		{"route key only in the request context", func() eventT {
			ev := get("order-404")
			ev.RouteKey = ""
			return ev
		}(), http.StatusNotFound, intake.ProblemNotificationNotFound},
		{"named stage prefix", func() eventT {
			ev := get("order-404")
			ev.RawPath, ev.RequestContext.HTTP.Path, ev.RequestContext.Stage = "/prod/v1/notifications/order-404", "/prod/v1/notifications/order-404", "prod"
			return ev
		}(), http.StatusNotFound, intake.ProblemNotificationNotFound},
		{"the key comes from the path parameter, not the path", func() eventT {
			ev := get("order-404")
			ev.RawPath = "/v1/notifications/order-1"
			ev.PathParameters = nil
			return ev
		}(), http.StatusBadRequest, intake.ProblemInvalidRequest},
		// Routed once, on the route key: a path alone routes nothing.
		{"default route POST", raw("POST", "/v1/notifications", body(nil), json), http.StatusNotFound, intake.ProblemRouteNotFound},
		{"default route GET", raw("GET", "/v1/notifications/order-404", "", nil), http.StatusNotFound, intake.ProblemRouteNotFound},
		{"no route key at all", func() eventT {
			ev := raw("GET", "/v1/notifications/order-404", "", nil)
			ev.RouteKey, ev.RequestContext.RouteKey = "", ""
			return ev
		}(), http.StatusNotFound, intake.ProblemRouteNotFound},
		{"ANY route", func() eventT {
			ev := raw("GET", "/v1/notifications/order-404", "", nil)
			ev.RouteKey = "ANY /v1/notifications/{key}"
			return ev
		}(), http.StatusNotFound, intake.ProblemRouteNotFound},
		{"another method's route key", event("PUT /v1/notifications", "/v1/notifications", body(nil), json), http.StatusNotFound, intake.ProblemRouteNotFound},
		{"unknown path", raw("GET", "/v2/notifications", "", nil), http.StatusNotFound, intake.ProblemRouteNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.do(t, tc.ev)
			if tc.problem == "" {
				if resp.StatusCode != tc.status {
					t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.status, resp.Body)
				}
				return
			}
			wantProblem(t, resp, tc.status, tc.problem)
		})
	}
}

func TestContentTypes(t *testing.T) {
	tests := []struct {
		contentType string
		ok          bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON;charset=UTF-8", true},
		{"application/json; charset=iso-8859-1", false},
		{"text/plain", false},
		{"application/x-www-form-urlencoded", false},
		{"application/problem+json", false},
		{"application/json-seq", false},
		{"application/json; charset=", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.contentType, func(t *testing.T) {
			f := newFixture(t)
			ev := post(body(nil))
			delete(ev.Headers, "content-type")
			if tc.contentType != "" {
				ev.Headers["content-type"] = tc.contentType
			}
			resp := f.do(t, ev)
			if tc.ok {
				if resp.StatusCode != http.StatusAccepted {
					t.Errorf("status = %d; body %s", resp.StatusCode, resp.Body)
				}
				return
			}
			wantProblem(t, resp, http.StatusUnsupportedMediaType, intake.ProblemUnsupportedMediaType)
		})
	}
}

func TestBase64Body(t *testing.T) {
	f := newFixture(t)
	ev := post(encodeBase64(body(nil)))
	ev.IsBase64Encoded = true
	if resp := f.do(t, ev); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status = %d; body %s", resp.StatusCode, resp.Body)
	}

	// The limit applies to the decoded body: one of exactly MaxBodyBytes is about 11 KiB in
	// base64 and is not refused for its size (only for its padding field).
	full := padTo(body(nil), intake.MaxBodyBytes)
	ev = post(encodeBase64(full))
	ev.IsBase64Encoded = true
	wantProblem(t, f.do(t, ev), http.StatusBadRequest, intake.ProblemInvalidRequest)

	over := padTo(body(nil), intake.MaxBodyBytes+1)
	ev = post(encodeBase64(over))
	ev.IsBase64Encoded = true
	wantProblem(t, f.do(t, ev), http.StatusRequestEntityTooLarge, intake.ProblemPayloadTooLarge)
}

func TestOneLogLinePerRequest(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil), "idempotency-key", "order-9"))
	f.do(t, post(body(nil), "idempotency-key", "order-9"))
	f.do(t, get("order-9"))
	f.do(t, raw("PUT", "/v1/notifications", "", nil))
	lines := f.logs.lines(t)
	if len(lines) != 4 {
		t.Fatalf("got %d log lines, want 4:\n%s", len(lines), f.logs.String())
	}
	type line struct {
		Method, Route, Key, NotificationID string
		Status                             float64
		Replayed                           any
	}
	var got []line
	for _, l := range lines {
		for _, k := range []string{"time", "level", "msg", "latency_ms", "request_id"} {
			if _, ok := l[k]; !ok {
				t.Errorf("log line lacks %s: %v", k, l)
			}
		}
		got = append(got, line{l["method"].(string), l["route"].(string), l["key"].(string), l["notification_id"].(string), l["status"].(float64), l["replayed"]})
	}
	want := []line{
		{"POST", intake.RouteSubmit, "order-9", "n-0001", 202, false},
		{"POST", intake.RouteSubmit, "order-9", "n-0001", 200, true},
		{"GET", intake.RouteStatus, "order-9", "n-0001", 200, nil},
		{"PUT", "unmatched", "", "", 404, nil},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("log lines (-want +got):\n%s", d)
	}
	metrics := f.metrics.lines(t)
	var requests, transitions int
	for _, m := range metrics {
		if _, ok := m["Requests"]; ok {
			requests++
		}
		if _, ok := m["Transitions"]; ok {
			transitions++
		}
	}
	if requests != 4 || transitions != 1 {
		t.Errorf("metrics: %d request lines and %d transition lines, want 4 and 1:\n%s", requests, transitions, f.metrics.String())
	}
}
