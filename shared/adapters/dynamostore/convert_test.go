package dynamostore_test

import (
	"context"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestConversionIsStoredAndSurvivesTheReceipt: the conversion transition writes converted_at
// and the version, and the receipt that follows keeps it; prefix_fp and country written at
// admission stay.
func TestConversionIsStoredAndSurvivesTheReceipt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v1 := newRecord("k-conv", "evt-conv", "id-conv", t0, t0.Add(15*time.Minute))
	v1.PrefixFP, v1.Country = "pfx-fp", "1"
	if _, _, err := f.store.Admit(ctx, v1); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Second)
	v2 := apply(t, v1, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "lt", LeaseUntil: now.Add(30 * time.Second)}, now)
	v3 := apply(t, v2, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "simulator", ProviderMessageID: "pm-1"}, now)
	v4, err := v3.Convert(now.Add(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	v5 := apply(t, v4, notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered}, now.Add(30*time.Second))
	for _, step := range []struct{ prev, next notify.Record }{{v1, v2}, {v2, v3}, {v3, v4}, {v4, v5}} {
		if err := f.store.Transition(ctx, step.prev, step.next); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.store.Get(ctx, v1.IdempotencyKey)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != notify.StateDelivered || !got.ConvertedAt.Equal(v4.ConvertedAt) || got.PrefixFP != "pfx-fp" || got.Country != "1" {
		t.Errorf("stored %s converted_at %s prefix %q country %q", got.State, got.ConvertedAt, got.PrefixFP, got.Country)
	}
	raw := f.rawItem(t, v1.IdempotencyKey)
	if _, ok := raw[tables.AttrConvertedAt].(*ddbtypes.AttributeValueMemberS); !ok {
		t.Errorf("item lacks %s", tables.AttrConvertedAt)
	}
}
