package audittest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// ScenarioStart is the fixed time a scenario starts at. It lies in the future so that no
// record's TTL falls due while the scenario runs; every at in the audit table follows from it.
var ScenarioStart = time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)

// Scenario drives notifications through the real intake service and store with a fixed clock,
// fixed notification IDs and the test sealer, whose "sealed" payload holds the phone number
// and params in clear text: the strongest test that the audit writer never copies it.
type Scenario struct {
	Env    *Env
	Clock  *notifytest.Clock
	Intake *notify.Service
	// Submitted lists every phone number and param value the scenario sent.
	Submitted []string
	// Keys lists the idempotency keys in the order the scenario admitted them.
	Keys []string
}

// NewScenario returns a scenario over env starting at ScenarioStart.
func NewScenario(env *Env) *Scenario {
	clock := notifytest.NewClock(ScenarioStart)
	p := notify.DefaultPolicy()
	p.Version = "2030-03-policy"
	p.SafetyMargin = 90 * time.Second
	return &Scenario{
		Env:   env,
		Clock: clock,
		Intake: &notify.Service{
			Store: env.Store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: notifytest.Sealer{},
			Queue: &notifytest.Queue{}, Clock: clock, Policy: p,
			NewID: notifytest.IDs("01HZSCENARIO"),
			Actor: func(context.Context) notify.Actor {
				return notify.Actor{Function: "resetnotify-intake", Version: "$LATEST", RequestID: "req-intake"}
			},
		},
	}
}

// workerActor is the actor of every Step: the scenario stands in for the workers.
var workerActor = notify.Actor{Function: "resetnotify-scenario", Version: "$LATEST", RequestID: "req-step"}

// Submit admits a request for eventID to phone with params, under key (derived from the event
// when empty), 250 ms after the previous step, expiring ttl after that.
func (s *Scenario) Submit(t testing.TB, eventID, key, phone string, params map[string]string, ttl time.Duration) notify.Record {
	t.Helper()
	if key == "" {
		key = eventID + ":sms:password_reset"
	}
	req := notify.Request{
		IdempotencyKey: key, EventID: eventID, Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: phone, Locale: "en", Params: params, ExpiresAt: s.Clock.Now().Add(ttl),
	}
	// Advance first, so no two transitions of the scenario share a time.
	s.Clock.Advance(250 * time.Millisecond)
	s.Submitted = append(s.Submitted, phone)
	for _, v := range params {
		s.Submitted = append(s.Submitted, v)
	}
	out, err := s.Intake.Submit(context.Background(), req)
	if err != nil {
		t.Fatalf("submit %s: %v", key, err)
	}
	s.Keys = append(s.Keys, key)
	return out.Record
}

// Step applies ch to the stored record of key after advancing the clock by after, and
// stores the result with the real store.
func (s *Scenario) Step(t testing.TB, key string, after time.Duration, ch notify.Change) notify.Record {
	t.Helper()
	s.Clock.Advance(after)
	ctx := context.Background()
	cur, err := s.Env.Store.Get(ctx, key)
	if err != nil {
		t.Fatalf("step %s: %v", key, err)
	}
	if ch.To == notify.StateDispatching && ch.LeaseUntil.IsZero() {
		ch.LeaseUntil = s.Clock.Now().Add(30 * time.Second)
		ch.LeaseToken = "scenario-lease-" + strconv.FormatInt(cur.Version, 10)
	}
	if ch.Actor == (notify.Actor{}) {
		ch.Actor = workerActor
	}
	next, err := cur.Apply(ch, s.Clock.Now())
	if err != nil {
		t.Fatalf("step %s: %v", key, err)
	}
	if err := s.Env.Store.Transition(ctx, cur, next); err != nil {
		t.Fatalf("step %s: %v", key, err)
	}
	return next
}

// Cancel cancels key through the intake service after advancing the clock by after.
func (s *Scenario) Cancel(t testing.TB, key string, after time.Duration) {
	t.Helper()
	s.Clock.Advance(after)
	if _, err := s.Intake.Cancel(context.Background(), key); err != nil {
		t.Fatalf("cancel %s: %v", key, err)
	}
}

// The changes a scenario uses.
var (
	Lease    = notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired}
	Accepted = func(id string) notify.Change {
		return notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "simulator", ProviderMessageID: id}
	}
	Timeout   = notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, Provider: "simulator"}
	Throttled = notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonProviderThrottled, Provider: "simulator"}
	Found     = func(id string) notify.Change {
		return notify.Change{To: notify.StateSent, Reason: notify.ReasonReconciledAccepted, ProviderMessageID: id}
	}
	Delivered = notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered}
	Failed    = notify.Change{To: notify.StateUndelivered, Reason: notify.ReasonReceiptFailed}
	Expire    = notify.Change{To: notify.StateExpired, Reason: notify.ReasonExpiredBeforeDispatch}
	Supersede = notify.Change{To: notify.StateCancelled, Reason: notify.ReasonSuperseded}
)

// Standard runs the standard scenario: eight notifications of seven events that between them
// reach every kind of ending: delivered, delivered after an unknown outcome and
// reconciliation, undelivered after a throttled first attempt, expired before dispatch,
// expired at admission, cancelled by the caller, and superseded by a newer request; one is
// still accepted at the end. It returns after the last transition; the audit table is still
// empty.
func (s *Scenario) Standard(t testing.TB) {
	t.Helper()
	const sec = time.Second
	// Reserved fictional numbers (Ofcom drama ranges, NANP 555-01xx).
	s.Submit(t, "evt-delivered", "", "+447700900101", map[string]string{"reset_url": "https://shop.example/reset?token=tok-delivered-7f3a"}, 15*time.Minute)
	s.Step(t, "evt-delivered:sms:password_reset", 2*sec, Lease)
	s.Step(t, "evt-delivered:sms:password_reset", 1200*time.Millisecond, Accepted("sim-msg-0001"))
	s.Step(t, "evt-delivered:sms:password_reset", 4*sec, Delivered)

	s.Submit(t, "evt-unknown", "", "+12025550142", map[string]string{"code": "K7Q2ZP"}, 10*time.Minute)
	s.Step(t, "evt-unknown:sms:password_reset", sec, Lease)
	s.Step(t, "evt-unknown:sms:password_reset", 10*sec, Timeout)
	s.Step(t, "evt-unknown:sms:password_reset", 30*sec, Found("sim-msg-0002"))
	s.Step(t, "evt-unknown:sms:password_reset", 5*sec, Delivered)

	s.Submit(t, "evt-retry", "", "+447700900202", map[string]string{"reset_url": "http://shop.example/r/tok-retry-91bc"}, 20*time.Minute)
	s.Step(t, "evt-retry:sms:password_reset", sec, Lease)
	s.Step(t, "evt-retry:sms:password_reset", sec, Throttled)
	s.Step(t, "evt-retry:sms:password_reset", 20*sec, Lease)
	s.Step(t, "evt-retry:sms:password_reset", sec, Accepted("sim-msg-0003"))
	s.Step(t, "evt-retry:sms:password_reset", 8*sec, Failed)

	s.Submit(t, "evt-expired", "", "+447700900303", map[string]string{"code": "Z9Y8X7"}, 2*time.Minute)
	s.Step(t, "evt-expired:sms:password_reset", 31*sec, Expire)

	// Arrives after its dispatch deadline: admitted as expired.
	s.Submit(t, "evt-late", "", "+12025550177", map[string]string{"code": "LATE42"}, 30*sec)

	s.Submit(t, "evt-cancelled", "", "+447700900404", map[string]string{"reset_url": "https://shop.example/reset?token=tok-cancel-0c1d"}, 15*time.Minute)
	s.Cancel(t, "evt-cancelled:sms:password_reset", 3*sec)

	// Two notifications of one event: the first superseded by a newer request.
	s.Submit(t, "evt-two", "evt-two:first", "+447700900505", map[string]string{"reset_url": "https://shop.example/reset?token=tok-first-aa11"}, 15*time.Minute)
	s.Step(t, "evt-two:first", 2*sec, Supersede)
	s.Submit(t, "evt-two", "evt-two:second", "+447700900506", map[string]string{"reset_url": "https://shop.example/reset?token=tok-second-bb22"}, 15*time.Minute)
	s.Step(t, "evt-two:second", sec, Lease)
	s.Step(t, "evt-two:second", 900*time.Millisecond, Accepted("sim-msg-0004"))
	s.Step(t, "evt-two:second", 3*sec, Delivered)

	// Still waiting for dispatch when the scenario ends: its sealed payload stays stored.
	s.Submit(t, "evt-open", "", "+12025550188", map[string]string{"reset_url": "https://shop.example/reset?token=tok-open-5e6f"}, 15*time.Minute)
}

// StandardTransitions is how many stream records Standard produces.
const StandardTransitions = 4 + 5 + 6 + 2 + 1 + 2 + 2 + 4 + 1
