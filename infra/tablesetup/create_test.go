package tablesetup_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/tables"
)

func TestCreateOnDynamoDBLocal(t *testing.T) {
	client := testenv.DynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit"), Receipts: testenv.UniqueName(t, "receipts"), Guard: testenv.UniqueName(t, "guard")}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit, names.Receipts, names.Guard} {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	if err := tablesetup.Create(ctx, client, names); err != nil {
		t.Fatal(err)
	}
	// A second call finds both tables and TTL in place and changes nothing.
	if err := tablesetup.Create(ctx, client, names); err != nil {
		t.Fatalf("second Create: %v", err)
	}

	cases := []struct {
		table, ttl string
		indexes    []string
		stream     bool
	}{
		{names.Notifications, tablesetup.TTLAttribute, []string{tables.IndexDue, tables.IndexByNotification}, true},
		{names.Audit, tablesetup.AuditTTLAttribute, []string{tables.IndexByWriteShard}, false},
		{names.Receipts, tablesetup.ReceiptsTTLAttribute, nil, false},
		{names.Guard, tablesetup.GuardTTLAttribute, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.table, func(t *testing.T) {
			d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tc.table)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Table.TableStatus != ddbtypes.TableStatusActive {
				t.Errorf("status %s, want ACTIVE", d.Table.TableStatus)
			}
			var got []string
			for _, g := range d.Table.GlobalSecondaryIndexes {
				got = append(got, aws.ToString(g.IndexName))
			}
			if len(got) != len(tc.indexes) {
				t.Errorf("indexes %v, want %v", got, tc.indexes)
			}
			streaming := d.Table.StreamSpecification != nil && aws.ToBool(d.Table.StreamSpecification.StreamEnabled)
			if streaming != tc.stream {
				t.Errorf("stream enabled %v, want %v", streaming, tc.stream)
			}
			ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tc.table)})
			if err != nil {
				t.Fatal(err)
			}
			if desc := ttl.TimeToLiveDescription; desc == nil || aws.ToString(desc.AttributeName) != tc.ttl ||
				desc.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled {
				t.Errorf("TTL %+v, want ENABLED on %s", desc, tc.ttl)
			}
		})
	}
}
