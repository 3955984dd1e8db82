package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/auditfixture"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
)

func newHandler(db *auditfixture.Table) *Handler {
	return &Handler{
		Writer:   &auditlog.Writer{DB: db, Table: "audit"},
		Function: "audit", FunctionVersion: "$LATEST",
		Clock: notifytest.NewClock(auditfixture.T0.Add(3 * time.Hour)),
	}
}

func invoke(t *testing.T, h *Handler, reqID string, recs ...events.DynamoDBEventRecord) events.DynamoDBEventResponse {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: reqID})
	resp, err := h.Handle(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	return resp
}

// entries returns every entry db holds, in timeline order.
func entries(db *auditfixture.Table) []auditlog.Entry {
	var out []auditlog.Entry
	for _, item := range db.Stored() {
		e, err := auditlog.FromItem(item)
		if err != nil {
			panic(err)
		}
		out = append(out, e)
	}
	return auditlog.Sorted(out)
}

type link struct {
	Seq         string
	To          notify.State
	Linked      bool // prev_hash is the previous entry's hash (genesis for the first)
	PrevMissing bool
}

func links(es []auditlog.Entry) []link {
	out := make([]link, len(es))
	for i, e := range es {
		want := auditlog.GenesisHash
		if i > 0 && es[i-1].NotificationID == e.NotificationID {
			want = es[i-1].Hash
		}
		out[i] = link{Seq: e.Seq, To: e.ToState, Linked: e.PrevHash == want, PrevMissing: e.PrevMissing}
	}
	return out
}

func TestHandlerWritesAChain(t *testing.T) {
	db := auditfixture.NewTable()
	h := newHandler(db)
	recs := auditfixture.LifecycleRecords("evt-1:sms:password_reset", "evt-1", "01JA")
	if resp := invoke(t, h, "req-1", recs...); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures: %+v", resp.BatchItemFailures)
	}
	got := entries(db)
	want := []link{
		{"evt-1:sms:password_reset#0000000001", "accepted", true, false},
		{"evt-1:sms:password_reset#0000000002", "dispatching", true, false},
		{"evt-1:sms:password_reset#0000000003", "sent", true, false},
		{"evt-1:sms:password_reset#0000000004", "delivered", true, false},
		{"evt-1:sms:password_reset#0000000004#purged", "purged", true, false},
	}
	if diff := cmp.Diff(want, links(got)); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
	if got[0].WrittenBy != "audit:$LATEST/req-1" || got[0].Actor != "fn-accepted:1/req-1" {
		t.Errorf("written_by = %q, actor = %q; want the audit function and the record's actor", got[0].WrittenBy, got[0].Actor)
	}
}

// TestHandlerNoFailuresJSON checks the JSON of a batch with nothing to retry: an empty list,
// never null, which a LocalStack-compatible emulator's stream poller fails on.
func TestHandlerNoFailuresJSON(t *testing.T) {
	for name, recs := range map[string][]events.DynamoDBEventRecord{
		"empty":     nil,
		"lifecycle": auditfixture.LifecycleRecords("evt-1:sms:password_reset", "evt-1", "01JA"),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(invoke(t, newHandler(auditfixture.NewTable()), "req-1", recs...))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != `{"batchItemFailures":[]}` {
				t.Errorf("batch response %s, want {\"batchItemFailures\":[]}", b)
			}
		})
	}
}

// TestHandlerReplayWritesNothing delivers a batch twice, as Lambda does after a failure.
func TestHandlerReplayWritesNothing(t *testing.T) {
	for _, returnOld := range []bool{true, false} {
		t.Run(map[bool]string{true: "old item returned", false: "old item read"}[returnOld], func(t *testing.T) {
			db := auditfixture.NewTable()
			db.ReturnOld = returnOld
			h := newHandler(db)
			recs := auditfixture.LifecycleRecords("k1", "evt-1", "01JA")
			invoke(t, h, "req-1", recs...)
			before := entries(db)
			puts := db.Puts
			if resp := invoke(t, h, "req-2", recs...); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures on replay: %+v", resp.BatchItemFailures)
			}
			// The retried batch lists its keys in a ledger of its own before it finds them
			// stored: that ledger's stamp matches none of them, so readers skip them there.
			if db.Puts != puts+1 || len(db.Ledgers()) != 2 {
				t.Errorf("replay stored %d new items and the table holds %d ledgers, want its ledger alone (and 2)", db.Puts-puts, len(db.Ledgers()))
			}
			if diff := cmp.Diff(before, entries(db)); diff != "" {
				t.Errorf("replay changed the table (-before +after):\n%s", diff)
			}
		})
	}
}

// TestHandlerStopsAtFirstFailure checks that the first failing record is reported and that
// nothing after it is written, so Lambda resumes from it in order.
func TestHandlerStopsAtFirstFailure(t *testing.T) {
	db := auditfixture.NewTable()
	db.FailPut = "k1#0000000002"
	h := newHandler(db)
	recs := auditfixture.LifecycleRecords("k1", "evt-1", "01JA")
	resp := invoke(t, h, "req-1", recs...)
	want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: recs[1].Change.SequenceNumber}}
	if diff := cmp.Diff(want, resp.BatchItemFailures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if got := len(entries(db)); got != 1 {
		t.Errorf("%d entries written, want only the one before the failure", got)
	}
	// Lambda delivers the batch again from the failed record.
	db.FailPut = ""
	if resp := invoke(t, h, "req-2", recs[1:]...); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures on retry: %+v", resp.BatchItemFailures)
	}
}

func TestHandlerReportsMalformedRecord(t *testing.T) {
	db := auditfixture.NewTable()
	recs := auditfixture.LifecycleRecords("k1", "evt-1", "01JA")
	recs[2].Change.NewImage = nil
	resp := invoke(t, newHandler(db), "req-1", recs...)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != recs[2].Change.SequenceNumber {
		t.Fatalf("failures = %+v, want record 3", resp.BatchItemFailures)
	}
}

// TestWriterPrevMissing starts auditing in the middle of a chain.
func TestWriterPrevMissing(t *testing.T) {
	db := auditfixture.NewTable()
	recs := auditfixture.LifecycleRecords("k1", "evt-1", "01JA")
	invoke(t, newHandler(db), "req-1", recs[2:]...)
	got := entries(db)
	want := []link{
		{"k1#0000000003", "sent", true, true},
		{"k1#0000000004", "delivered", true, false},
		{"k1#0000000004#purged", "purged", true, false},
	}
	if diff := cmp.Diff(want, links(got)); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
}

// TestWriterKeyReadmittedAfterPurge admits the same key again after its first record was
// purged: the second notification's entries must be kept, under disambiguated seqs.
func TestWriterKeyReadmittedAfterPurge(t *testing.T) {
	db := auditfixture.NewTable()
	h := newHandler(db)
	invoke(t, h, "req-1", auditfixture.LifecycleRecords("k1", "evt-1", "01JA")...)
	second := auditfixture.LifecycleRecords("k1", "evt-1", "01JB")
	invoke(t, h, "req-2", second...)
	invoke(t, h, "req-3", second...) // and a replay of it
	var seqs []string
	for _, e := range entries(db) {
		if e.NotificationID == "01JB" {
			seqs = append(seqs, e.Seq)
		}
	}
	want := []string{
		"k1#0000000001#01JB", "k1#0000000002#01JB", "k1#0000000003#01JB", "k1#0000000004#01JB", "k1#0000000004#01JB#purged",
	}
	if diff := cmp.Diff(want, seqs); diff != "" {
		t.Errorf("second notification's seqs (-want +got):\n%s", diff)
	}
	if got := len(entries(db)); got != 10 {
		t.Errorf("%d entries, want 10", got)
	}
}

// TestWriterStampsTheHotWindow: each entry's drop_after (the table's TTL) is its written_at
// plus the hot window, never past retain_until; without a hot window it is retain_until. It is
// no field of the entry: not in its hash, nor in its JSON.
func TestWriterStampsTheHotWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		hot  time.Duration
	}{{"35 days", 35 * 24 * time.Hour}, {"none", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			db := auditfixture.NewTable()
			h := newHandler(db)
			h.Retention = auditlog.DefaultRetention
			h.Writer.Hot = tc.hot
			invoke(t, h, "req-1", auditfixture.LifecycleRecords("evt-1:sms:password_reset", "evt-1", "01JA")...)
			es := entries(db)
			if len(es) < 4 {
				t.Fatalf("%d entries, want the lifecycle's", len(es))
			}
			for _, e := range es {
				want := e.WrittenAt.Add(tc.hot).Unix()
				if tc.hot == 0 {
					want = e.RetainUntil
				}
				if e.DropAfter != want || e.RetainUntil == 0 {
					t.Errorf("%s: drop_after %d, want %d (retain_until %d)", e.Seq, e.DropAfter, want, e.RetainUntil)
				}
				if h, _ := auditlog.ComputeHash(e.PrevHash, e); h != e.Hash || strings.Contains(string(auditlog.EntryJSON(e)), "drop_after") {
					t.Errorf("%s: drop_after changed the hash or is exported", e.Seq)
				}
			}
		})
	}
}

// TestHandlerLogsPerBatch checks the audit function's log bytes: one summary line and one
// AuditEntries line per outcome for a whole batch, not a line and a metric per entry, and no
// field of an entry in the log.
func TestHandlerLogsPerBatch(t *testing.T) {
	db := auditfixture.NewTable()
	h := newHandler(db)
	var out strings.Builder
	h.Log = obs.NewLogger(&out, slog.LevelInfo)
	h.Metrics = &obs.Metrics{W: &out, Function: "audit"}
	var recs []events.DynamoDBEventRecord
	for _, id := range []string{"1", "2", "3"} {
		recs = append(recs, auditfixture.LifecycleRecords("evt-"+id+":sms:password_reset", "evt-"+id, "01JA"+id)...)
	}
	invoke(t, h, "req-1", recs...)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for a batch of %d records, want 2 (one metric line, one summary):\n%s", len(lines), len(recs), out.String())
	}
	var metric, summary map[string]any
	for _, l := range lines {
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, l)
		}
		if _, ok := doc["_aws"]; ok {
			metric = doc
		} else {
			summary = doc
		}
	}
	if vs, _ := metric["AuditEntries"].([]any); len(vs) != len(recs) || metric["Outcome"] != "written" {
		t.Errorf("metric line %v: want %d AuditEntries samples, outcome written", metric, len(recs))
	}
	if summary["msg"] != "audit batch" || summary["written"] != float64(len(recs)) || summary["records"] != float64(len(recs)) {
		t.Errorf("summary line %v: want audit batch, %d records, %d written", summary, len(recs), len(recs))
	}
	if strings.Contains(out.String(), "evt-") {
		t.Errorf("the log names an event: %s", out.String())
	}
}
