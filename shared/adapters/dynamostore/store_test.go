package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// t0 is the tests' "now", in whole seconds so the TTL second equals the purge time. It follows
// the wall clock because DynamoDB Local really runs TTL: an item whose ttl (expires_at plus the
// grace) is already in the past is deleted within seconds, in the middle of a test. No test
// asserts anything about the wall clock itself.
var t0 = time.Now().UTC().Truncate(time.Second)

// counting wraps the client and counts calls, to prove what a store call costs.
type counting struct {
	dynamostore.API
	puts, gets, updates, queries atomic.Int64
}

func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	return c.API.PutItem(ctx, in, o...)
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.API.GetItem(ctx, in, o...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.API.UpdateItem(ctx, in, o...)
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.API.Query(ctx, in, o...)
}

type fixture struct {
	store  *dynamostore.Store
	calls  *counting
	client *dynamodb.Client
	table  string
}

// newFixture creates a uniquely named pair of tables and a store over them.
func newFixture(t *testing.T) fixture {
	t.Helper()
	client := testenv.DynamoDB(t)
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tablesetup.Create(ctx, client, names); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range []string{names.Notifications, names.Audit} {
			if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)}); err != nil {
				t.Errorf("delete table %s: %v", n, err)
			}
		}
	})
	calls := &counting{API: client}
	return fixture{store: dynamostore.New(calls, names.Notifications), calls: calls, client: client, table: names.Notifications}
}

// rawItem reads the stored item as it is, attribute by attribute.
func (f fixture) rawItem(t *testing.T, key string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := f.client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(f.table),
		Key:            map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

var policy = func() notify.Policy {
	p := notify.DefaultPolicy()
	p.Version = "test-1"
	return p
}()

// newRecord returns the first version of a record for key, admitted at now and expiring at
// expires.
func newRecord(key, eventID, id string, now, expires time.Time) notify.Record {
	req := notify.Request{
		IdempotencyKey: key,
		EventID:        eventID,
		Channel:        notify.ChannelSMS,
		Purpose:        notify.PurposePasswordReset,
		To:             "+447700900123",
		Locale:         "en",
		Params:         map[string]string{notify.ParamCode: "123456"},
		ExpiresAt:      expires,
	}
	return notify.NewRecord(req, notify.Admission{
		NotificationID: id,
		Sealed:         []byte("sealed-bytes-" + key),
		DestinationFP:  "fp-" + key,
	}, now, policy)
}

func apply(t *testing.T, r notify.Record, ch notify.Change, now time.Time) notify.Record {
	t.Helper()
	next, err := r.Apply(ch, now)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func TestAdmitThenReplayReturnsTheStoredRecordInOneCall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first := newRecord("k-1", "evt-1", "id-1", t0, t0.Add(15*time.Minute))

	stored, created, err := f.store.Admit(ctx, first)
	if err != nil || !created {
		t.Fatalf("first Admit = created %v, %v; want created", created, err)
	}
	if diff := cmp.Diff(first, stored); diff != "" {
		t.Errorf("first Admit returned (-want +got):\n%s", diff)
	}

	replay := newRecord("k-1", "evt-1", "id-2", t0.Add(time.Second), t0.Add(15*time.Minute))
	f.calls.gets.Store(0)
	f.calls.puts.Store(0)
	got, created, err := f.store.Admit(ctx, replay)
	if err != nil || created {
		t.Fatalf("replay Admit = created %v, %v; want existing", created, err)
	}
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("replay returned (-stored +got):\n%s", diff)
	}
	if p, g := f.calls.puts.Load(), f.calls.gets.Load(); p != 1 || g != 0 {
		t.Errorf("replay made %d PutItem and %d GetItem calls, want 1 and 0", p, g)
	}

	read, err := f.store.Get(ctx, "k-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, read); diff != "" {
		t.Errorf("Get returned (-stored +got):\n%s", diff)
	}
}

func TestConcurrentAdmitsConverge(t *testing.T) {
	f := newFixture(t)
	const n = 32
	var (
		wg      sync.WaitGroup
		created atomic.Int64
		ids     sync.Map
	)
	for i := range n {
		wg.Go(func() {
			rec := newRecord("k-race", "evt-race", fmt.Sprintf("id-%02d", i), t0, t0.Add(15*time.Minute))
			stored, ok, err := f.store.Admit(context.Background(), rec)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				created.Add(1)
			}
			ids.Store(stored.NotificationID, true)
		})
	}
	wg.Wait()
	distinct := 0
	ids.Range(func(any, any) bool { distinct++; return true })
	if created.Load() != 1 || distinct != 1 {
		t.Errorf("%d admits: %d created, %d distinct notification IDs returned; want 1 and 1", n, created.Load(), distinct)
	}
}

func TestGetMissingIsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.store.Get(context.Background(), "never-admitted")
	if !errors.Is(err, notify.ErrNotFound) {
		t.Errorf("Get of a missing key: %v, want ErrNotFound", err)
	}
}

func TestTransitionWalkAndVersionConflict(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v1 := newRecord("k-walk", "evt-walk", "id-walk", t0, t0.Add(15*time.Minute))
	if _, _, err := f.store.Admit(ctx, v1); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Second)
	v2 := apply(t, v1, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: now.Add(30 * time.Second)}, now)
	v3 := apply(t, v2, notify.Change{To: notify.StateRetryScheduled, Reason: notify.ReasonProviderThrottled, NextActionAt: now.Add(10 * time.Second)}, now.Add(time.Second))
	for _, step := range []struct{ prev, next notify.Record }{{v1, v2}, {v2, v3}} {
		if err := f.store.Transition(ctx, step.prev, step.next); err != nil {
			t.Fatalf("Transition v%d -> v%d: %v", step.prev.Version, step.next.Version, err)
		}
		got, err := f.store.Get(ctx, v1.IdempotencyKey)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(step.next, got); diff != "" {
			t.Errorf("after v%d the stored record differs (-want +got):\n%s", step.next.Version, diff)
		}
	}
	if _, ok := f.rawItem(t, v1.IdempotencyKey)[tables.AttrLeaseUntil]; ok {
		t.Error("lease_until still stored after the lease was released")
	}

	// A worker still holding v2 loses: the stored version is 3.
	stale := apply(t, v2, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "pm-late"}, now.Add(2*time.Second))
	if err := f.store.Transition(ctx, v2, stale); !errors.Is(err, notify.ErrConflict) {
		t.Fatalf("stale Transition: %v, want ErrConflict", err)
	}
	got, err := f.store.Get(ctx, v1.IdempotencyKey)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v3, got); diff != "" {
		t.Errorf("a lost Transition changed the record (-want +got):\n%s", diff)
	}
}

func TestLeaseRefusedAtOrAfterDeadline(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cases := []struct {
		name string
		at   func(deadline time.Time) time.Time
		ok   bool
	}{
		{"a nanosecond before", func(d time.Time) time.Time { return d.Add(-time.Nanosecond) }, true},
		{"at the deadline", func(d time.Time) time.Time { return d }, false},
		{"after the deadline", func(d time.Time) time.Time { return d.Add(time.Minute) }, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v1 := newRecord(fmt.Sprintf("k-lease-%d", i), "evt-lease", "id-lease", t0, t0.Add(15*time.Minute))
			if _, _, err := f.store.Admit(ctx, v1); err != nil {
				t.Fatal(err)
			}
			// The lease as a worker computed it in time; the store re-checks with the time the
			// write carries, as a worker that stalled between Apply and the write would send it.
			v2 := apply(t, v1, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: t0.Add(time.Hour)}, t0.Add(time.Second))
			v2.UpdatedAt = tc.at(v1.DispatchDeadline)
			err := f.store.Transition(ctx, v1, v2)
			if tc.ok && err != nil {
				t.Errorf("lease before the deadline: %v", err)
			}
			if !tc.ok && !errors.Is(err, notify.ErrConflict) {
				t.Errorf("lease %s: %v, want ErrConflict", tc.name, err)
			}
			got, err := f.store.Get(ctx, v1.IdempotencyKey)
			if err != nil {
				t.Fatal(err)
			}
			if wantState := map[bool]notify.State{true: notify.StateDispatching, false: notify.StateAccepted}[tc.ok]; got.State != wantState {
				t.Errorf("stored state %s, want %s", got.State, wantState)
			}
		})
	}
}

func TestSentRemovesSealedAndLeavesTheDueIndex(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v1 := newRecord("k-sent", "evt-sent", "id-sent", t0, t0.Add(15*time.Minute))
	if _, _, err := f.store.Admit(ctx, v1); err != nil {
		t.Fatal(err)
	}
	before := f.rawItem(t, v1.IdempotencyKey)
	for _, attr := range []string{tables.AttrSealed, tables.AttrNextActionAt, tables.AttrDueShard} {
		if _, ok := before[attr]; !ok {
			t.Errorf("accepted item lacks %s", attr)
		}
	}
	now := t0.Add(time.Second)
	v2 := apply(t, v1, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease", LeaseUntil: now.Add(30 * time.Second)}, now)
	v3 := apply(t, v2, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "simulator", ProviderMessageID: "pm-1"}, now.Add(time.Second))
	for _, step := range []struct{ prev, next notify.Record }{{v1, v2}, {v2, v3}} {
		if err := f.store.Transition(ctx, step.prev, step.next); err != nil {
			t.Fatal(err)
		}
	}
	after := f.rawItem(t, v1.IdempotencyKey)
	for _, attr := range []string{tables.AttrSealed, tables.AttrNextActionAt, tables.AttrDueShard, tables.AttrLeaseUntil} {
		if _, ok := after[attr]; ok {
			t.Errorf("sent item still holds %s", attr)
		}
	}
	if got, ok := after[tables.AttrProviderMessageID].(*ddbtypes.AttributeValueMemberS); !ok || got.Value != "pm-1" {
		t.Errorf("provider_message_id = %v, want pm-1", after[tables.AttrProviderMessageID])
	}
	for shard := range tables.DueShards {
		recs, err := f.store.QueryDue(ctx, shard, t0.Add(24*time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.IdempotencyKey == v1.IdempotencyKey {
				t.Errorf("sent record still in the due index, shard %d", shard)
			}
		}
	}
}

func TestTTLIsExpiryPlusGrace(t *testing.T) {
	f := newFixture(t)
	rec := newRecord("k-ttl", "evt-ttl", "id-ttl", t0, t0.Add(15*time.Minute))
	if _, _, err := f.store.Admit(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	ttl, ok := f.rawItem(t, rec.IdempotencyKey)[tables.AttrTTL].(*ddbtypes.AttributeValueMemberN)
	want := fmt.Sprint(t0.Add(15*time.Minute + policy.StatusGrace).Unix())
	if !ok || ttl.Value != want {
		t.Errorf("ttl = %v, want N %s (expires_at + %s)", ttl, want, policy.StatusGrace)
	}
}

func TestQueryDueIsSparseAndPerShard(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := t0.Add(time.Hour)
	var wantDue []string
	admit := func(rec notify.Record) notify.Record {
		t.Helper()
		if _, _, err := f.store.Admit(ctx, rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for i := range 24 {
		key := fmt.Sprintf("k-due-%02d", i)
		switch i % 4 {
		case 0: // Admitted long ago and never dispatched: due now.
			admit(newRecord(key, "evt-due", key, t0, now.Add(time.Hour)))
			wantDue = append(wantDue, key)
		case 1: // Admitted just now: due only after SweepAfter.
			admit(newRecord(key, "evt-due", key, now, now.Add(time.Hour)))
		case 2: // Expired at admission: terminal, never in the index.
			admit(newRecord(key, "evt-due", key, now, now.Add(time.Second)))
		case 3: // Cancelled: terminal, leaves the index.
			v1 := admit(newRecord(key, "evt-due", key, t0, now.Add(time.Hour)))
			v2, err := v1.Cancel(t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.store.Transition(ctx, v1, v2); err != nil {
				t.Fatal(err)
			}
		}
	}

	var got []string
	for shard := range tables.DueShards {
		recs, err := f.store.QueryDue(ctx, shard, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if tables.DueShard(r.IdempotencyKey) != shard {
				t.Errorf("%s returned for shard %d, belongs to %d", r.IdempotencyKey, shard, tables.DueShard(r.IdempotencyKey))
			}
			if r.NextActionAt.After(now) || r.State.Terminal() {
				t.Errorf("%s returned as due: next_action_at %s, state %s", r.IdempotencyKey, r.NextActionAt, r.State)
			}
			if i > 0 && r.NextActionAt.Before(recs[i-1].NextActionAt) {
				t.Errorf("shard %d not in next_action_at order", shard)
			}
			got = append(got, r.IdempotencyKey)
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(wantDue, got); diff != "" {
		t.Errorf("due records differ (-want +got):\n%s", diff)
	}

	// Nothing terminal is in the index, however late we look.
	later := 0
	for shard := range tables.DueShards {
		recs, err := f.store.QueryDue(ctx, shard, now.Add(48*time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.State.Terminal() {
				t.Errorf("terminal record %s (%s) in the due index", r.IdempotencyKey, r.State)
			}
		}
		later += len(recs)
	}
	if later != 12 {
		t.Errorf("due index holds %d records, want the 12 that are not terminal", later)
	}

	// The limit is honoured across pages.
	shard := tables.DueShard(wantDue[0])
	if recs, err := f.store.QueryDue(ctx, shard, now.Add(48*time.Hour), 1); err != nil || len(recs) != 1 {
		t.Errorf("QueryDue limit 1: %d records, %v", len(recs), err)
	}
	if _, err := f.store.QueryDue(ctx, tables.DueShards, now, 0); err == nil {
		t.Error("QueryDue accepted a shard out of range")
	}
}
