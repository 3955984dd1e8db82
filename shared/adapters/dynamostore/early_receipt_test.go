package dynamostore

import (
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestEarlyReceiptStored checks the stored form of a held receipt: what it keeps (state,
// provider, message ID, time to the millisecond), that a message ID with spaces reads back
// whole, that a record held before the receipt kept its evidence (the state alone) still
// reads, and that anything else is refused by name.
func TestEarlyReceiptStored(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 123000000, time.UTC)
	good := []struct {
		name   string
		stored string
		want   notify.Receipt
	}{
		{"whole", "delivered simulator 1793534400123 sim-00000152",
			notify.Receipt{State: notify.StateDelivered, Provider: "simulator", MessageID: "sim-00000152", At: at}},
		{"message ID with spaces", "undelivered sinch 1793534400123 a b c",
			notify.Receipt{State: notify.StateUndelivered, Provider: "sinch", MessageID: "a b c", At: at}},
		{"no message ID, no time", "delivered simulator 0 ", notify.Receipt{State: notify.StateDelivered, Provider: "simulator"}},
		{"old shape: the state alone", "undelivered", notify.Receipt{State: notify.StateUndelivered}},
		{"none", "", notify.Receipt{}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEarlyReceipt(tc.stored)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parse %q (-want +got):\n%s", tc.stored, diff)
			}
			if tc.want.Provider != "" || !tc.want.Held() {
				if back := formatEarlyReceipt(got); back != tc.stored {
					t.Errorf("format = %q, want %q", back, tc.stored)
				}
			}
		})
	}
	for _, bad := range []string{"sent", "delivered simulator", "delivered simulator soon m", "delivered simulator -5 m"} {
		if _, err := parseEarlyReceipt(bad); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
	// Through the item: a record holding a receipt reads back with it.
	rec := sampleRecord()
	rec.EarlyReceipt = good[0].want
	av, err := ItemFromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := av[tables.AttrEarlyReceipt].(*ddbtypes.AttributeValueMemberS); !ok || s.Value != good[0].stored {
		t.Errorf("early_receipt stored as %#v, want %q", av[tables.AttrEarlyReceipt], good[0].stored)
	}
	back, err := RecordFromItem(av)
	if err != nil || back.EarlyReceipt != rec.EarlyReceipt {
		t.Errorf("read back %+v, %v; want %+v", back.EarlyReceipt, err, rec.EarlyReceipt)
	}
	av[tables.AttrEarlyReceipt] = &ddbtypes.AttributeValueMemberS{Value: "sent"}
	if _, err := RecordFromItem(av); err == nil {
		t.Error("a record holding a non-final receipt was read")
	}
}
