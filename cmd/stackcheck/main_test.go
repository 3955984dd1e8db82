package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/dev/samtemplate"
	"github.com/resetnotify/resetnotify/dev/tablesetup"
	"github.com/resetnotify/resetnotify/dev/testenv"
)

// TestTableEnablesIgnoredTTL deploys, in effect, the notifications table as an emulator that
// ignores TimeToLiveSpecification does (the table without TTL), and checks that stackcheck
// finds the stream and indexes as the template says, enables TTL once, says so, and leaves it
// alone on a second run.
func TestTableEnablesIgnoredTTL(t *testing.T) {
	db := testenv.DynamoDB(t)
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := testenv.UniqueName(t, "stackcheck")
	if _, err := db.CreateTable(ctx, tablesetup.Notifications(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})

	var out bytes.Buffer
	c := checker{db: db, tpl: tpl, out: &out}
	problems, err := c.table(ctx, "NotificationsTable", name)
	if err != nil || len(problems) != 0 {
		t.Fatalf("first check: %v, %v", problems, err)
	}
	if !strings.Contains(out.String(), `NotificationsTable: the emulator ignored TimeToLiveSpecification; enabling TTL on "ttl"`) {
		t.Errorf("first check said %q, want that it enabled TTL", out.String())
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != dbtypes.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "ttl" {
		t.Fatalf("TTL after the check: %+v", ttl.TimeToLiveDescription)
	}
	out.Reset()
	if problems, err := c.table(ctx, "NotificationsTable", name); err != nil || len(problems) != 0 || out.Len() != 0 {
		t.Errorf("second check: %v, %v, said %q; want nothing to do", problems, err, out.String())
	}
	// A table that differs from the template is a problem, never patched.
	if problems, err := c.table(ctx, "AuditTable", name); err != nil || len(problems) == 0 {
		t.Errorf("the notifications table checked as AuditTable: %v, %v; want differences", problems, err)
	}
}
