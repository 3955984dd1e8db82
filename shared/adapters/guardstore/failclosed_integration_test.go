package guardstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/guardstore"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// TestCountIsIdempotentPerNotification: counting one notification again (its creator, then a
// picker-up, or an SDK retry) counts it once and admits every time, even once its hour is
// full; a released count is gone, and a new notification is refused over the limit.
func TestCountIsIdempotentPerNotification(t *testing.T) {
	f := newFixture(t, notify.GuardLimits{PerHour: 1, PerDay: 10, PrefixDigits: 6, PrefixPerMinute: 5})
	ctx, g := context.Background(), f.in.Guard
	const to = "+14155550100"
	d := notify.Destination{FP: f.in.Hasher.DestinationFP(to), PrefixFP: "pfp-idem"}
	at := f.clock.Now()
	for i := range 3 {
		if err := g.Admit(ctx, d, "n-1", at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("count %d of n-1: %v, want admitted", i+1, err)
		}
	}
	if n := f.dayCount(t, to); n != 1 {
		t.Errorf("day count %d after counting n-1 three times, want 1", n)
	}
	if err := g.Admit(ctx, d, "n-2", at); !errors.Is(err, notify.ErrRateLimited) {
		t.Errorf("n-2 in a full hour: %v, want refused", err)
	}
	if err := g.Release(ctx, d, "n-1", at); err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctx, d, "n-1", at); err != nil || f.dayCount(t, to) != 0 {
		t.Errorf("released twice: %v, day count %d; want 0", err, f.dayCount(t, to))
	}
	if err := g.Admit(ctx, d, "n-2", at); err != nil {
		t.Errorf("n-2 after the release: %v, want admitted", err)
	}
}

// TestGuardTableFailureLeavesTheRecordUndecided: with a guard table that fails (here: one
// that does not exist), admission answers ErrGuardUnavailable, the record is stored undecided
// and nothing is queued; once the table is back, the repeat counts the record and queues it.
func TestGuardTableFailureLeavesTheRecordUndecided(t *testing.T) {
	f := newFixture(t, notify.GuardLimits{PerHour: 1, PerDay: 10, PrefixDigits: 6, PrefixPerMinute: 5})
	working := f.in.Guard
	f.in.Guard = guardstore.New(f.ddb, f.names.Guard+"-missing", notify.DefaultGuardLimits())
	const to = "+14155550100"
	req := f.request(t, "k", to)
	sub, err := f.in.Submit(context.Background(), req)
	if !errors.Is(err, notify.ErrGuardUnavailable) || !sub.Record.Undecided() || len(f.queue.Sent()) != 0 {
		t.Fatalf("failing guard table: %+v %v, %d messages; want ErrGuardUnavailable, undecided, none", sub, err, len(f.queue.Sent()))
	}
	f.in.Guard = working
	if got, _ := f.submit(t, "other", to); got != "admitted" {
		t.Fatalf("another key for the number: %s, want admitted (fills the hour)", got)
	}
	if got, _ := f.submit(t, "k", to); got != string(notify.RefusedDestinationHour) {
		t.Errorf("repeat of the failed key in a full hour: %s, want %s", got, notify.RefusedDestinationHour)
	}
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("%d dispatch messages, want 1 (the other key's)", n)
	}
}

// TestKilledCreatorNeverSendsOverTheLimits kills two creators between the put and the count
// (their records are stored undecided, nothing counted) while other keys fill the number's
// hour. Long past the bound, one is repeated: the repeat counts it and answers 429. The other is
// found by dispatch (the sweeper's re-queue): dispatch counts it, refuses it, and sends nothing.
func TestKilledCreatorNeverSendsOverTheLimits(t *testing.T) {
	f := newFixture(t, notify.GuardLimits{PerHour: 1, PerDay: 10, PrefixDigits: 6, PrefixPerMinute: 5})
	ctx := context.Background()
	const to = "+14155550100"
	killed := func(key string) notify.Record {
		req := f.request(t, key, to)
		rec := notify.NewRecord(req, notify.Admission{NotificationID: "n-" + key, Sealed: []byte("sealed"),
			DestinationFP: f.in.Hasher.DestinationFP(to), PrefixFP: "pfp-killed",
			RequestFingerprint: f.in.Fingerprints.RequestFP(req.Canonical())}, f.clock.Now(), f.in.Policy)
		rec.DecideBy = rec.CreatedAt.Add(notify.DefaultDecisionBound)
		if _, created, err := f.in.Store.Admit(ctx, rec); err != nil || !created {
			t.Fatalf("put %s: %v", key, err)
		}
		return rec
	}
	repeated, swept := killed("killed-1"), killed("killed-2")
	if got, _ := f.submit(t, "other", to); got != "admitted" {
		t.Fatalf("another key: %s, want admitted (it fills the hour)", got)
	}
	f.clock.Advance(time.Minute)
	if got, _ := f.submit(t, repeated.IdempotencyKey, to); got != string(notify.RefusedDestinationHour) {
		t.Errorf("repeat of a killed creator's key: %s, want %s", got, notify.RefusedDestinationHour)
	}
	sender := &workercoretest.Sender{}
	d := &dispatch.Dispatcher{
		Store: f.in.Store, Opener: notifytest.Sealer{}, Renderer: render.New(0), Sender: sender, Provider: "sim", Guard: f.in.Guard,
		Base: workercore.Base{Queue: &notifytest.Queue{}, Clock: f.clock, Settings: workercore.DefaultSettings(),
			Log: slog.New(slog.DiscardHandler), Metrics: &obs.Metrics{W: io.Discard, Function: "test"}},
	}
	if err := d.Dispatch(ctx, notify.MessageOf(swept)); err != nil {
		t.Fatal(err)
	}
	rec, err := f.in.Store.Get(ctx, swept.IdempotencyKey)
	if err != nil || rec.State != notify.StateRefused || sender.Calls() != 0 {
		t.Errorf("dispatch of a killed creator's record: %s after %d sends (%v), want refused after none", rec.State, sender.Calls(), err)
	}
	if n := len(f.queue.Sent()); n != 1 {
		t.Errorf("%d dispatch messages from intake, want 1 (the other key's)", n)
	}
}
