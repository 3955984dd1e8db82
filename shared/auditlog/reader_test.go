package auditlog_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/audittest"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// spreadWrite is one entry of spreadEntries: its transition time and how long after it the
// writer stored it (negative: the writer's clock was behind).
type spreadWrite struct {
	key   string
	at    time.Time
	after time.Duration
	gap   bool
}

// writeSpread stores one first-version entry per write, each at its own written_at, through
// the real writer, and returns the entries as stored.
func writeSpread(t *testing.T, env *audittest.Env, writes []spreadWrite) []auditlog.Entry {
	t.Helper()
	clock := notifytest.NewClock(time.Time{})
	w := &auditlog.Writer{DB: env.DB, Table: env.Names.Audit, Clock: clock}
	var out []auditlog.Entry
	for _, s := range writes {
		e := auditlog.Entry{
			EventID: "evt-" + s.key, Seq: auditlog.Seq(s.key+":sms:password_reset", 1), NotificationID: "n-" + s.key,
			Version: 1, At: s.at, Day: s.at.Format(auditlog.DayLayout), ToState: "queued", Reason: "ADMITTED",
			RetainUntil: s.at.Add(400 * 24 * time.Hour).Unix(),
		}
		if s.gap {
			e.ToState, e.Reason, e.GapFrom, e.Reconstructed, e.Replayed = auditlog.StateGap, auditlog.ReasonRecordsLost, 1, true, true
		}
		clock.Set(s.at.Add(s.after))
		stored, outcome, err := w.Write(context.Background(), e)
		if err != nil || outcome != auditlog.Written {
			t.Fatalf("write %s: %v %v", s.key, outcome, err)
		}
		out = append(out, stored)
	}
	return out
}

// keysOf returns the sorted event IDs of es.
func keysOf(es []auditlog.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.EventID)
	}
	sort.Strings(out)
	return out
}

func collect(t *testing.T, seq func(func(auditlog.Entry, error) bool)) []auditlog.Entry {
	t.Helper()
	var out []auditlog.Entry
	for e, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Unexpected) > 0 {
			t.Errorf("%s read back with unexpected attributes %v", e.EventID, e.Unexpected)
		}
		out = append(out, e)
	}
	return out
}

// TestRangeAndWrittenInAcrossShardsAndDays writes entries over three days, spread over the
// write shards, some of them written late (a replay a day later, a gap entry) or with the
// writer's clock behind, and checks that Range and WrittenIn each return exactly the entries
// of their span.
func TestRangeAndWrittenInAcrossShardsAndDays(t *testing.T) {
	env := audittest.NewEnv(t)
	day1 := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	var writes []spreadWrite
	for i := range 120 {
		// Every 36 minutes over three days: 40 entries a day, each written a second later.
		writes = append(writes, spreadWrite{key: fmt.Sprintf("k%03d", i), at: day1.Add(time.Duration(i) * 36 * time.Minute), after: time.Second})
	}
	// In the range of day 1, 10:00–14:00, but written late: by a replay 23 hours later (on day
	// 2), and 30 seconds before at, before the range starts, by a writer whose clock was behind.
	writes = append(writes,
		spreadWrite{key: "late", at: day1.Add(11 * time.Hour), after: 23 * time.Hour},
		spreadWrite{key: "skewed", at: day1.Add(10*time.Hour + 10*time.Second), after: -30 * time.Second},
		// A gap entry is written when it is found: its at is its written_at.
		spreadWrite{key: "gap", at: day1.Add(12 * time.Hour), gap: true},
	)
	stored := writeSpread(t, env, writes)

	// Entries are listed in ledger items (no index copy, no write_shard), whose partitions
	// spread over the shards of each write day.
	shards := map[string]bool{}
	for _, item := range env.ScanAudit(t) {
		if _, ok := item[tables.AuditWriteShard]; ok {
			t.Errorf("entry %v carries write_shard: it would take an index write", item[tables.AuditSeq])
		}
	}
	for _, item := range env.ScanLedgers(t) {
		shards[item[tables.AuditEventID].(*ddbtypes.AttributeValueMemberS).Value] = true
	}
	if len(shards) < 2*auditlog.WriteShards {
		t.Errorf("ledgers landed on %d partitions over 3 days, want at least %d", len(shards), 2*auditlog.WriteShards)
	}

	from, to := day1.Add(10*time.Hour), day1.Add(14*time.Hour)
	var wantRange, wantWritten []auditlog.Entry
	wFrom, wTo := day1.Add(30*time.Hour), day1.Add(40*time.Hour) // day 2, 06:00–16:00
	for _, e := range stored {
		if !e.At.Before(from) && e.At.Before(to) {
			wantRange = append(wantRange, e)
		}
		if !e.WrittenAt.Before(wFrom) && e.WrittenAt.Before(wTo) {
			wantWritten = append(wantWritten, e)
		}
	}
	reader := &auditlog.Reader{DB: env.DB, Table: env.Names.Audit}
	got := keysOf(collect(t, reader.Range(context.Background(), from, to)))
	if want := keysOf(wantRange); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Range = %v\nwant    %v", got, want)
	}
	for _, k := range []string{"evt-late", "evt-skewed", "evt-gap"} {
		if !contains(got, k) {
			t.Errorf("Range lacks %s", k)
		}
	}
	got = keysOf(collect(t, auditlog.WrittenIn(context.Background(), env.DB, env.Names.Audit, wFrom, wTo)))
	if want := keysOf(wantWritten); fmt.Sprint(got) != fmt.Sprint(want) || !contains(got, "evt-late") {
		t.Errorf("WrittenIn = %v\nwant        %v (with evt-late)", got, want)
	}
	// A range spanning all three days returns every entry.
	if got := collect(t, reader.Range(context.Background(), day1, day1.Add(72*time.Hour))); len(got) != len(stored) {
		t.Errorf("Range over three days = %d entries, want %d", len(got), len(stored))
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestEntryHashIgnoresWriteShard checks that the index attribute is outside the hash: an
// entry's hash is the same whichever shard holds it, so entries stored before write_shard
// existed keep their hashes.
func TestEntryHashIgnoresWriteShard(t *testing.T) {
	e := auditlog.Entry{EventID: "evt", Seq: auditlog.Seq("k", 1), Version: 1, WriteDay: "2030-03-01"}
	a, err := auditlog.Link(e, auditlog.GenesisHash)
	if err != nil {
		t.Fatal(err)
	}
	item := auditlog.Item(a)
	if _, ok := item[tables.AuditWriteShard]; !ok {
		t.Fatal("Item stores no write_shard")
	}
	item[tables.AuditWriteShard] = &ddbtypes.AttributeValueMemberS{Value: "2030-03-01#99"}
	back, err := auditlog.FromItem(item)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := auditlog.ComputeHash(back.PrevHash, back); err != nil || h != a.Hash || len(back.Unexpected) != 0 {
		t.Errorf("hash after a shard change = %s (%v), unexpected %v; want %s", h, err, back.Unexpected, a.Hash)
	}
}
