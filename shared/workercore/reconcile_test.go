package workercore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/reconcile"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// unknownRecord admits a record for key and takes it through one attempt whose outcome was a
// timeout, so it is dispatch_unknown and due for reconciliation at next_action_at. The clock
// is left there.
func (f *fixture) unknownRecord(t *testing.T, req notify.Request) notify.Record {
	t.Helper()
	f.sender.Outcomes = []sms.Outcome{sms.Unknown(sms.DetailTimeout, errors.New("timeout"))}
	rec := f.admit(t, req)
	f.dispatch(t, notify.MessageOf(rec))
	got := f.get(t, req.IdempotencyKey)
	if got.State != notify.StateDispatchUnknown {
		t.Fatalf("setup: record %s", got.State)
	}
	f.sched.Take()
	f.clock.Set(got.NextActionAt)
	return got
}

func TestReconcile(t *testing.T) {
	found := sms.Found("pm-9", sms.ReceiptNone, time.Time{})
	notFound := sms.LookupResult{Status: sms.LookupNotFound}
	tests := []struct {
		name     string
		answer   workercoretest.Answer
		at       func(deadline time.Time) time.Time // when the lookup runs; nil: when due
		count    int                                // reconcile_count before
		attempt  int                                // attempts made before (default 1)
		want     state
		queue    notify.QueueName
		delay    time.Duration // expected delay when queue is set; -1: any positive
		noLookup bool
	}{
		{name: "found", answer: workercoretest.Answer{Result: found},
			want: state{notify.StateSent, notify.ReasonReconciledAccepted}},
		{name: "found with a delivery receipt", answer: workercoretest.Answer{Result: sms.Found("pm-9", sms.ReceiptDelivered, t0)},
			want: state{notify.StateDelivered, notify.ReasonReceiptDelivered}},
		{name: "found with a failure receipt", answer: workercoretest.Answer{Result: sms.Found("pm-9", sms.ReceiptUndelivered, t0)},
			want: state{notify.StateUndelivered, notify.ReasonReceiptFailed}},
		{name: "not found, deadline allows", answer: workercoretest.Answer{Result: notFound},
			want: state{notify.StateRetryScheduled, notify.ReasonReconciledNotFound}, queue: notify.DispatchQueue, delay: 0},
		{name: "not found after the deadline", answer: workercoretest.Answer{Result: notFound}, at: func(d time.Time) time.Time { return d },
			want: state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}},
		{name: "not found, no attempt left", answer: workercoretest.Answer{Result: notFound}, attempt: 3,
			want: state{notify.StateRetryScheduled, notify.ReasonReconciledNotFound}},
		{name: "inconclusive", answer: workercoretest.Answer{Result: sms.Inconclusive("provider_error")},
			want: state{notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive}, queue: notify.ReconcileQueue, delay: -1},
		{name: "lookup error is inconclusive", answer: workercoretest.Answer{Err: errors.New("502 from lookup")},
			want: state{notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive}, queue: notify.ReconcileQueue, delay: -1},
		{name: "inconclusive at the bound stops scheduling", answer: workercoretest.Answer{Result: sms.Inconclusive("provider_error")}, count: 2,
			want: state{notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive}},
		{name: "inconclusive after the deadline", answer: workercoretest.Answer{Result: sms.Inconclusive("provider_error")},
			at:   func(d time.Time) time.Time { return d.Add(time.Hour) },
			want: state{notify.StateExpired, notify.ReasonExpiredUnresolved}},
		{name: "found after the deadline is still sent", answer: workercoretest.Answer{Result: found},
			at:   func(d time.Time) time.Time { return d.Add(time.Hour) },
			want: state{notify.StateSent, notify.ReasonReconciledAccepted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			req := request("k", 10*time.Minute)
			rec := f.unknownRecord(t, req)
			if tc.attempt > 1 || tc.count > 0 {
				rec.Attempt = max(tc.attempt, 1)
				rec.ReconcileCount = tc.count
				f.put(t, rec)
				rec = f.get(t, "k")
			}
			if tc.at != nil {
				f.clock.Set(tc.at(deadlineOf(req)))
			}
			f.lookup.Answers = []workercoretest.Answer{tc.answer}
			f.reconcile(t, notify.MessageOf(rec))

			got := f.get(t, "k")
			if diff := cmp.Diff(tc.want, stateOf(got)); diff != "" {
				t.Fatalf("state (-want +got):\n%s", diff)
			}
			lookups := f.lookup.Requests()
			wantLookup := sms.LookupRequest{AttemptRef: sms.AttemptRef("n-k", rec.Attempt), AttemptedAt: rec.AttemptedAt.Add(f.settings.ProviderTimeout)}
			if len(lookups) != 1 || lookups[0] != wantLookup {
				t.Errorf("lookups %+v, want %+v", lookups, wantLookup)
			}
			if f.sender.Calls() != 1 {
				t.Errorf("%d sends: reconciliation sent", f.sender.Calls())
			}
			if got.State == notify.StateSent || got.State == notify.StateDelivered || got.State == notify.StateUndelivered {
				if got.ProviderMessageID != "pm-9" || len(got.Sealed) != 0 {
					t.Errorf("message ID %q, sealed %d bytes", got.ProviderMessageID, len(got.Sealed))
				}
			}
			if tc.name == "inconclusive at the bound stops scheduling" || tc.name == "not found, no attempt left" {
				if !got.NextActionAt.Equal(deadlineOf(req)) {
					t.Errorf("next_action_at %s, want the deadline (for the sweeper)", got.NextActionAt)
				}
			}
			sched := f.sched.Take()
			if tc.queue == "" {
				if len(sched) != 0 {
					t.Errorf("scheduled %+v, want nothing", sched)
				}
				return
			}
			if len(sched) != 1 || sched[0].Queue != tc.queue || sched[0].Message != notify.MessageOf(got) {
				t.Fatalf("scheduled %+v, want v%d on %s", sched, got.Version, tc.queue)
			}
			if tc.delay >= 0 && sched[0].Delay != tc.delay || tc.delay < 0 && sched[0].Delay <= 0 {
				t.Errorf("delay %s, want %s", sched[0].Delay, tc.delay)
			}
		})
	}
}

// TestReconcileNotFoundThenSendsAgain follows "not found" through to the next attempt, which
// carries the next attempt reference.
func TestReconcileNotFoundThenSendsAgain(t *testing.T) {
	f := newFixture(t)
	rec := f.unknownRecord(t, request("k", 10*time.Minute))
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.LookupResult{Status: sms.LookupNotFound}}}
	f.sender.Outcomes = nil
	f.reconcile(t, notify.MessageOf(rec))
	f.drain(t, 3)
	got := f.get(t, "k")
	if got.State != notify.StateSent || got.Attempt != 2 {
		t.Fatalf("record %s attempt %d", got.State, got.Attempt)
	}
	reqs := f.sender.Requests()
	if len(reqs) != 2 || reqs[1].AttemptRef != "n-k-a2" {
		t.Errorf("sends %v", reqs)
	}
}

func TestReconcileInconclusiveIsBounded(t *testing.T) {
	f := newFixture(t)
	req := request("k", 30*time.Minute)
	rec := f.unknownRecord(t, req)
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.Inconclusive("provider_error")}}
	f.reconcile(t, notify.MessageOf(rec))
	f.drain(t, 10)
	got := f.get(t, "k")
	if got.State != notify.StateDispatchUnknown || got.ReconcileCount != f.settings.MaxReconciles {
		t.Fatalf("record %s after %d rounds", got.State, got.ReconcileCount)
	}
	if n := len(f.lookup.Requests()); n != f.settings.MaxReconciles {
		t.Errorf("%d lookups, want %d", n, f.settings.MaxReconciles)
	}
	// The sweeper brings it back at the deadline for a last lookup, still inconclusive.
	f.clock.Set(deadlineOf(req).Add(f.settings.SweepGrace))
	if rep := f.sweep(t); rep.Reconciles != 1 {
		t.Fatalf("sweep %+v", rep)
	}
	f.drain(t, 3)
	if diff := cmp.Diff(state{notify.StateExpired, notify.ReasonExpiredUnresolved}, stateOf(f.get(t, "k"))); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if f.sender.Calls() != 1 {
		t.Errorf("%d sends", f.sender.Calls())
	}
}

// receiptBook is an sms.ReceiptReader over a map from attempt reference to receipt.
type receiptBook map[string]sms.Receipt

func (b receiptBook) FindByAttemptRef(_ context.Context, ref string) (sms.Receipt, bool, error) {
	rc, ok := b[ref]
	return rc, ok, nil
}

// TestReceiptLookupNeverAuthorisesAResend reconciles through the receipt-based lookup that a
// provider without a lookup API (AWS End User Messaging SMS) uses. Its delivery events can be
// dropped or late, so a missing receipt must never count as "not found": the record is either
// proven sent by a receipt, or expires as unresolved at its deadline, with one send only.
func TestReceiptLookupNeverAuthorisesAResend(t *testing.T) {
	tests := []struct {
		name     string
		receipts receiptBook
		want     state
	}{
		{"no receipt ever", receiptBook{}, state{notify.StateExpired, notify.ReasonExpiredUnresolved}},
		{"receipt recorded", receiptBook{"n-k-a1": {AttemptRef: "n-k-a1", MessageID: "aws-1"}}, state{notify.StateSent, notify.ReasonReconciledAccepted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.r.Lookup = sms.OnlyLookup(sms.NewReceiptLookup(tc.receipts, f.settings.Visibility, f.clock))
			req := request("k", 10*time.Minute)
			rec := f.unknownRecord(t, req)
			f.reconcile(t, notify.MessageOf(rec))
			f.drain(t, 10)
			f.clock.Set(deadlineOf(req).Add(f.settings.SweepGrace))
			f.sweep(t)
			f.drain(t, 3)
			if diff := cmp.Diff(tc.want, stateOf(f.get(t, "k"))); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if f.sender.Calls() != 1 {
				t.Errorf("%d sends, want the first attempt only", f.sender.Calls())
			}
		})
	}
}

// TestReconcileWaitsForVisibilityPastTheDeadline: an attempt timed out just before the
// deadline. Past the deadline, a lookup before the visibility window has passed is not
// conclusive; the record is not closed as unresolved until the window has passed, and a late
// "found" still records it as sent.
func TestReconcileWaitsForVisibilityPastTheDeadline(t *testing.T) {
	f := newFixture(t)
	req := request("k", 10*time.Minute)
	deadline := deadlineOf(req)
	f.clock.Set(deadline.Add(-5 * time.Second))
	rec := f.unknownRecord(t, req)
	if !rec.NextActionAt.Equal(deadline) {
		t.Fatalf("next_action_at %s, want capped at the deadline %s", rec.NextActionAt, deadline)
	}
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.Inconclusive("not_visible_yet")}, {Result: sms.Found("pm-late", sms.ReceiptNone, time.Time{})}}
	f.reconcile(t, notify.MessageOf(rec))
	if got := f.get(t, "k"); got.Version != rec.Version {
		t.Fatalf("record moved to %s before the window passed", got.State)
	}
	sched := f.sched.Take()
	visible := rec.AttemptedAt.Add(f.settings.ProviderTimeout + f.settings.Visibility)
	if len(sched) != 1 || !sched[0].At.Equal(visible) {
		t.Fatalf("scheduled %+v, want a reconcile at %s", sched, visible)
	}
	f.clock.Set(visible)
	f.reconcile(t, sched[0].Message)
	if got := f.get(t, "k"); got.State != notify.StateSent || got.ProviderMessageID != "pm-late" {
		t.Errorf("record %s %q", got.State, got.ProviderMessageID)
	}
}

func TestReconcileEarlyOrOtherStates(t *testing.T) {
	f := newFixture(t)
	req := request("k", 10*time.Minute)
	rec := f.unknownRecord(t, req)
	f.clock.Set(rec.NextActionAt.Add(-10 * time.Second))

	f.reconcile(t, notify.MessageOf(rec)) // early, current version: re-scheduled, no lookup
	sched := f.sched.Take()
	if len(sched) != 1 || sched[0].Delay != 10*time.Second || sched[0].Queue != notify.ReconcileQueue {
		t.Errorf("early message scheduled %+v", sched)
	}
	old := notify.MessageOf(rec)
	old.Version = 1
	f.reconcile(t, old) // early and stale: dropped
	if sched := f.sched.Take(); len(sched) != 0 {
		t.Errorf("stale message scheduled %+v", sched)
	}
	if n := len(f.lookup.Requests()); n != 0 {
		t.Errorf("%d lookups before the record was due", n)
	}

	other := f.admitKey(t, "accepted")
	f.reconcile(t, notify.MessageOf(other)) // not dispatch_unknown: acknowledged
	if n := len(f.lookup.Requests()); n != 0 || f.get(t, "accepted").Version != 1 {
		t.Errorf("reconciled an accepted record (%d lookups)", n)
	}
}

func TestReconcileProviderChanged(t *testing.T) {
	f := newFixture(t)
	rec := f.unknownRecord(t, request("k", 10*time.Minute))
	f.r.Provider = "another-provider"
	f.reconcile(t, notify.MessageOf(rec))
	if n := len(f.lookup.Requests()); n != 0 {
		t.Errorf("looked up an attempt made through another provider")
	}
	if got := f.get(t, "k"); got.Reason != notify.ReasonReconcileInconclusive {
		t.Errorf("reason %s", got.Reason)
	}
}

// sendProbe has a Send method. Embedded beside Reconciler at the same depth it would make
// probe.Send ambiguous, a compile error, if Reconciler ever gained a Send method.
type sendProbe struct{}

func (sendProbe) Send() {}

type probe struct {
	reconcile.Reconciler
	sendProbe
}

var _ = probe{}.Send

// TestReconcilerCannotSend walks every field of Reconciler, and the fields of those, and
// checks that no static type reachable from it has a Send method: it holds a lookup that can
// only look up, never an sms.Sender.
func TestReconcilerCannotSend(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		if _, ok := typ.MethodByName("Send"); ok {
			t.Errorf("%s (%s) has a Send method", path, typ)
		}
		if typ.Kind() != reflect.Interface && typ.Kind() != reflect.Pointer {
			if _, ok := reflect.PointerTo(typ).MethodByName("Send"); ok {
				t.Errorf("*%s (%s) has a Send method", path, typ)
			}
		}
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(path+"[]", typ.Elem())
		case reflect.Map:
			walk(path+"[key]", typ.Key())
			walk(path+"[]", typ.Elem())
		case reflect.Struct:
			for i := range typ.NumField() {
				walk(path+"."+typ.Field(i).Name, typ.Field(i).Type)
			}
		}
	}
	walk("Reconciler", reflect.TypeFor[reconcile.Reconciler]())
	if !seen[reflect.TypeFor[sms.LookupOnly]()] {
		t.Error("Reconciler no longer holds an sms.LookupOnly")
	}
	if reflect.TypeFor[*reconcile.Reconciler]().Implements(reflect.TypeFor[sms.Sender]()) {
		t.Error("*Reconciler is an sms.Sender")
	}
}

// TestReconcileByReceipt checks the stored receipts that reconciliation reads before the
// lookup: what each settles, when the lookup is still asked, and that a failed read retries
// the message rather than trusting a "not found".
func TestReconcileByReceipt(t *testing.T) {
	notFound := workercoretest.Answer{Result: sms.LookupResult{Status: sms.LookupNotFound}}
	tests := []struct {
		name    string
		receipt *sms.Receipt
		held    notify.Receipt
		readErr error
		answer  workercoretest.Answer
		want    state
		lookups int
		wantErr bool
	}{
		{name: "final receipt: delivered, no lookup", receipt: &sms.Receipt{MessageID: "pm-r", Status: sms.ReceiptDelivered},
			answer: notFound, want: state{notify.StateDelivered, notify.ReasonReconciledByReceipt}},
		{name: "final receipt: undelivered, no lookup", receipt: &sms.Receipt{MessageID: "pm-r", Status: sms.ReceiptUndelivered},
			answer: notFound, want: state{notify.StateUndelivered, notify.ReasonReconciledByReceipt}},
		{name: "intermediate receipt with an ID: sent, no lookup", receipt: &sms.Receipt{MessageID: "pm-r"},
			answer: notFound, want: state{notify.StateSent, notify.ReasonReconciledByReceipt}},
		{name: "receipt held on the record", held: notify.Receipt{State: notify.StateDelivered, Provider: providerSim, MessageID: "pm-h"},
			answer: notFound, want: state{notify.StateDelivered, notify.ReasonReconciledByReceipt}},
		{name: "intermediate receipt without an ID: the lookup's not found is inconclusive", receipt: &sms.Receipt{},
			answer: notFound, want: state{notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive}, lookups: 1},
		{name: "no receipt: the lookup decides", answer: notFound,
			want: state{notify.StateRetryScheduled, notify.ReasonReconciledNotFound}, lookups: 1},
		{name: "receipts unreadable: retried, nothing changes", readErr: errors.New("throttled"), answer: notFound,
			want: state{notify.StateDispatchUnknown, notify.ReasonProviderTimeout}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.unknownRecord(t, request("k", 10*time.Minute))
			if tc.held.Held() {
				rec.EarlyReceipt = tc.held
				f.put(t, rec)
			}
			reader := &workercoretest.Receipts{ByRef: map[string]sms.Receipt{}, Err: tc.readErr}
			if tc.receipt != nil {
				rc := *tc.receipt
				rc.AttemptRef = sms.AttemptRef(rec.NotificationID, rec.Attempt)
				reader.ByRef[rc.AttemptRef] = rc
			}
			f.r.Receipts = reader
			f.lookup.Answers = []workercoretest.Answer{tc.answer}
			err := f.r.Reconcile(context.Background(), notify.MessageOf(rec))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Reconcile = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, stateOf(f.get(t, "k"))); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if n := len(f.lookup.Requests()); n != tc.lookups {
				t.Errorf("%d lookups, want %d", n, tc.lookups)
			}
			if f.sender.Calls() != 1 {
				t.Errorf("%d sends: reconciliation sent", f.sender.Calls())
			}
		})
	}
}

// TestNotFoundAtAnInexactLookupNeedsASecond: at a provider whose lookup is not documented as
// exact (Sinch: LookupRoute.ConfirmNotFound), the first "not found" authorises nothing: the
// record stays dispatch_unknown with the time of that answer, due a visibility window later.
// Only a second "not found" then allows another attempt (and so a failover), or, past the
// deadline, proves it was stopped before dispatch; a "found" settles it as sent. A single "not
// found" past the deadline expires it as unresolved, never as proven unsent.
func TestNotFoundAtAnInexactLookupNeedsASecond(t *testing.T) {
	notFound := workercoretest.Answer{Result: sms.LookupResult{Status: sms.LookupNotFound}}
	for _, tc := range []struct {
		name   string
		second workercoretest.Answer
		late   bool // the deadline comes before the second lookup
		want   state
	}{
		{"confirmed", notFound, false, state{notify.StateRetryScheduled, notify.ReasonReconciledNotFound}},
		{"found by the second lookup", workercoretest.Answer{Result: sms.Found("pm-9", sms.ReceiptNone, time.Time{})}, false,
			state{notify.StateSent, notify.ReasonReconciledAccepted}},
		{"deadline before the second", notFound, true, state{notify.StateExpired, notify.ReasonExpiredBeforeDispatch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.r.Chain = []workercore.LookupRoute{{Name: providerSim, Lookup: sms.OnlyLookup(f.lookup), ConfirmNotFound: true}}
			req := request("k", 10*time.Minute)
			rec := f.unknownRecord(t, req)
			f.lookup.Answers = []workercoretest.Answer{notFound, tc.second}
			first := f.clock.Now()
			f.reconcile(t, notify.MessageOf(rec))
			got := f.get(t, "k")
			if diff := cmp.Diff(state{notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive}, stateOf(got)); diff != "" {
				t.Fatalf("after one not found (-want +got):\n%s", diff)
			}
			if !got.NotFoundAt.Equal(first) || !got.NextActionAt.Equal(first.Add(f.settings.Visibility)) {
				t.Errorf("not_found_at %s next_action_at %s, want %s and a visibility window later", got.NotFoundAt, got.NextActionAt, first)
			}
			sched := f.sched.Take()
			if len(sched) != 1 || sched[0].Queue != notify.ReconcileQueue || sched[0].Delay != f.settings.Visibility {
				t.Fatalf("scheduled %+v, want one reconcile message a visibility window later", sched)
			}
			f.clock.Set(got.NextActionAt)
			if tc.late {
				f.clock.Set(deadlineOf(req).Add(time.Hour))
			}
			f.reconcile(t, sched[0].Message)
			got = f.get(t, "k")
			if diff := cmp.Diff(tc.want, stateOf(got)); diff != "" {
				t.Errorf("after the second lookup (-want +got):\n%s", diff)
			}
			if n := len(f.lookup.Requests()); n != 2 {
				t.Errorf("%d lookups, want 2", n)
			}
			if f.sender.Calls() != 1 {
				t.Errorf("%d sends before the second lookup's answer was applied", f.sender.Calls())
			}
		})
	}
	t.Run("one not found past the deadline", func(t *testing.T) {
		f := newFixture(t)
		f.r.Chain = []workercore.LookupRoute{{Name: providerSim, Lookup: sms.OnlyLookup(f.lookup), ConfirmNotFound: true}}
		req := request("k", 10*time.Minute)
		rec := f.unknownRecord(t, req)
		f.clock.Set(deadlineOf(req).Add(time.Hour))
		f.lookup.Answers = []workercoretest.Answer{notFound}
		f.reconcile(t, notify.MessageOf(rec))
		if diff := cmp.Diff(state{notify.StateExpired, notify.ReasonExpiredUnresolved}, stateOf(f.get(t, "k"))); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}
