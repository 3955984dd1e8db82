package auditlog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/infra/auditfixture"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// failAfter lets the first n PutItem calls through and fails every later one, as a batch that
// dies part-way (a timeout, a throttled write) does.
type failAfter struct {
	auditlog.WriterAPI
	n int
}

func (f *failAfter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.n <= 0 {
		return nil, errors.New("injected: the batch died here")
	}
	f.n--
	return f.WriterAPI.PutItem(ctx, in, o...)
}

// TestLedgerListsEachEntryOnce writes stream batches through the audit handler, one of which
// dies after its ledger and two of its entries and is retried later under another stamp, and
// checks that the period reads (WrittenIn) return every stored entry exactly once, under the
// written_at it was stored with, never one a ledger lists but the table does not hold, and
// that no entry is put before a ledger lists it.
func TestLedgerListsEachEntryOnce(t *testing.T) {
	env := audittest.NewEnv(t)
	t0 := time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := notifytest.NewClock(t0)
	failing := &failAfter{WriterAPI: env.DB, n: 3} // the ledger, then 2 of the 5 entries
	h := &audit.Handler{Writer: &auditlog.Writer{DB: failing, Table: env.Names.Audit, Clock: clock}, Clock: clock}
	recs := auditfixture.LifecycleRecords("k1:sms:password_reset", "evt-1", "01JA")
	resp, _ := h.Handle(context.Background(), eventOf(recs))
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("the failing batch reported %+v, want its third record", resp.BatchItemFailures)
	}
	if n := len(env.ScanLedgers(t)); n != 1 {
		t.Fatalf("%d ledgers after the failed batch, want 1 (written before any entry)", n)
	}
	// Lambda retries the batch a minute later, from the failed record (here: all of it).
	clock.Set(t0.Add(time.Minute))
	failing.n = 1 << 30
	if resp, _ := h.Handle(context.Background(), eventOf(recs)); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retry failed: %+v", resp.BatchItemFailures)
	}
	// A third batch whose ledger lists a key it never stores: it dies after the ledger.
	failing.n = 1
	other := auditfixture.LifecycleRecords("k2:sms:password_reset", "evt-2", "01JB")
	clock.Set(t0.Add(2 * time.Minute))
	h.Handle(context.Background(), eventOf(other[:1]))

	stored := map[string]time.Time{}
	for _, it := range env.ScanAudit(t) {
		e, err := auditlog.FromItem(it)
		if err != nil {
			t.Fatal(err)
		}
		stored[e.EventID+" "+e.Seq] = e.WrittenAt
	}
	if len(stored) != len(recs) {
		t.Fatalf("table holds %d entries, want %d", len(stored), len(recs))
	}
	got := map[string]time.Time{}
	for e, err := range auditlog.WrittenIn(context.Background(), env.DB, env.Names.Audit, t0, t0.Add(time.Hour)) {
		if err != nil {
			t.Fatal(err)
		}
		k := e.EventID + " " + e.Seq
		if _, dup := got[k]; dup {
			t.Errorf("%s read twice", k)
		}
		got[k] = e.WrittenAt
	}
	if fmt.Sprint(got) != fmt.Sprint(stored) {
		t.Errorf("WrittenIn = %v\nstored    %v", got, stored)
	}
	// The first two entries keep the failed attempt's stamp, the rest the retry's.
	early := 0
	for _, at := range got {
		if at.Equal(t0) {
			early++
		}
	}
	if early != 2 {
		t.Errorf("%d entries stamped by the failed attempt, want 2", early)
	}
	// Each period holds its own: [t0, t0+1m) the two, [t0+1m, ...) the rest.
	n := 0
	for _, err := range auditlog.WrittenIn(context.Background(), env.DB, env.Names.Audit, t0, t0.Add(time.Minute)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("the first minute holds %d entries, want 2", n)
	}
	if e, ok, err := auditlog.EarliestWrittenIn(context.Background(), env.DB, env.Names.Audit, t0.Add(-time.Hour), t0.Add(time.Hour)); err != nil || !ok || !e.WrittenAt.Equal(t0) {
		t.Errorf("EarliestWrittenIn = %s %v %v, want %s", tables.FormatTime(e.WrittenAt), ok, err, tables.FormatTime(t0))
	}
}

func eventOf(recs []events.DynamoDBEventRecord) events.DynamoDBEvent {
	return events.DynamoDBEvent{Records: recs}
}

// lostAnswer commits the first PutItem of a ledger item, then answers it as an SDK retry of
// it would be answered: ConditionalCheckFailed, the write committed and its answer lost.
type lostAnswer struct {
	auditlog.WriterAPI
	done bool
}

func (f *lostAnswer) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := f.WriterAPI.PutItem(ctx, in, o...)
	if err != nil || f.done || !auditlog.IsLedgerItem(in.Item) {
		return out, err
	}
	f.done = true
	return f.WriterAPI.PutItem(ctx, in, o...)
}

// TestLedgerWriteWhoseAnswerWasLost: a ledger put the SDK retried after its answer was lost
// meets its own item (ConditionalCheckFailed) and is a success, so the batch's entries are
// written at once; before, the batch failed there and, on an emulator whose stream mapping
// passes a failed batch, its entries were never written (game day dynamodb-lost-writes: "chain
// starts at version 2").
func TestLedgerWriteWhoseAnswerWasLost(t *testing.T) {
	env := audittest.NewEnv(t)
	clock := notifytest.NewClock(time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC))
	db := &lostAnswer{WriterAPI: env.DB}
	h := &audit.Handler{Writer: &auditlog.Writer{DB: db, Table: env.Names.Audit, Clock: clock}, Clock: clock}
	recs := auditfixture.LifecycleRecords("k1:sms:password_reset", "evt-1", "01JA")
	resp, err := h.Handle(context.Background(), eventOf(recs))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch with a ledger answer lost: %+v, %v; want every record written", resp.BatchItemFailures, err)
	}
	if !db.done {
		t.Fatal("the ledger's put was never answered as lost: the test proves nothing")
	}
	if n, want := len(env.ScanAudit(t)), len(recs); n != want {
		t.Fatalf("%d entries stored, want %d", n, want)
	}
}
