package workerfaults_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// matrixEvent is one event of the fault matrix.
type matrixEvent struct {
	key, to string
	// deadlineIn is how long after its arrival the event's dispatch deadline falls; negative
	// for an event that arrives late.
	deadlineIn time.Duration
	late       bool
}

// body returns the event's request body, its expiry counted from now.
func (e matrixEvent) body(margin time.Duration) string {
	return fmt.Sprintf(`{"event_id":"evt-%s","channel":"sms","purpose":"password_reset","to":"%s","locale":"en","params":{"code":"%s"},"expires_at":"%s"}`,
		e.key, e.to, code, time.Now().UTC().Add(e.deadlineIn+margin).Format(time.RFC3339Nano))
}

// TestFaultMatrix submits 200 events, each three times at once through the HTTP handler,
// while the workers run against a simulator that answers with the seeded fault mix
// (each event has its own number, so the simulator's log and inbox per number are the event's).
// Dispatch deadlines are spread: a few events arrive after theirs, a fifth have 2 to 6 s, so
// theirs pass while they are dispatched, retried or reconciled, and the rest have 40 to 90 s.
// The workers (two dispatch pollers and one reconcile poller, each batch handled ten at a
// time, and the sweeper every two seconds) run until no record is due any more and both queues
// are empty. Then, for every event:
//
//   - exactly one submission was admitted (202) and two were replays (200);
//   - the simulator accepted at most one message for its number, before the record's dispatch
//     deadline and valid no longer than it;
//   - the record is done sending, and it is sent exactly when the simulator accepted a
//     message, holding that message's ID and attempt reference;
//   - no attempt reference reached the provider twice, attempts reached it in order, and
//     nothing was sent after an attempt the provider had recorded: a new attempt only ever
//     follows one known not to be accepted;
//   - the final state and reason match what the simulator did: PROVIDER_ACCEPTED only after
//     a 201, RECONCILED_ACCEPTED when the message was recorded but its answer lost (a drop, a
//     hang, a 500, or a 201 the worker had stopped waiting for); PROVIDER_REJECTED only after
//     a 400, and a 400 the worker read ends the record; ATTEMPTS_EXHAUSTED only after the last
//     attempt was refused with 429 or 503; otherwise expired: EXPIRED_AT_ADMISSION exactly for
//     the late events, EXPIRED_UNRESOLVED only after an unknown outcome.
//
// The test never asserts how fast any of this goes.
func TestFaultMatrix(t *testing.T) {
	const events = 200
	policy := notify.DefaultPolicy()
	policy.SafetyMargin = 2 * time.Second
	// An accepted record is the sweeper's after 30 s (its deadline, if sooner): the intake's
	// messages are still queued behind the backlog before that, and re-enqueueing a record on
	// every sweep while its message waits would only add to the backlog.
	policy.SweepAfter = 30 * time.Second
	st := stacktest.NewStack(t, stacktest.StackOptions{
		Sim: smssim.Config{
			Seed: 20261101, Mix: smssim.FaultMix, RetryAfter: time.Second,
			Visibility: time.Second, DeliveryDelay: time.Hour,
		},
		SMSTimeout: 400 * time.Millisecond,
		Visibility: time.Second,
		Policy:     &policy,
		Worker: &config.Worker{
			Lease: 6 * time.Second, MinValidity: time.Second,
			BackoffBase: 200 * time.Millisecond, BackoffMax: 2 * time.Second,
		},
	})
	// The sweeper runs every two seconds here (every minute in AWS) and, as in AWS, leaves alone
	// what is only a little overdue: a delayed message is about to arrive for it.
	st.Sweeper.Settings.SweepGrace = 10 * time.Second
	maxAttempts := st.Dispatcher.Settings.MaxAttempts
	h := intake.New(st.Intake, slog.New(slog.DiscardHandler), &obs.Metrics{W: io.Discard, Function: "intake"})

	// The workers start first: admissions and dispatch overlap, as they do in AWS.
	workers := startCrew(st, crewOptions{Dispatchers: 2, Reconcilers: 1, SweepEvery: 2 * time.Second, Visibility: 20 * time.Second})
	defer func() {
		if err := workers.stop(); err != nil {
			t.Errorf("workers: %v", err)
		}
	}()

	evs := make([]matrixEvent, events)
	for i := range evs {
		e := matrixEvent{key: fmt.Sprintf("matrix-%03d", i), to: fmt.Sprintf("+1555%07d", 3000000+i)}
		// Every fifth event has a deadline 2 to 6 s after it arrives, so that it passes while
		// the event is being dispatched or retried; every 50th arrives after its deadline; the
		// rest have 40 to 90 s, enough to be dispatched behind the backlog the submissions build
		// up in the emulators.
		switch {
		case i%50 == 0:
			e.late, e.deadlineIn = true, -3*time.Second
		case i%5 == 0:
			e.deadlineIn = 2*time.Second + time.Duration(i%9)*500*time.Millisecond
		default:
			e.deadlineIn = 40*time.Second + time.Duration(i%11)*5*time.Second
		}
		evs[i] = e
	}
	started := time.Now()
	statuses := submitThrice(t, h, evs, policy.SafetyMargin)
	t.Logf("%d submissions took %s", 3*len(evs), time.Since(started).Round(time.Millisecond))
	for i, e := range evs {
		if got := statuses[i]; !slices.Equal(got, []int{http.StatusOK, http.StatusOK, http.StatusAccepted}) {
			t.Errorf("%s: submissions answered %v, want one 202 and two 200", e.key, got)
		}
	}

	// Run until every record is done sending and both queues are empty. A record that is not
	// done carries next_action_at, so the sparse due index (one query per shard) says cheaply
	// whether anything is left; reading all 200 records on every poll would load DynamoDB Local
	// more than the workers do.
	ctx := context.Background()
	waitFor(t, 4*time.Minute, time.Second, "fault matrix", func() bool {
		far := time.Now().Add(time.Hour)
		for shard := range tables.DueShards {
			if due, err := st.Store.QueryDue(ctx, shard, far, 1); err != nil || len(due) > 0 {
				return false
			}
		}
		for _, q := range []string{st.DispatchURL, st.ReconcileURL} {
			if empty, err := pump.Empty(ctx, st.SQS, q); err != nil || !empty {
				return false
			}
		}
		return true
	})
	if err := workers.stop(); err != nil {
		t.Errorf("workers: %v", err)
	}

	all := st.Sim.Requests()
	tally := map[string]int{}
	for _, e := range evs {
		rec := st.Get(t, e.key)
		tally[string(rec.State)+"/"+string(rec.Reason)]++
		path := st.Transitions(e.key)
		if problems := checkEvent(e, rec, requestsTo(all, e.to), st.Sim.Accepted(e.to), path, maxAttempts); len(problems) > 0 {
			t.Errorf("%s: %s\n  attempts %v\n  path %v", e.key, strings.Join(problems, "; "), modes(requestsTo(all, e.to)), path)
		}
	}
	seen := map[string]int{}
	for _, r := range all {
		seen[r.Mode]++
	}
	for _, w := range smssim.FaultMix {
		if seen[string(w.Mode)] == 0 {
			t.Errorf("no request met mode %s; the mix is not in force", w.Mode)
		}
	}
	if tally["expired/"+string(notify.ReasonExpiredBeforeDispatch)] == 0 {
		t.Error("no dispatch deadline passed during the run")
	}
	t.Logf("%d send requests, by mode %v", len(all), seen)
	t.Logf("final states %v", sortedTally(tally))
	noSecrets(t, st)
}

// submitThrice posts each event's body three times at once through h, a few events at a time,
// and returns each event's statuses, sorted.
func submitThrice(t *testing.T, h *intake.Handler, evs []matrixEvent, margin time.Duration) [][]int {
	t.Helper()
	statuses := make([][]int, len(evs))
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sem = make(chan struct{}, 8)
	)
	for i, e := range evs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ev := submitEvent(e.key, e.body(margin))
			start := make(chan struct{})
			var inner sync.WaitGroup
			got := make([]int, 3)
			for j := range got {
				inner.Add(1)
				go func() {
					defer inner.Done()
					<-start
					resp, err := h.Handle(context.Background(), ev)
					if err != nil {
						t.Errorf("%s: %v", e.key, err)
						return
					}
					got[j] = resp.StatusCode
				}()
			}
			close(start)
			inner.Wait()
			sort.Ints(got)
			mu.Lock()
			statuses[i] = got
			mu.Unlock()
		}()
	}
	wg.Wait()
	return statuses
}

// submitEvent is the API Gateway event of a POST of body under key.
func submitEvent(key, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		RouteKey: intake.RouteSubmit, RawPath: intake.CollectionPath, Body: body,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": key},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-" + key, RouteKey: intake.RouteSubmit, Authorizer: localapi.Caller(localapi.LocalCallerRole),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: intake.CollectionPath},
		},
	}
}

// checkEvent returns what is wrong with one event's outcome, given the send requests to its
// number (in arrival order), the messages the simulator accepted for it and the transitions
// the workers logged for it.
func checkEvent(e matrixEvent, rec notify.Record, reqs []simapi.RequestEntry, inbox []smssim.Message, path []stacktest.Step, maxAttempts int) []string {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	if !rec.State.SendingDone() {
		bad("not done: %s/%s", rec.State, rec.Reason)
	}
	if len(inbox) > 1 {
		bad("%d messages accepted for one event", len(inbox))
	}
	// An answer can reach the provider's log and still be lost to a worker that gave up first
	// (the provider timeout is 400 ms, and the emulators are slow under -race), or whose lease
	// ran out before it wrote the outcome; the record then went through dispatch_unknown and
	// reconciliation decided. Only an answer the worker read and recorded can explain a
	// PROVIDER_ACCEPTED or PROVIDER_REJECTED.
	timedOut := slices.ContainsFunc(path, func(s stacktest.Step) bool {
		return s.State == notify.StateDispatchUnknown && (s.Reason == notify.ReasonProviderTimeout || s.Reason == notify.ReasonLeaseExpired)
	})
	for _, m := range inbox {
		if !m.AcceptedAt.Before(rec.DispatchDeadline) {
			bad("accepted at %s, at or after the dispatch deadline %s", m.AcceptedAt.Format(time.RFC3339Nano), rec.DispatchDeadline.Format(time.RFC3339Nano))
		}
		// The validity period counts from the end of the call, so a message accepted while the
		// worker waited is valid no longer than the deadline. A request the provider only got
		// to after the worker had given up (a starved emulator host) is accepted later than
		// that, which no client can prevent; the test then accepts an overshoot as long as the
		// acceptance itself came before the deadline.
		if m.ValidUntil().After(rec.DispatchDeadline) && !timedOut {
			bad("valid until %s, after the dispatch deadline %s", m.ValidUntil().Format(time.RFC3339Nano), rec.DispatchDeadline.Format(time.RFC3339Nano))
		}
	}

	// Each attempt reaches the provider at most once, in order, and nothing follows an attempt
	// the provider recorded.
	last := 0
	for i, r := range reqs {
		n := attemptOf(r.ClientRef, rec.NotificationID)
		if n <= last || n > rec.Attempt {
			bad("request %d carries %q after attempt %d (record at attempt %d)", i, r.ClientRef, last, rec.Attempt)
		}
		last = n
		if r.Recorded && i != len(reqs)-1 {
			bad("attempt %d was recorded by the provider, yet another attempt followed", n)
		}
	}

	var final simapi.RequestEntry
	if len(reqs) > 0 {
		final = reqs[len(reqs)-1]
	}

	sent := rec.State == notify.StateSent || rec.State == notify.StateDelivered || rec.State == notify.StateUndelivered
	if sent != (len(inbox) == 1) {
		bad("state %s/%s but %d messages accepted", rec.State, rec.Reason, len(inbox))
		return p
	}
	if sent {
		m := inbox[0]
		if m.MessageID != rec.ProviderMessageID || m.ClientRef != sms.AttemptRef(rec.NotificationID, rec.Attempt) {
			bad("accepted %s as %s, record holds %s at attempt %d", m.ClientRef, m.MessageID, rec.ProviderMessageID, rec.Attempt)
		}
		switch {
		case rec.State != notify.StateSent:
			bad("state %s/%s, want sent (no receipt is due within the run)", rec.State, rec.Reason)
		case rec.Reason == notify.ReasonProviderAccepted && final.HTTPStatus != http.StatusCreated:
			bad("PROVIDER_ACCEPTED, but the provider answered %d", final.HTTPStatus)
		case rec.Reason == notify.ReasonReconciledAccepted && final.HTTPStatus == http.StatusCreated && !timedOut:
			bad("RECONCILED_ACCEPTED, but the provider answered 201 and the worker neither timed out nor lost its lease")
		case rec.Reason != notify.ReasonProviderAccepted && rec.Reason != notify.ReasonReconciledAccepted:
			bad("sent with reason %s", rec.Reason)
		}
		return p
	}

	if rejected := slices.IndexFunc(reqs, func(r simapi.RequestEntry) bool { return r.HTTPStatus == http.StatusBadRequest }); rejected >= 0 &&
		(rejected != len(reqs)-1 || rec.Reason != notify.ReasonProviderRejected) && !timedOut {
		bad("the provider rejected attempt %d, yet the record went on to %s/%s", rejected+1, rec.State, rec.Reason)
	}
	switch {
	case rec.State == notify.StateFailed && rec.Reason == notify.ReasonProviderRejected:
		if final.HTTPStatus != http.StatusBadRequest {
			bad("PROVIDER_REJECTED, but the last answer was %d", final.HTTPStatus)
		}
	case rec.State == notify.StateFailed && rec.Reason == notify.ReasonAttemptsExhausted:
		if rec.Attempt != maxAttempts || (final.HTTPStatus != http.StatusTooManyRequests && final.HTTPStatus != http.StatusServiceUnavailable) {
			bad("ATTEMPTS_EXHAUSTED at attempt %d after a %d, want attempt %d refused with 429 or 503", rec.Attempt, final.HTTPStatus, maxAttempts)
		}
	case rec.State == notify.StateExpired && rec.Reason == notify.ReasonExpiredAtAdmission:
		if !e.late || len(reqs) > 0 {
			bad("expired at admission, but late=%v with %d sends", e.late, len(reqs))
		}
	case rec.State == notify.StateExpired && rec.Reason == notify.ReasonExpiredBeforeDispatch:
		if e.late {
			bad("a late event was admitted as accepted")
		}
	case rec.State == notify.StateExpired && rec.Reason == notify.ReasonExpiredUnresolved:
		// Honest only after an attempt whose outcome the worker did not learn.
		if !slices.ContainsFunc(path, func(s stacktest.Step) bool { return s.State == notify.StateDispatchUnknown }) {
			bad("expired unresolved without an unknown outcome")
		}
	default:
		bad("final state %s/%s with nothing accepted", rec.State, rec.Reason)
	}
	return p
}

// attemptOf returns the attempt number in ref if it is an attempt reference of notificationID,
// else 0.
func attemptOf(ref, notificationID string) int {
	id, n, ok := sms.ParseAttemptRef(ref)
	if !ok || id != notificationID {
		return 0
	}
	return n
}

func sortedTally(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
