package dynamostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestSettleAndRefusalExcludeEachOther: of a duplicate's settle and the creator's refusal of
// one undecided record, exactly one wins, and the loser gets the winner's record back from its
// own failed write.
func TestSettleAndRefusalExcludeEachOther(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	undecided := func(key string) notify.Record {
		rec := newRecord(key, "evt-"+key, "id-"+key, t0, t0.Add(time.Hour))
		rec.DecideBy = t0.Add(500 * time.Millisecond)
		if _, created, err := f.store.Admit(ctx, rec); err != nil || !created {
			t.Fatalf("admit %s: %v %v", key, created, err)
		}
		return rec
	}
	refusal := &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: 50 * time.Minute}
	late := t0.Add(time.Second)

	// Settled first: the refusal loses and sees the settle.
	rec := undecided("settled-first")
	settled, err := f.store.Settle(ctx, rec, late)
	if err != nil || !settled.DecidedAt.Equal(late) {
		t.Fatalf("settle: %+v %v", settled, err)
	}
	if got, _ := f.store.Get(ctx, rec.IdempotencyKey); got.Undecided() || got.Version != 1 || !got.DecidedAt.Equal(late) || !got.DecideBy.Equal(rec.DecideBy) {
		t.Errorf("stored after settle: %+v, want v1 decided at %s", got, late)
	}
	refused, err := rec.Refuse(refusal, t0, late)
	if err != nil {
		t.Fatal(err)
	}
	err = f.store.Transition(ctx, rec, refused)
	if cur, ok := notify.CurrentOf(err); !ok || cur.State != notify.StateAccepted || cur.DecidedAt.IsZero() {
		t.Errorf("refusal after a settle: %v, want a conflict holding the settled record", err)
	}
	if _, err := f.store.Settle(ctx, rec, late); !errors.Is(err, notify.ErrConflict) {
		t.Errorf("second settle: %v, want a conflict", err)
	}

	// Refused first: the settle loses and sees the refusal, with its reason and retry_at.
	rec = undecided("refused-first")
	if refused, err = rec.Refuse(refusal, t0, t0); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transition(ctx, rec, refused); err != nil {
		t.Fatalf("refusal: %v", err)
	}
	_, err = f.store.Settle(ctx, rec, late)
	cur, ok := notify.CurrentOf(err)
	if !ok || cur.State != notify.StateRefused || cur.Reason != notify.ReasonRefusedDestinationHour || !cur.RetryAt.Equal(t0.Add(50*time.Minute)) {
		t.Errorf("settle after a refusal: %v (%+v), want a conflict holding the refusal", err, cur)
	}
	item := f.rawItem(t, rec.IdempotencyKey)
	for _, gone := range []string{tables.AttrSealed, tables.AttrNextActionAt, tables.AttrDueShard, tables.AttrDecidedAt} {
		if _, ok := item[gone]; ok {
			t.Errorf("refused item keeps %s", gone)
		}
	}
}
