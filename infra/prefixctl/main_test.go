package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestOverrideIsAuditedAndRefusesAdmissions: an operator's block is in force at once for
// the intake's guard, an allow replaces it, both are in the history with who (the caller's STS
// identity, which no flag replaces) and why, --for is capped, and the usage errors name what
// is missing.
func TestOverrideIsAuditedAndRefusesAdmissions(t *testing.T) {
	ddb := testenv.DynamoDB(t)
	names := tables.Names{Notifications: testenv.UniqueName(t, "n"), Audit: testenv.UniqueName(t, "a"), Conversions: testenv.UniqueName(t, "conv")}
	if err := tablesetup.Create(t.Context(), ddb, names); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit, names.Conversions} {
			_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	whoAmI := "arn:aws:sts::123456789012:assumed-role/ops/alice"
	clock := notifytest.NewClock(time.Now().UTC().Add(time.Hour))
	store := convstore.New(ddb, names.Conversions, notify.DefaultConversionPolicy().Window)
	d := deps{
		store:  func(context.Context, string) (*convstore.Store, error) { return store, nil },
		caller: func(context.Context) (string, error) { return whoAmI, nil },
		clock:  clock,
	}
	cli := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), args, &out, &errOut, d)
		return out.String(), errOut.String(), err
	}
	if out, errOut, err := cli("block", "--table", names.Conversions, "--prefix-fp", "fp-1", "--for", "2h", "--note", "pumping"); err != nil || !strings.Contains(out, "fp-1") {
		t.Fatalf("block: %v\n%s%s", err, out, errOut)
	}
	guard := &notify.Conversions{Store: store, Policy: notify.DefaultConversionPolicy(), Clock: clock}
	b, blocked, err := guard.Blocked(t.Context(), "fp-1", clock.Now())
	if !blocked || err != nil || b.By != "arn:aws:sts::123456789012:assumed-role/ops/alice" {
		t.Fatalf("the intake's guard sees %+v blocked=%v %v", b, blocked, err)
	}
	clock.Advance(time.Minute)
	if _, _, err := cli("allow", "--table", names.Conversions, "--prefix-fp", "fp-1", "--for", "24h", "--note", "false alarm", "--by", "bob"); err == nil {
		t.Error("--by was taken: who decides is the caller's STS identity")
	}
	whoAmI = "arn:aws:sts::123456789012:assumed-role/ops/bob"
	if _, errOut, err := cli("allow", "--table", names.Conversions, "--prefix-fp", "fp-1", "--for", "24h", "--note", "false alarm"); err != nil {
		t.Fatalf("allow: %v %s", err, errOut)
	}
	other := &notify.Conversions{Store: store, Policy: notify.DefaultConversionPolicy(), Clock: clock}
	if _, blocked, _ := other.Blocked(t.Context(), "fp-1", clock.Now()); blocked {
		t.Error("still blocked after the operator's allow")
	}
	out, _, err := cli("history", "--table", names.Conversions, "--prefix-fp", "fp-1")
	if err != nil || !strings.Contains(out, "pumping") || !strings.Contains(out, "false alarm") || !strings.Contains(out, "assumed-role/ops/alice") || !strings.Contains(out, "assumed-role/ops/bob") {
		t.Errorf("history: %v\n%s", err, out)
	}
	if out, _, err := cli("list", "--table", names.Conversions); err != nil || strings.Count(out, "fp-1") != 1 || !strings.Contains(out, "allow") {
		t.Errorf("list: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"block", "--table", "t", "--prefix-fp", "fp", "--for", "2h"},
		{"allow", "--table", "t", "--for", "2h", "--note", "n"},
		{"block", "--table", "t", "--prefix-fp", "fp", "--note", "n"},
		{"allow", "--table", "t", "--prefix-fp", "fp", "--for", "169h", "--note", "n"},
		{"purge", "--table", "t"},
		{},
	} {
		if _, errOut, err := cli(args...); err != errUsage || !strings.Contains(errOut, "usage:") {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
