package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestQueryDueReadsWholeRecords: the due index holds keys only, so QueryDue reads each record
// itself; what the sweeper gets is the stored record, sealed payload and all, not a projection.
func TestQueryDueReadsWholeRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rec := newRecord("k-due", "evt-due", "01JDUE", t0, t0.Add(15*time.Minute))
	if _, _, err := f.store.Admit(ctx, rec); err != nil {
		t.Fatal(err)
	}
	want, err := f.store.Get(ctx, rec.IdempotencyKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Sealed) == 0 || want.DestinationFP == "" {
		t.Fatalf("the test record lacks the fields a projection would drop: %+v", want)
	}
	got, err := f.store.QueryDue(ctx, tables.DueShard(rec.IdempotencyKey), rec.NextActionAt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("QueryDue: %d records, want 1", len(got))
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("QueryDue record differs from the stored one (-Get +QueryDue):\n%s", diff)
	}
	// Not yet due a moment before its next_action_at.
	if early, err := f.store.QueryDue(ctx, tables.DueShard(rec.IdempotencyKey), rec.NextActionAt.Add(-time.Millisecond), 0); err != nil || len(early) != 0 {
		t.Errorf("QueryDue before next_action_at: %d records, %v", len(early), err)
	}
}
