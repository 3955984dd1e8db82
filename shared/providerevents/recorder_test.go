package providerevents_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

const id = "01JC5ZQ7W3M9N4P2R8T6V0X1Y2"

var (
	a1 = sms.AttemptRef(id, 1)
	a2 = sms.AttemptRef(id, 2)
)

func TestRecord(t *testing.T) {
	tests := []struct {
		name string
		// path moves the record from accepted; nil path means no record at all.
		path     []notify.Change
		noRecord bool
		in       []providerevents.Receipt
		want     []providerevents.Outcome
		// wantState and wantReason describe the record afterwards; wantBump is how many
		// versions the receipts added.
		wantState  notify.State
		wantReason notify.Reason
		wantBump   int64
		// wantStored is the status stored for wantRef afterwards; notStored says that no
		// receipt is stored for it (a final receipt applied at once, or its duplicate).
		wantRef    string
		wantStored sms.ReceiptStatus
		notStored  bool
	}{
		{
			name: "delivered is applied at once, not stored", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeTransitioned},
			wantState: notify.StateDelivered, wantReason: notify.ReasonReceiptDelivered, wantBump: 1,
			wantRef: a1, notStored: true,
		},
		{
			name: "a neighbour's receipt for our attempt is never applied", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{neighbour(receipt(a1, sms.ReceiptUndelivered))},
			want:      []providerevents.Outcome{providerevents.OutcomeMismatch},
			wantState: notify.StateSent, wantReason: notify.ReasonProviderAccepted,
			wantRef: a1, wantStored: sms.ReceiptUndelivered,
		},
		{
			name: "another message ID of the same provider is never applied", path: []notify.Change{lease, accepted},
			in: []providerevents.Receipt{func() providerevents.Receipt {
				r := receipt(a1, sms.ReceiptUndelivered)
				r.MessageID = "msg-2"
				return r
			}()},
			want:      []providerevents.Outcome{providerevents.OutcomeMismatch},
			wantState: notify.StateSent, wantReason: notify.ReasonProviderAccepted,
			wantRef: a1, wantStored: sms.ReceiptUndelivered,
		},
		{
			name: "a neighbour's receipt stored first does not keep the genuine one out", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{neighbour(receipt(a1, sms.ReceiptUndelivered)), receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeMismatch, providerevents.OutcomeTransitioned},
			wantState: notify.StateDelivered, wantReason: notify.ReasonReceiptDelivered, wantBump: 1,
			wantRef: a1, wantStored: sms.ReceiptUndelivered,
		},
		{
			name: "undelivered is applied at once, not stored", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptUndelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeTransitioned},
			wantState: notify.StateUndelivered, wantReason: notify.ReasonReceiptFailed, wantBump: 1,
			wantRef: a1, notStored: true,
		},
		{
			name: "intermediate receipt is only recorded", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptNone)},
			want:      []providerevents.Outcome{providerevents.OutcomeRecorded},
			wantState: notify.StateSent, wantReason: notify.ReasonProviderAccepted,
			wantRef: a1, wantStored: sms.ReceiptNone,
		},
		{
			name: "duplicate receipt changes nothing", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered), receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeTransitioned, providerevents.OutcomeDuplicate},
			wantState: notify.StateDelivered, wantReason: notify.ReasonReceiptDelivered, wantBump: 1,
			wantRef: a1, notStored: true,
		},
		{
			name: "intermediate then final: the final is applied at once", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptNone), receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeRecorded, providerevents.OutcomeTransitioned},
			wantState: notify.StateDelivered, wantReason: notify.ReasonReceiptDelivered, wantBump: 1,
			wantRef: a1, wantStored: sms.ReceiptNone,
		},
		{
			// The late intermediate one is evidence of acceptance only: stored, and it changes
			// nothing on the record.
			name: "out of order: final then intermediate", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptUndelivered), receipt(a1, sms.ReceiptNone)},
			want:      []providerevents.Outcome{providerevents.OutcomeTransitioned, providerevents.OutcomeRecorded},
			wantState: notify.StateUndelivered, wantReason: notify.ReasonReceiptFailed, wantBump: 1,
			wantRef: a1, wantStored: sms.ReceiptNone,
		},
		{
			// The record keeps the first final word; the contradiction is stale, stored as
			// evidence.
			name: "contradicting final keeps the first", path: []notify.Change{lease, accepted},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered), receipt(a1, sms.ReceiptUndelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeTransitioned, providerevents.OutcomeStale},
			wantState: notify.StateDelivered, wantReason: notify.ReasonReceiptDelivered, wantBump: 1,
			wantRef: a1, wantStored: sms.ReceiptUndelivered,
		},
		{
			name: "receipt while dispatching is early", path: []notify.Change{lease},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeEarly},
			wantState: notify.StateDispatching, wantReason: notify.ReasonLeaseAcquired,
			wantRef: a1, wantStored: sms.ReceiptDelivered,
		},
		{
			name: "receipt while dispatch_unknown is left to reconciliation", path: []notify.Change{lease, timedOut},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeRecorded},
			wantState: notify.StateDispatchUnknown, wantReason: notify.ReasonProviderTimeout,
			wantRef: a1, wantStored: sms.ReceiptDelivered,
		},
		{
			name: "receipt for an older attempt of a sent record is stale",
			path: []notify.Change{lease, throttled, lease, accepted},
			in:   []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want: []providerevents.Outcome{providerevents.OutcomeStale}, wantState: notify.StateSent, wantReason: notify.ReasonProviderAccepted,
			wantRef: a1, wantStored: sms.ReceiptDelivered,
		},
		{
			name: "receipt contradicting a not-found reconciliation is stale",
			path: []notify.Change{lease, timedOut, notFound},
			in:   []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want: []providerevents.Outcome{providerevents.OutcomeStale}, wantState: notify.StateRetryScheduled, wantReason: notify.ReasonReconciledNotFound,
			wantRef: a1, wantStored: sms.ReceiptDelivered,
		},
		{
			name: "receipt after another final state is stale", path: []notify.Change{lease, accepted, undelivered},
			in:        []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeStale},
			wantState: notify.StateUndelivered, wantReason: notify.ReasonReceiptFailed,
			wantRef: a1, wantStored: sms.ReceiptDelivered,
		},
		{
			name: "second attempt delivered", path: []notify.Change{lease, throttled, lease, accepted},
			in:        []providerevents.Receipt{receipt(a2, sms.ReceiptDelivered)},
			want:      []providerevents.Outcome{providerevents.OutcomeTransitioned},
			wantState: notify.StateDelivered, wantReason: notify.ReasonReceiptDelivered, wantBump: 1,
			wantRef: a2, notStored: true,
		},
		{
			name: "orphan is recorded and acknowledged", noRecord: true,
			in:      []providerevents.Receipt{receipt(a1, sms.ReceiptDelivered)},
			want:    []providerevents.Outcome{providerevents.OutcomeOrphan},
			wantRef: a1, wantStored: sms.ReceiptDelivered,
		},
		{
			name: "poison is dropped", path: []notify.Change{lease, accepted},
			in: []providerevents.Receipt{
				{AttemptRef: "not-ours", Status: sms.ReceiptDelivered, Provider: "simulator"},
				{AttemptRef: a1, Status: "read", Provider: "simulator"},
				{AttemptRef: a1, Status: sms.ReceiptDelivered},
				{AttemptRef: a1, Status: sms.ReceiptDelivered, Provider: "simulator", Detail: "call " + destination},
			},
			want: []providerevents.Outcome{providerevents.OutcomePoison, providerevents.OutcomePoison, providerevents.OutcomePoison, providerevents.OutcomePoison},
			// Nothing recorded, record untouched.
			wantState: notify.StateSent, wantReason: notify.ReasonProviderAccepted,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			var before notify.Record
			if !tc.noRecord {
				before = f.admit(t, "k", id, tc.path...)
			}
			var got []providerevents.Outcome
			for _, rc := range tc.in {
				res, err := f.rec.Record(ctx, rc)
				if err != nil {
					t.Fatalf("Record(%s %s): %v", rc.AttemptRef, rc.Status, err)
				}
				got = append(got, res.Outcome)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if !tc.noRecord {
				after, err := f.store.Get(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if after.State != tc.wantState || after.Reason != tc.wantReason || after.Version-before.Version != tc.wantBump {
					t.Errorf("record %s/%s v+%d, want %s/%s v+%d", after.State, after.Reason,
						after.Version-before.Version, tc.wantState, tc.wantReason, tc.wantBump)
				}
			}
			if tc.wantRef == "" {
				if f.receipts.puts != 0 {
					t.Errorf("%d receipts written for poison", f.receipts.puts)
				}
				return
			}
			stored, ok := f.receipts.get(tc.wantRef)
			if tc.notStored {
				if ok {
					t.Errorf("stored receipt %+v, want none: the record holds it", stored)
				}
				return
			}
			if !ok || stored.Status != tc.wantStored {
				t.Errorf("stored receipt %+v (found %v), want status %q", stored, ok, tc.wantStored)
			}
		})
	}
}

func TestRecordConflicts(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		race      func(ctx context.Context, s *notifytest.Store, prev notify.Record)
		want      providerevents.Outcome
		wantErr   bool
		wantState notify.State
		wantCalls int
	}{
		{name: "conflict then retry", n: 2, want: providerevents.OutcomeTransitioned, wantState: notify.StateDelivered, wantCalls: 3},
		{
			name: "a concurrent receipt wins the race", n: 1,
			race: func(ctx context.Context, s *notifytest.Store, prev notify.Record) {
				next, _ := prev.Apply(delivered, prev.UpdatedAt)
				_ = s.Transition(ctx, prev, next)
			},
			want: providerevents.OutcomeDuplicate, wantState: notify.StateDelivered, wantCalls: 1,
		},
		{name: "bounded", n: 1000, wantErr: true, wantState: notify.StateSent, wantCalls: providerevents.DefaultMaxTries},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.admit(t, "k", id, lease, accepted)
			r := &racing{Store: f.store, n: tc.n, race: tc.race}
			f.rec.Notifications = r
			res, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered))
			if tc.wantErr {
				if !errorsIs(err, notify.ErrConflict) {
					t.Fatalf("err = %v, want ErrConflict", err)
				}
			} else if err != nil || res.Outcome != tc.want {
				t.Fatalf("Record = %s, %v; want %s", res.Outcome, err, tc.want)
			}
			if r.calls != tc.wantCalls {
				t.Errorf("%d Transition calls, want %d", r.calls, tc.wantCalls)
			}
			if got, _ := f.store.Get(ctx, "k"); got.State != tc.wantState {
				t.Errorf("state %s, want %s", got.State, tc.wantState)
			}
			// Applied at once, the receipt is not stored; one that kept losing is, as
			// evidence, and answered with an error for the provider to try again.
			if stored, ok := f.receipts.get(a1); ok != tc.wantErr || (ok && stored.Status != sms.ReceiptDelivered) {
				t.Errorf("stored receipt %+v (found %v), want one only after the error", stored, ok)
			}
		})
	}
}

// failOnce fails the first Transition with a store error, as DynamoDB might.
type failOnce struct {
	*notifytest.Store
	failed bool
}

func (s *failOnce) Transition(ctx context.Context, prev, next notify.Record) error {
	if !s.failed {
		s.failed = true
		return errors.New("dynamodb: throttled")
	}
	return s.Store.Transition(ctx, prev, next)
}

func TestRecordTransientFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("a failed transition keeps the receipt and a redelivery finishes it", func(t *testing.T) {
		f := newFixture(t)
		f.admit(t, "k", id, lease, accepted)
		f.rec.Notifications = &failOnce{Store: f.store}
		if _, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered)); err == nil {
			t.Fatal("first Record succeeded although the transition failed")
		}
		if stored, ok := f.receipts.get(a1); !ok || stored.Status != sms.ReceiptDelivered {
			t.Errorf("after the failed transition the receipt is %+v (found %v), want it stored", stored, ok)
		}
		res, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered))
		if err != nil || res.Outcome != providerevents.OutcomeTransitioned || res.Stored {
			t.Fatalf("redelivery: %+v, %v; want transitioned at once", res, err)
		}
		if f.receipts.puts != 1 {
			t.Errorf("%d puts, want 1 (the failed try's)", f.receipts.puts)
		}
	})
	t.Run("a sent record needs no receipts store", func(t *testing.T) {
		f := newFixture(t)
		f.admit(t, "k", id, lease, accepted)
		f.receipts.Err = errors.New("dynamodb: unavailable")
		res, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered))
		if err != nil || res.Outcome != providerevents.OutcomeTransitioned || res.Stored || f.receipts.puts != 0 {
			t.Fatalf("Record = %+v, %v after %d puts; want transitioned without a put", res, err, f.receipts.puts)
		}
	})
	t.Run("receipt store failure", func(t *testing.T) {
		// A record waiting for reconciliation needs the receipt stored: without the store the
		// receipt is answered retryable and the record is left alone.
		f := newFixture(t)
		f.admit(t, "k", id, lease, timedOut)
		f.receipts.Err = errors.New("dynamodb: unavailable")
		if _, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered)); err == nil {
			t.Fatal("Record succeeded without storing the receipt")
		}
		if got, _ := f.store.Get(ctx, "k"); got.State != notify.StateDispatchUnknown || got.Version != 3 {
			t.Errorf("record moved to %s v%d without its receipt stored", got.State, got.Version)
		}
	})
	t.Run("index failure", func(t *testing.T) {
		f := newFixture(t)
		f.rec.Keys = keysOf{store: f.store, Err: errors.New("dynamodb: unavailable")}
		if _, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered)); err == nil {
			t.Fatal("Record succeeded without reading the index")
		}
		if _, ok := f.receipts.get(a1); !ok {
			t.Error("a receipt that could not be applied was not kept")
		}
	})
	t.Run("record read failure", func(t *testing.T) {
		f := newFixture(t)
		f.admit(t, "k", id, lease, accepted)
		f.store.Err = errors.New("dynamodb: unavailable")
		if _, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered)); err == nil {
			t.Fatal("Record succeeded without reading the record")
		}
		if _, ok := f.receipts.get(a1); !ok {
			t.Error("a receipt that could not be applied was not kept")
		}
	})
}

// TestFinalReceiptAppliedAtOnce: a final receipt for a sent record costs the record's
// transition and nothing in the receipts table; a repeat of it writes nothing at all; every
// receipt the record cannot settle at once is stored, as reconciliation needs.
func TestFinalReceiptAppliedAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.admit(t, "k", id, lease, accepted)
	r := &racing{Store: f.store}
	f.rec.Notifications = r
	for i, want := range []providerevents.Outcome{providerevents.OutcomeTransitioned, providerevents.OutcomeDuplicate, providerevents.OutcomeDuplicate} {
		res, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered))
		if err != nil || res.Outcome != want || res.Stored || res.State != notify.StateDelivered {
			t.Fatalf("receipt %d: %+v, %v; want %s from the record's state, not stored", i, res, err, want)
		}
	}
	if f.receipts.puts != 0 || r.calls != 1 {
		t.Errorf("%d puts and %d transitions for a receipt and two repeats, want 0 and 1", f.receipts.puts, r.calls)
	}
	if got, _ := f.store.Get(ctx, "k"); got.State != notify.StateDelivered || got.Reason != notify.ReasonReceiptDelivered ||
		got.Provider != "simulator" || got.ProviderMessageID != "msg-1" || got.Actor.String() == "" {
		t.Errorf("record %+v: the transition must hold the receipt's state, provider, message ID and who applied it", got)
	}

	// A record waiting for reconciliation: the receipt is stored, and the receipt reader
	// reconciliation uses finds it.
	g := newFixture(t)
	g.admit(t, "u", id, lease, timedOut)
	if res, err := g.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered)); err != nil || res.Outcome != providerevents.OutcomeRecorded || !res.Stored {
		t.Fatalf("dispatch_unknown: %+v, %v; want recorded and stored", res, err)
	}
	if stored, ok := g.receipts.get(a1); !ok || stored.Status != sms.ReceiptDelivered || stored.MessageID != "msg-1" {
		t.Errorf("stored %+v (found %v), want the delivered receipt for reconciliation", stored, ok)
	}
}

func TestRecordLogsAndMetrics(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.admit(t, "k", id, lease, accepted)
	if _, err := f.rec.Record(ctx, receipt(a1, sms.ReceiptDelivered)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rec.Record(ctx, providerevents.Receipt{AttemptRef: destination, Provider: "simulator"}); err != nil {
		t.Fatal(err)
	}
	out := f.out.String()
	for _, want := range []string{`"Outcome":"transitioned"`, `"Outcome":"poison"`, `"ToState":"delivered"`, `"Receipts":1`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, destination) {
		t.Errorf("output holds the destination number:\n%s", out)
	}
}

func TestSupersedes(t *testing.T) {
	statuses := []sms.ReceiptStatus{sms.ReceiptNone, sms.ReceiptDelivered, sms.ReceiptUndelivered}
	for _, prev := range statuses {
		for _, next := range statuses {
			want := prev == sms.ReceiptNone && next != sms.ReceiptNone
			if got := providerevents.Supersedes(receipt(a1, next), receipt(a1, prev)); got != want {
				t.Errorf("Supersedes(%q over %q) = %v, want %v", next, prev, got, want)
			}
		}
	}
}
