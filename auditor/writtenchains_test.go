package auditor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/resetnotify/resetnotify/infra/auditfixture"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// write runs the audit function's handler over recs in one invocation, writing into db, and
// returns its answer.
func write(t *testing.T, db *auditfixture.Table, reqID string, recs ...events.DynamoDBEventRecord) events.DynamoDBEventResponse {
	t.Helper()
	h := &audit.Handler{
		Writer:   &auditlog.Writer{DB: db, Table: "audit"},
		Function: "audit", FunctionVersion: "$LATEST",
		Clock: notifytest.NewClock(auditfixture.T0.Add(3 * time.Hour)),
	}
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: reqID})
	resp, err := h.Handle(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	return resp
}

// stored returns every entry db holds, in timeline order.
func stored(t *testing.T, db *auditfixture.Table) []auditlog.Entry {
	t.Helper()
	var out []auditlog.Entry
	for _, item := range db.Stored() {
		e, err := auditlog.FromItem(item)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return auditlog.Sorted(out)
}

// TestWrittenChainsVerify checks Verify against what the audit function writes: a whole life,
// a batch retried from its failed record, a key admitted again after its purge, and auditing
// that starts in the middle of a chain, whose missing versions Verify names.
func TestWrittenChainsVerify(t *testing.T) {
	tests := []struct {
		name    string
		write   func(t *testing.T, db *auditfixture.Table)
		problem string // in the first problem; "" for none
	}{
		{"a whole life", func(t *testing.T, db *auditfixture.Table) {
			write(t, db, "req-1", auditfixture.LifecycleRecords("evt-1:sms:password_reset", "evt-1", "01JA")...)
		}, ""},
		{"a batch retried from its failed record", func(t *testing.T, db *auditfixture.Table) {
			recs := auditfixture.LifecycleRecords("k1", "evt-1", "01JA")
			db.FailPut = "k1#0000000002"
			write(t, db, "req-1", recs...)
			db.FailPut = ""
			write(t, db, "req-2", recs[1:]...)
		}, ""},
		{"a key admitted again after its purge, and replayed", func(t *testing.T, db *auditfixture.Table) {
			write(t, db, "req-1", auditfixture.LifecycleRecords("k1", "evt-1", "01JA")...)
			second := auditfixture.LifecycleRecords("k1", "evt-1", "01JB")
			write(t, db, "req-2", second...)
			write(t, db, "req-3", second...)
		}, ""},
		{"auditing started in the middle of a chain", func(t *testing.T, db *auditfixture.Table) {
			write(t, db, "req-1", auditfixture.LifecycleRecords("k1", "evt-1", "01JA")[2:]...)
		}, "versions 1–2 missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := auditfixture.NewTable()
			tc.write(t, db)
			p := Verify(stored(t, db))
			switch {
			case tc.problem == "" && len(p) != 0:
				t.Errorf("Verify: %v", p)
			case tc.problem != "" && (len(p) == 0 || !strings.Contains(p[0].What, tc.problem) || !strings.Contains(p[0].What, "no previous entry")):
				t.Errorf("Verify = %v, want %q named, with no previous entry", p, tc.problem)
			}
		})
	}
}
