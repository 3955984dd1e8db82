package notify_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// sendRecord admits a request with key through f and moves its record to sent, as the
// dispatch worker does, with provider message ID "msg-<key>".
func sendRecord(t *testing.T, f intakeFixture, key, to string) notify.Record {
	t.Helper()
	ctx := context.Background()
	sub, err := f.in.Submit(ctx, parseAt(t, f, to, key))
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	leased, err := sub.Record.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired,
		LeaseUntil: now.Add(time.Minute), LeaseToken: "lt"}, now)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := leased.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted,
		Provider: "simulator", ProviderMessageID: "msg-" + key}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(ctx, sub.Record, leased); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(ctx, leased, sent); err != nil {
		t.Fatal(err)
	}
	return sent
}

func TestConvertIsAnAuditedTransitionOnceAndReportsEveryTime(t *testing.T) {
	ctx := context.Background()
	f := newService()
	fb := &notifytest.Feedback{}
	f.in.Feedback = fb
	sent := sendRecord(t, f, "k", "+14155550100")
	f.clock.Advance(40 * time.Second)

	first, err := f.in.Convert(ctx, "k")
	if err != nil || first.Replayed {
		t.Fatalf("first conversion: %+v, %v", first, err)
	}
	got := first.Record
	if got.State != notify.StateSent || got.Reason != notify.ReasonConverted || got.Version != sent.Version+1 ||
		!got.ConvertedAt.Equal(f.clock.Now()) {
		t.Errorf("converted record: state %s reason %s v%d at %s", got.State, got.Reason, got.Version, got.ConvertedAt)
	}
	f.clock.Advance(time.Second)
	again, err := f.in.Convert(ctx, "k")
	if err != nil || !again.Replayed || again.Record.Version != got.Version {
		t.Fatalf("repeat: %+v, %v; want the converted record unchanged", again, err)
	}
	if calls := fb.Calls(); len(calls) != 2 || calls[0] != "msg-k" {
		t.Errorf("feedback calls %v, want msg-k twice (every call reports)", calls)
	}
	// A receipt after the conversion still moves sent to delivered, and keeps the conversion.
	stored, _ := f.store.Get(ctx, "k")
	delivered, err := stored.Apply(notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered}, f.clock.Now())
	if err != nil || !delivered.Converted() {
		t.Fatalf("receipt after conversion: %+v %v", delivered, err)
	}
	if _, err := delivered.Convert(f.clock.Now()); err != nil {
		t.Errorf("a delivered record can be converted: %v", err)
	}
}

func TestConvertRefusesWhatWasNeverSent(t *testing.T) {
	ctx := context.Background()
	f := newService()
	if _, err := f.in.Submit(ctx, parse(t, body(nil), "k")); err != nil {
		t.Fatal(err)
	}
	res, err := f.in.Convert(ctx, "k")
	if !errors.Is(err, notify.ErrNotSent) || res.Record.State != notify.StateAccepted {
		t.Errorf("accepted: %v (state %s), want ErrNotSent with the record", err, res.Record.State)
	}
	if rec, _ := f.store.Get(ctx, "k"); rec.Version != 1 {
		t.Errorf("a refused conversion wrote v%d", rec.Version)
	}
	if _, err := f.in.Convert(ctx, "nope"); !errors.Is(err, notify.ErrNotFound) {
		t.Errorf("unknown key: %v, want ErrNotFound", err)
	}
	if _, err := f.in.Convert(ctx, "bad key\n"); !errors.As(err, new(*notify.ValidationError)) {
		t.Errorf("invalid key: %v, want a ValidationError", err)
	}
	for _, st := range []notify.State{notify.StateFailed, notify.StateExpired, notify.StateCancelled,
		notify.StateDispatching, notify.StateDispatchUnknown, notify.StateRetryScheduled, notify.StateRefused} {
		if _, err := (notify.Record{State: st}).Convert(t0); !errors.Is(err, notify.ErrNotSent) {
			t.Errorf("%s: %v, want ErrNotSent", st, err)
		}
	}
}

func TestConvertFeedbackFailureIsRepeatable(t *testing.T) {
	ctx := context.Background()
	f := newService()
	fb := &notifytest.Feedback{Err: errors.New("provider down")}
	f.in.Feedback = fb
	sendRecord(t, f, "k", "+14155550100")
	res, err := f.in.Convert(ctx, "k")
	if !errors.Is(err, notify.ErrFeedback) || !res.Record.Converted() {
		t.Fatalf("feedback failure: %v, converted %v; want ErrFeedback with the conversion recorded", err, res.Record.Converted())
	}
	fb.Err = nil
	if res, err := f.in.Convert(ctx, "k"); err != nil || !res.Replayed {
		t.Fatalf("repeat: %+v %v", res, err)
	}
	if calls := fb.Calls(); len(calls) != 2 {
		t.Errorf("feedback calls %v, want the repeat to report again", calls)
	}
}

// parseAt parses a request to the number to with key at f's clock, expiring 15 minutes later.
func parseAt(t *testing.T, f intakeFixture, to, key string) notify.Request {
	t.Helper()
	now := f.clock.Now()
	b := body(func(m map[string]any) {
		m["to"], m["expires_at"] = to, now.Add(15*time.Minute).Format(time.RFC3339)
	})
	req, err := notify.ParseRequest(b, key, now, notify.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return req
}
