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

// TestConditionalRoutes: a stack is expected to have every route of the template without a
// condition, whether or not it lists it, and a provider's webhook route only when its
// condition made the stack create it (a simulator stack has no Sinch route).
func TestConditionalRoutes(t *testing.T) {
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	simulatorStack := map[string]string{"SimulatorWebhookRoute": "r1", "SubmitRoute": "r2"}
	got := wantRoutes(tpl, simulatorStack)
	if _, ok := got["POST /v1/provider-events/sinch"]; ok {
		t.Error("a simulator stack is expected to have the Sinch webhook route")
	}
	if got["POST /v1/provider-events/simulator"] != "NONE" || got["GET /v1/notifications/{key}"] != "AWS_IAM" {
		t.Errorf("expected routes %v, want the simulator's webhook and every unconditional route (listed or not)", got)
	}
	sinchStack := map[string]string{"SinchWebhookRoute": "r3"}
	got = wantRoutes(tpl, sinchStack)
	if _, ok := got["POST /v1/provider-events/simulator"]; ok || got["POST /v1/provider-events/sinch"] != "NONE" {
		t.Errorf("a Sinch stack's expected routes %v, want its webhook and not the simulator's", got)
	}
}
