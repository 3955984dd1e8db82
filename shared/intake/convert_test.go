package intake_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

func convert(key string) eventT {
	return event(intake.RouteConvert, intake.CollectionPath+"/"+key+"/conversion", "", nil)
}

// markSent moves the record for key to sent, as the dispatch worker does.
func (f *fixture) markSent(t *testing.T, key string) {
	t.Helper()
	ctx := context.Background()
	rec, err := f.store.Get(ctx, stored(key))
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	leased, err := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "lt"}, now)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := leased.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "simulator", ProviderMessageID: "pm-1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(ctx, rec, leased); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(ctx, leased, sent); err != nil {
		t.Fatal(err)
	}
}

// convertEvent builds the conversion route's event with the key segment taken from the path
// (the helper's event takes the last segment, which here is "conversion").
func convertEvent(key string) eventT {
	ev := convert(key)
	ev.PathParameters = map[string]string{intake.PathParamKey: key}
	return ev
}

func TestConversionAnswers(t *testing.T) {
	f := newFixture(t)
	fb := &notifytest.Feedback{}
	f.intake.Feedback = fb
	if resp := f.do(t, post(body(nil), "idempotency-key", "order-1")); resp.StatusCode != http.StatusAccepted {
		t.Fatal(resp.StatusCode, resp.Body)
	}
	p := wantProblem(t, f.do(t, convertEvent("order-1")), http.StatusConflict, intake.ProblemNotSent)
	if p.State != notify.StateAccepted || p.Reason != notify.ReasonAdmitted {
		t.Errorf("not-sent problem names %s/%s, want accepted/ADMITTED", p.State, p.Reason)
	}
	wantProblem(t, f.do(t, convertEvent("nobody")), http.StatusNotFound, intake.ProblemNotificationNotFound)
	wantProblem(t, f.do(t, convertEvent("bad%20key")), http.StatusBadRequest, intake.ProblemInvalidRequest)

	f.markSent(t, "order-1")
	f.clock.Advance(30 * time.Second)
	first := f.do(t, convertEvent("order-1"))
	v := decodeView(t, first)
	if first.StatusCode != http.StatusOK || v.State != notify.StateSent || v.Reason != notify.ReasonConverted ||
		v.ConvertedAt != f.clock.Now().Format(time.RFC3339Nano) || first.Headers[intake.HeaderIdempotentReplayed] != "" {
		t.Fatalf("first conversion: %d %s", first.StatusCode, first.Body)
	}
	again := f.do(t, convertEvent("order-1"))
	if w := decodeView(t, again); again.StatusCode != http.StatusOK || w.Version != v.Version ||
		again.Headers[intake.HeaderIdempotentReplayed] != "true" {
		t.Fatalf("repeat: %d %s %v", again.StatusCode, again.Body, again.Headers)
	}
	if got := fb.Calls(); len(got) != 2 || got[0] != "pm-1" {
		t.Errorf("feedback %v, want pm-1 on both calls", got)
	}
	fb.Err = errors.New("provider down")
	resp := f.do(t, convertEvent("order-1"))
	wantProblem(t, resp, http.StatusServiceUnavailable, intake.ProblemFeedbackUnavailable)
	if resp.Headers[intake.HeaderRetryAfter] == "" {
		t.Error("feedback-unavailable without Retry-After")
	}
	if logs := f.logs.String(); !strings.Contains(logs, `"route":"`+intake.RouteConvert+`"`) || strings.Contains(logs, phone) {
		t.Errorf("logs: %s", logs)
	}
}
