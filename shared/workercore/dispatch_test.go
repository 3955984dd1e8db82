package workercore_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// TestProviderOutcomeTable drives one attempt per row of docs/design.md's provider-outcome table
// (the lease-expired row is TestLeaseRunOut) and checks the transition, what is kept on the
// record and what is scheduled next.
func TestProviderOutcomeTable(t *testing.T) {
	visibility := testSettings().Visibility
	tests := []struct {
		name      string
		outcome   sms.Outcome
		want      state
		queue     notify.QueueName // "" when nothing is scheduled
		minDelay  time.Duration
		messageID string
	}{
		{"success with a message ID", sms.Accepted("pm-1"),
			state{notify.StateSent, notify.ReasonProviderAccepted}, "", 0, "pm-1"},
		{"failure before the request was written", sms.NotAccepted(sms.DetailNotWritten, 0, errors.New("dial tcp: connection refused")),
			state{notify.StateRetryScheduled, notify.ReasonProviderUnavailable}, notify.DispatchQueue, 500 * time.Millisecond, ""},
		{"429 with Retry-After", sms.NotAccepted(sms.DetailThrottled, 7*time.Second, nil),
			state{notify.StateRetryScheduled, notify.ReasonProviderThrottled}, notify.DispatchQueue, 7 * time.Second, ""},
		{"503 documented as not processed", sms.NotAccepted(sms.DetailUnavailable, 0, nil),
			state{notify.StateRetryScheduled, notify.ReasonProviderUnavailable}, notify.DispatchQueue, 500 * time.Millisecond, ""},
		{"permanent 4xx", sms.Rejected("opted_out", errors.New("sinch.send: provider answered status 400")),
			state{notify.StateFailed, notify.ReasonProviderRejected}, "", 0, ""},
		{"timeout after the request was written", sms.Unknown(sms.DetailTimeout, context.DeadlineExceeded),
			state{notify.StateDispatchUnknown, notify.ReasonProviderTimeout}, notify.ReconcileQueue, visibility, ""},
		{"connection reset", sms.Unknown(sms.DetailConnectionLost, errors.New("read: connection reset by peer")),
			state{notify.StateDispatchUnknown, notify.ReasonConnectionLost}, notify.ReconcileQueue, visibility, ""},
		{"500, 502 or 504", sms.Unknown(sms.DetailAmbiguous, errors.New("status 502")),
			state{notify.StateDispatchUnknown, notify.ReasonProviderAmbiguous}, notify.ReconcileQueue, visibility, ""},
		{"unclassified outcome is unknown", sms.Outcome{},
			state{notify.StateDispatchUnknown, notify.ReasonProviderAmbiguous}, notify.ReconcileQueue, visibility, ""},
		{"accepted without a message ID is unknown", sms.Accepted(""),
			state{notify.StateDispatchUnknown, notify.ReasonProviderAmbiguous}, notify.ReconcileQueue, visibility, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sender.Outcomes = []sms.Outcome{tc.outcome}
			req := request("k", 10*time.Minute)
			rec := f.admit(t, req)
			f.dispatch(t, notify.MessageOf(rec))

			got := f.get(t, "k")
			if diff := cmp.Diff(tc.want, stateOf(got)); diff != "" {
				t.Fatalf("state (-want +got):\n%s", diff)
			}
			if got.Attempt != 1 || got.Version != 3 || got.Provider != providerSim || got.ProviderMessageID != tc.messageID {
				t.Errorf("attempt %d version %d provider %q message ID %q", got.Attempt, got.Version, got.Provider, got.ProviderMessageID)
			}
			if !got.LeaseUntil.IsZero() {
				t.Errorf("lease kept after the outcome: %s", got.LeaseUntil)
			}
			if sealed := len(got.Sealed) > 0; sealed == got.State.SendingDone() {
				t.Errorf("sealed kept = %v in state %s", sealed, got.State)
			}

			reqs := f.sender.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d sends, want 1", len(reqs))
			}
			// The validity period counts from the latest moment the provider can accept: the
			// end of the call, ProviderTimeout after it started.
			deadline := deadlineOf(req)
			want := sms.SendRequest{To: secretPhone, Body: "Reset your password: " + secretURL + " This link expires soon. If you did not ask for it, ignore this message.",
				AttemptRef: "n-k-a1", ValidityPeriod: deadline.Sub(t0.Add(f.settings.ProviderTimeout)).Truncate(time.Second)}
			if reqs[0] != want {
				t.Errorf("send request %v, want %v", reqs[0], want)
			}

			sched := f.sched.All()
			if tc.queue == "" {
				if len(sched) != 0 {
					t.Errorf("scheduled %+v, want nothing", sched)
				}
				return
			}
			if len(sched) != 1 || sched[0].Queue != tc.queue || sched[0].Message != notify.MessageOf(got) {
				t.Fatalf("scheduled %+v, want one message of v%d on %s", sched, got.Version, tc.queue)
			}
			if sched[0].Delay < tc.minDelay || !t0.Add(sched[0].Delay).Equal(got.NextActionAt) {
				t.Errorf("delay %s (next_action_at %s), want at least %s and equal to next_action_at", sched[0].Delay, got.NextActionAt, tc.minDelay)
			}
		})
	}
}

func TestValidityIsWholeSecondsLeft(t *testing.T) {
	f := newFixture(t)
	req := request("k", 10*time.Minute+700*time.Millisecond)
	rec := f.admit(t, req)
	f.clock.Advance(8*time.Minute + 30*time.Second)
	f.dispatch(t, notify.MessageOf(rec))
	// Deadline at t0+9m0.7s; the call at t0+8m30s may end (and the provider accept) up to
	// ProviderTimeout (10s) later, leaving 20.7s: 20s, rounded down.
	if got := f.sender.Requests()[0].ValidityPeriod; got != 20*time.Second {
		t.Errorf("validity %s, want 20s", got)
	}
}

// TestCallEndsMinValidityBeforeTheDeadline: with less than ProviderTimeout+MinValidity left,
// the call's context ends MinValidity before the deadline and the validity period is
// MinValidity, so whatever the provider accepts while the call lasts is accepted before the
// deadline and valid no longer than it.
func TestCallEndsMinValidityBeforeTheDeadline(t *testing.T) {
	f := newFixture(t)
	req := request("k", 10*time.Minute)
	rec := f.admit(t, req)
	deadline := deadlineOf(req)
	f.clock.Set(deadline.Add(-5 * time.Second))
	var callEnd time.Time
	f.sender.OnSend = func(ctx context.Context, _ int, _ sms.SendRequest) sms.Outcome {
		callEnd, _ = ctx.Deadline()
		return sms.Accepted("m-1")
	}
	f.dispatch(t, notify.MessageOf(rec))
	if want := deadline.Add(-f.settings.MinValidity); !callEnd.Equal(want) {
		t.Errorf("call ends at %s, want %s (MinValidity before the deadline)", callEnd, want)
	}
	if got := f.sender.Requests()[0].ValidityPeriod; got != f.settings.MinValidity {
		t.Errorf("validity %s, want %s", got, f.settings.MinValidity)
	}
}

func TestPoisonMessagesAreAcknowledged(t *testing.T) {
	f := newFixture(t)
	rec := f.admitKey(t, "k")
	bodies := map[string]string{
		"not JSON":              "SEND +447700900123 NOW",
		"empty object":          "{}",
		"no notification ID":    `{"idempotency_key":"k","version":1}`,
		"bad key":               `{"idempotency_key":"k k","notification_id":"n-k","version":1}`,
		"unknown key":           `{"idempotency_key":"missing","notification_id":"n-x","version":1}`,
		"notification mismatch": `{"idempotency_key":"k","notification_id":"n-older","version":1}`,
		"version zero":          `{"idempotency_key":"k","notification_id":"n-k","version":0}`,
	}
	var ev events.SQSEvent
	for name, body := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: name, Body: body})
	}
	for name, h := range map[string]workercore.BatchHandler{"dispatch": f.d.Handle, "reconcile": f.r.Handle} {
		resp, err := h(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Errorf("%s: %+v, %v; want every poison message acknowledged", name, resp, err)
		}
	}
	if f.sender.Calls() != 0 || len(f.sched.All()) != 0 {
		t.Errorf("poison caused work: %d sends, %d scheduled", f.sender.Calls(), len(f.sched.All()))
	}
	if got := f.get(t, "k"); got.Version != rec.Version {
		t.Errorf("record moved to v%d", got.Version)
	}
	metrics := f.metrics.String()
	for _, outcome := range []string{workercore.OutcomePoisonBody, workercore.OutcomePoisonKey, workercore.OutcomePoisonMismatch} {
		if !strings.Contains(metrics, `"Outcome":"`+outcome+`"`) {
			t.Errorf("no %s count in the metrics", outcome)
		}
	}
}

func TestBatchReportsOnlyFailedRecords(t *testing.T) {
	f := newFixture(t)
	good := f.admitKey(t, "good")
	failing := &failingGet{DueStore: f.store, key: "flaky"}
	f.d.Store = failing
	f.admitKey(t, "flaky")
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: body(notify.MessageOf(good))},
		{MessageId: "2", Body: `{"idempotency_key":"flaky","notification_id":"n-flaky","version":1}`},
		{MessageId: "3", Body: "garbage"},
	}}
	resp, err := f.d.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "2"}}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if got := f.get(t, "good"); got.State != notify.StateSent {
		t.Errorf("good record %s", got.State)
	}
}

// failingGet fails Get for one key, as a throttled DynamoDB would.
type failingGet struct {
	*workercoretest.DueStore
	key string
}

func (s *failingGet) Get(ctx context.Context, key string) (notify.Record, error) {
	if key == s.key {
		return notify.Record{}, errors.New("ProvisionedThroughputExceededException")
	}
	return s.DueStore.Get(ctx, key)
}

func body(m notify.Message) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestDuplicateAfterSentIsAcknowledged(t *testing.T) {
	f := newFixture(t)
	rec := f.admitKey(t, "k")
	m := notify.MessageOf(rec)
	f.dispatch(t, m)
	f.dispatch(t, m) // SQS delivered it twice, or intake replayed the request
	if f.sender.Calls() != 1 {
		t.Errorf("%d sends for one notification", f.sender.Calls())
	}
	if got := f.get(t, "k"); got.State != notify.StateSent || got.Version != 3 {
		t.Errorf("record %s v%d", got.State, got.Version)
	}
}

func TestStaleMessageForRetryNotDue(t *testing.T) {
	f := newFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.NotAccepted(sms.DetailThrottled, 2*time.Minute, nil)}
	rec := f.admitKey(t, "k")
	f.dispatch(t, notify.MessageOf(rec))
	retry := f.get(t, "k")
	if retry.State != notify.StateRetryScheduled || retry.Version != 3 {
		t.Fatalf("record %s v%d", retry.State, retry.Version)
	}
	f.sched.Take()
	f.clock.Advance(30 * time.Second)

	// The admission message again (v1): stale, and the retry is not due. Nothing happens.
	f.dispatch(t, notify.MessageOf(rec))
	if got := f.sched.Take(); len(got) != 0 {
		t.Errorf("stale message scheduled %+v", got)
	}
	// The retry's own message (v3) arriving early carries the schedule on.
	f.dispatch(t, notify.MessageOf(retry))
	got := f.sched.Take()
	want := []notifytest.Enqueued{{Queue: notify.DispatchQueue, Message: notify.MessageOf(retry), Delay: retry.NextActionAt.Sub(f.clock.Now()), At: retry.NextActionAt}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("re-schedule (-want +got):\n%s", diff)
	}
	if f.sender.Calls() != 1 {
		t.Errorf("%d sends before the retry was due", f.sender.Calls())
	}
	// Once due, even the stale message may take the lease: acting on it is safe.
	f.clock.Set(retry.NextActionAt)
	f.sender.Outcomes = nil
	f.dispatch(t, notify.MessageOf(rec))
	if got := f.get(t, "k"); got.State != notify.StateSent || got.Attempt != 2 {
		t.Errorf("record %s attempt %d", got.State, got.Attempt)
	}
}

func TestLeaseHeldIsADuplicate(t *testing.T) {
	f := newFixture(t)
	f.admitKey(t, "k")
	leased := f.lease(t, "k")
	f.clock.Advance(f.settings.Lease - time.Millisecond)
	f.dispatch(t, notify.MessageOf(leased))
	if f.sender.Calls() != 0 || len(f.sched.All()) != 0 {
		t.Errorf("a held lease was ignored: %d sends", f.sender.Calls())
	}
	if got := f.get(t, "k"); got.Version != leased.Version {
		t.Errorf("record moved to %s", got.State)
	}
}

// TestLeaseRunOut is the last row of the provider-outcome table: a worker died holding the
// lease. The record becomes dispatch_unknown / LEASE_EXPIRED and goes to reconciliation, never
// back to dispatch.
func TestLeaseRunOut(t *testing.T) {
	for _, via := range []string{"dispatch message", "sweeper"} {
		t.Run(via, func(t *testing.T) {
			f := newFixture(t)
			rec := f.admitKey(t, "k")
			leased := f.lease(t, "k")
			f.clock.Set(sweepableAt(leased).Add(f.settings.SweepGrace))
			if via == "sweeper" {
				rep := f.sweep(t)
				if rep.LeaseExpired != 1 {
					t.Errorf("report %+v", rep)
				}
			} else {
				f.dispatch(t, notify.MessageOf(rec)) // SQS redelivers the dead worker's message
			}
			got := f.get(t, "k")
			if diff := cmp.Diff(state{notify.StateDispatchUnknown, notify.ReasonLeaseExpired}, stateOf(got)); diff != "" {
				t.Fatalf("state (-want +got):\n%s", diff)
			}
			if f.sender.Calls() != 0 {
				t.Errorf("a lease that ran out led to %d sends", f.sender.Calls())
			}
			// The attempt could have been written until attempted_at + provider timeout; the
			// lookup waits the visibility window from then (or from now, if later).
			wantAt := f.clock.Now().Add(f.settings.Visibility)
			sched := f.sched.All()
			if len(sched) != 1 || sched[0].Queue != notify.ReconcileQueue || !sched[0].At.Equal(wantAt) || !got.NextActionAt.Equal(wantAt) {
				t.Errorf("scheduled %+v, next_action_at %s; want a reconcile at %s", sched, got.NextActionAt, wantAt)
			}
		})
	}
}

func TestBackoffHonoursRetryAfterAndIsDeterministic(t *testing.T) {
	delays := func(seed uint64, outcomes []sms.Outcome) []time.Duration {
		f := newFixture(t)
		f.settings.MaxAttempts = 5
		f.build(t)
		f.d.Random = rand.New(rand.NewPCG(seed, seed)).Float64
		f.sender.Outcomes = outcomes
		rec := f.admit(t, request("k", time.Hour))
		var out []time.Duration
		m := notify.MessageOf(rec)
		for range len(outcomes) {
			f.dispatch(t, m)
			s := f.sched.Take()
			if len(s) != 1 || s[0].Queue != notify.DispatchQueue {
				t.Fatalf("scheduled %+v", s)
			}
			out = append(out, s[0].Delay)
			f.clock.Set(s[0].At)
			m = s[0].Message
		}
		return out
	}
	throttled := func(ra time.Duration) sms.Outcome { return sms.NotAccepted(sms.DetailThrottled, ra, nil) }
	plain := []sms.Outcome{throttled(0), throttled(0), throttled(0), throttled(0)}
	a, b := delays(7, plain), delays(7, plain)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different delays:\n%s", diff)
	}
	base := testSettings().BackoffBase
	for i, d := range a {
		exp := base << i
		if d < exp/2 || d > exp {
			t.Errorf("attempt %d: delay %s outside [%s, %s]", i+1, d, exp/2, exp)
		}
	}
	if c := delays(8, plain); cmp.Equal(a, c) {
		t.Errorf("different seeds gave the same jitter %v", c)
	}
	ra := delays(7, []sms.Outcome{throttled(45 * time.Second), throttled(0)})
	if ra[0] != 45*time.Second || ra[1] > 2*base {
		t.Errorf("delays %v: want Retry-After (45s) first, then backoff", ra)
	}
}

func TestAttemptsExhausted(t *testing.T) {
	f := newFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.NotAccepted(sms.DetailUnavailable, 0, nil)}
	rec := f.admitKey(t, "k")
	f.sched.Take()
	f.dispatch(t, notify.MessageOf(rec))
	rounds := f.drain(t, 10)
	got := f.get(t, "k")
	if diff := cmp.Diff(state{notify.StateFailed, notify.ReasonAttemptsExhausted}, stateOf(got)); diff != "" {
		t.Fatalf("state (-want +got):\n%s", diff)
	}
	if got.Attempt != f.settings.MaxAttempts || f.sender.Calls() != f.settings.MaxAttempts || rounds != f.settings.MaxAttempts-1 {
		t.Errorf("attempt %d, %d sends, %d rounds; want %d attempts", got.Attempt, f.sender.Calls(), rounds, f.settings.MaxAttempts)
	}
	if len(got.Sealed) != 0 || !got.NextActionAt.IsZero() {
		t.Errorf("failed record keeps sealed=%d next_action_at=%s", len(got.Sealed), got.NextActionAt)
	}
	var refs []string
	for _, r := range f.sender.Requests() {
		refs = append(refs, r.AttemptRef)
	}
	if diff := cmp.Diff([]string{"n-k-a1", "n-k-a2", "n-k-a3"}, refs); diff != "" {
		t.Errorf("attempt refs (-want +got):\n%s", diff)
	}
}

func TestScheduleFailureIsLeftToTheSweeper(t *testing.T) {
	f := newFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.Unknown(sms.DetailTimeout, context.DeadlineExceeded)}
	f.sched.Err = errors.New("sqs unavailable")
	rec := f.admitKey(t, "k")
	f.dispatch(t, notify.MessageOf(rec)) // acknowledged although scheduling failed
	got := f.get(t, "k")
	if got.State != notify.StateDispatchUnknown || !strings.Contains(f.metrics.String(), workercore.MetricScheduleFailures) {
		t.Fatalf("record %s; schedule failure not counted", got.State)
	}
	f.sched.Err = nil
	f.clock.Set(got.NextActionAt.Add(f.settings.SweepGrace))
	if rep := f.sweep(t); rep.Reconciles != 1 {
		t.Fatalf("sweeper report %+v, want the record handed to reconciliation", rep)
	}
}

// unrecordingStore refuses the write after the provider call, as if the worker lost
// DynamoDB at that moment.
type unrecordingStore struct {
	*workercoretest.DueStore
}

func (s *unrecordingStore) Transition(ctx context.Context, prev, next notify.Record) error {
	if prev.State == notify.StateDispatching {
		return errors.New("RequestLimitExceeded")
	}
	return s.DueStore.Transition(ctx, prev, next)
}

// TestOutcomeNotRecordedNeverResends: the provider accepted, the outcome write failed. The
// record stays dispatching until the lease runs out, then reconciliation finds the attempt
// and records it as sent; nothing is sent again.
func TestOutcomeNotRecordedNeverResends(t *testing.T) {
	f := newFixture(t)
	f.d.Store = &unrecordingStore{f.store}
	rec := f.admitKey(t, "k")
	f.dispatch(t, notify.MessageOf(rec))
	got := f.get(t, "k")
	if got.State != notify.StateDispatching || !strings.Contains(f.metrics.String(), workercore.MetricUnrecorded) {
		t.Fatalf("record %s, want dispatching with the outcome counted as not recorded", got.State)
	}
	f.dispatch(t, notify.MessageOf(rec)) // redelivered while the lease is held
	f.clock.Set(sweepableAt(got).Add(f.settings.SweepGrace))
	f.sweep(t)
	f.dispatch(t, notify.MessageOf(rec)) // and again after: dispatch_unknown belongs to reconcile
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.Found("m-1", sms.ReceiptNone, time.Time{})}}
	f.drain(t, 5)
	got = f.get(t, "k")
	if diff := cmp.Diff(state{notify.StateSent, notify.ReasonReconciledAccepted}, stateOf(got)); diff != "" {
		t.Fatalf("state (-want +got):\n%s", diff)
	}
	if f.sender.Calls() != 1 || got.ProviderMessageID != "m-1" {
		t.Errorf("%d sends, message ID %q", f.sender.Calls(), got.ProviderMessageID)
	}
}

func TestUnrenderableMessageIsNotLeased(t *testing.T) {
	f := newFixture(t)
	req := request("k", 10*time.Minute)
	req.Params = map[string]string{notify.ParamResetURL: "https://shop.example/r/" + strings.Repeat("S", notify.MaxURLLen-30)}
	rec := f.admit(t, req)
	f.dispatch(t, notify.MessageOf(rec))
	if got := f.get(t, "k"); got.Version != 1 || f.sender.Calls() != 0 {
		t.Fatalf("record %s v%d after %d sends", got.State, got.Version, f.sender.Calls())
	}
	if strings.Contains(f.logs.String(), "SSSSSSSSSS") {
		t.Error("the param reached the logs")
	}
	// The sweeper keeps bringing it back; at the deadline it expires, never sent.
	f.clock.Set(deadlineOf(req))
	f.sweep(t)
	if got := f.get(t, "k"); got.State != notify.StateExpired || got.Reason != notify.ReasonExpiredBeforeDispatch {
		t.Errorf("record %s/%s", got.State, got.Reason)
	}
}

func TestOpenFailureIsRetried(t *testing.T) {
	f := newFixture(t)
	rec := f.admitKey(t, "k")
	f.d.Opener = failingOpener{}
	if err := f.d.Dispatch(context.Background(), notify.MessageOf(rec)); err == nil {
		t.Fatal("a sealing failure was acknowledged")
	}
	if got := f.get(t, "k"); got.Version != 1 {
		t.Errorf("record moved to %s", got.State)
	}
}

type failingOpener struct{}

func (failingOpener) Open(context.Context, string, []byte) (notify.Secret, error) {
	return notify.Secret{}, errors.New("kms: throttled")
}

func TestNoAttemptWithoutTimeForIt(t *testing.T) {
	f := newFixture(t)
	rec := f.admitKey(t, "k")
	ctx, cancel := context.WithTimeout(context.Background(), f.settings.ProviderTimeout)
	defer cancel()
	if err := f.d.Dispatch(ctx, notify.MessageOf(rec)); err == nil {
		t.Fatal("an attempt was started with less time left than it may need")
	}
	if got := f.get(t, "k"); got.Version != 1 || f.sender.Calls() != 0 {
		t.Errorf("record %s v%d after %d sends", got.State, got.Version, f.sender.Calls())
	}
}

// TestMessageForARefusedRecordIsANoOp: a dispatch message that names a record the guard
// refused (none should ever be sent, but the first version's message could be) sends nothing,
// changes nothing, and the sweeper finds nothing due.
func TestMessageForARefusedRecordIsANoOp(t *testing.T) {
	f := newFixture(t)
	rec := f.admitKey(t, "k")
	refused, err := rec.Refuse(&notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: time.Minute}, f.clock.Now(), f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(context.Background(), rec, refused); err != nil {
		t.Fatal(err)
	}
	f.dispatch(t, notify.MessageOf(rec))
	f.dispatch(t, notify.MessageOf(refused))
	f.clock.Advance(time.Hour)
	if rep := f.sweep(t); rep.Seen != 0 {
		t.Errorf("sweep found a refused record due: %+v", rep)
	}
	if got := f.get(t, "k"); f.sender.Calls() != 0 || got.State != notify.StateRefused || got.Version != 2 || got.Sealed != nil {
		t.Errorf("%d sends; record %s v%d; want no send and the refusal untouched, without its sealed payload", f.sender.Calls(), got.State, got.Version)
	}
}
