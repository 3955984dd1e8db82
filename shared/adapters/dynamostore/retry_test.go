package dynamostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// twice sends every write to DynamoDB Local a second time and answers with the second
// response, as the SDK's retryer does when the first response was lost after the write
// committed.
type twice struct{ dynamostore.API }

func (c twice) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if _, err := c.API.PutItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.API.PutItem(ctx, in, o...)
}

func (c twice) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if _, err := c.API.UpdateItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.API.UpdateItem(ctx, in, o...)
}

// TestRetriedWritesAreOwnWrites repeats every committed write, so the repeat fails its
// condition, and expects each to be recognised as the caller's own by its write token.
func TestRetriedWritesAreOwnWrites(t *testing.T) {
	f := newFixture(t)
	s := dynamostore.New(twice{f.client}, f.table)
	ctx := context.Background()
	now := time.Now().UTC()
	v1 := newRecord("twice", "evt-twice", "01JTWICE", now, now.Add(10*time.Minute))
	if _, created, err := s.Admit(ctx, v1); err != nil || !created {
		t.Fatalf("admit: created %v, %v; want our own admission", created, err)
	}
	due := v1.Requeue(now, time.Minute)
	if err := s.Reschedule(ctx, v1, due); err != nil {
		t.Fatalf("reschedule: %v", err)
	}
	v2 := apply(t, due, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(30 * time.Second), LeaseToken: "lease-1"}, now)
	if err := s.Transition(ctx, due, v2); err != nil {
		t.Fatalf("lease: %v", err)
	}
	held := notify.Receipt{State: notify.StateDelivered, Provider: "simulator", MessageID: "m-1", At: now.Truncate(time.Millisecond)}
	if err := s.HoldReceipt(ctx, v2, held); err != nil {
		t.Fatalf("hold receipt: %v", err)
	}
	v2.EarlyReceipt = held
	v3 := apply(t, v2, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "m-1"}, now)
	if err := s.Transition(ctx, v2, v3); err != nil {
		t.Fatalf("sent: %v", err)
	}
	got, err := f.store.Get(ctx, "twice")
	if err != nil || got.Version != 3 || got.State != notify.StateSent || got.EarlyReceipt != held {
		t.Fatalf("stored %s v%d holding %+v, %v", got.State, got.Version, got.EarlyReceipt, err)
	}
	// A real rival is still a conflict, carrying the stored record.
	err = s.Transition(ctx, v2, v3)
	cur, ok := notify.CurrentOf(err)
	if !errors.Is(err, notify.ErrConflict) || !ok || cur.Version != 3 {
		t.Errorf("stale transition: %v (current %v v%d)", err, ok, cur.Version)
	}
}

// TestRescheduleAndHoldReceiptConditions checks that of two reschedules of one version only
// the first wins, that a reschedule is no transition, that a receipt is held only on a
// dispatching record, and that a transition from dispatching loses to a receipt held since,
// with the record that holds it in the error.
func TestRescheduleAndHoldReceiptConditions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	v1 := newRecord("cond", "evt-cond", "01JCOND", now, now.Add(10*time.Minute))
	v1.Actor = notify.Actor{Function: "intake", Version: "1", RequestID: "r-1"}
	if _, _, err := f.store.Admit(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if err := f.store.HoldReceipt(ctx, v1, notify.Receipt{State: notify.StateDelivered}); err == nil {
		t.Error("a receipt was held on an accepted record")
	}
	first, second := v1.Requeue(now, time.Minute), v1.Requeue(now.Add(time.Millisecond), time.Minute)
	if err := f.store.Reschedule(ctx, v1, first); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Reschedule(ctx, v1, second); !errors.Is(err, notify.ErrConflict) {
		t.Errorf("second reschedule of v1: %v, want ErrConflict", err)
	}
	item := f.rawItem(t, "cond")
	if v, _ := item[tables.AttrVersion].(*ddbtypes.AttributeValueMemberN); v == nil || v.Value != "1" {
		t.Errorf("version after a reschedule: %v", item[tables.AttrVersion])
	}
	if a, _ := item[tables.AttrActor].(*ddbtypes.AttributeValueMemberS); a == nil || a.Value != "intake:1/r-1" {
		t.Errorf("actor %v, want the admission's", item[tables.AttrActor])
	}

	lease := apply(t, first, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(30 * time.Second), LeaseToken: "lease-2",
		Actor: notify.Actor{Function: "dispatch", Version: "2", RequestID: "r-2"}}, now)
	if err := f.store.Transition(ctx, first, lease); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.store.Get(ctx, "cond"); got.LeaseToken != "lease-2" || got.Actor != lease.Actor || !got.RequeuedAt.IsZero() {
		t.Errorf("leased: token %q actor %+v requeued %s", got.LeaseToken, got.Actor, got.RequeuedAt)
	}
	if err := f.store.HoldReceipt(ctx, lease, notify.Receipt{State: notify.StateUndelivered, Provider: "simulator", MessageID: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.HoldReceipt(ctx, lease, notify.Receipt{State: notify.StateDelivered}); !errors.Is(err, notify.ErrConflict) {
		t.Errorf("second receipt: %v, want ErrConflict (the first final word wins)", err)
	}
	sent := apply(t, lease, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "m"}, now)
	err := f.store.Transition(ctx, lease, sent)
	cur, ok := notify.CurrentOf(err)
	if !errors.Is(err, notify.ErrConflict) || !ok || cur.Version != lease.Version || cur.EarlyReceipt.State != notify.StateUndelivered || cur.EarlyReceipt.MessageID != "m" {
		t.Fatalf("transition over a held receipt: %v (current %+v)", err, cur)
	}
}
