package digest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// TestDigestsCoverEveryEntryOnce writes entries on both sides of period boundaries, one of
// them late (its transition lies two periods before its writing), runs the digest step at
// several times and twice at once, and checks that every entry is in exactly one digest, the
// one of the period in which it was written.
func TestDigestsCoverEveryEntryOnce(t *testing.T) {
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	run := func(at time.Time) []auditlog.Digest {
		t.Helper()
		d := env.Digester(notifytest.NewClock(at))
		// Shorter than the entries' retention: each digest must still outlive what it covers.
		d.Retention = 24 * time.Hour
		ds, err := d.Run(context.Background())
		if err != nil {
			t.Fatalf("digest step at %s: %v", at, err)
		}
		return ds
	}
	write := func(at time.Time, n int) {
		t.Helper()
		env.WriteClock.Set(at)
		env.Replay(t, "req-"+at.Format("150405.000"), env.ReadStream(t, n))
	}

	s.Submit(t, "evt-a", "", "+447700900111", map[string]string{"code": "AAA111"}, 15*time.Minute)
	write(base.Add(p-time.Millisecond), 1) // the last instant of period 0
	s.Step(t, "evt-a:sms:password_reset", time.Second, audittest.Lease)
	write(base.Add(p), 1) // the first instant of period 1
	var first []auditlog.Digest
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 2 { // two runs at once close period 0 once
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds := run(base.Add(p + audittest.DigestGrace))
			mu.Lock()
			first = append(first, ds...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(first) != 2 || first[0].Signature != first[1].Signature || !first[0].PeriodStart.Equal(base) {
		t.Fatalf("concurrent runs returned %d digests, want the same digest of period 0 twice: %+v", len(first), first)
	}
	// Not yet due: period 1 ends at base+2p, its grace runs after that.
	if ds := run(base.Add(2*p + audittest.DigestGrace - time.Millisecond)); len(ds) != 0 {
		t.Fatalf("a run before the grace closed %d periods", len(ds))
	}
	s.Step(t, "evt-a:sms:password_reset", time.Second, audittest.Accepted("sim-1"))
	s.Submit(t, "evt-b", "", "+447700900222", map[string]string{"code": "BBB222"}, 15*time.Minute)
	late := s.Clock.Now()
	write(base.Add(3*p+time.Second), 2) // late: stream lag of many periods
	later := run(base.Add(4*p + audittest.DigestGrace))
	if len(later) != 3 {
		t.Fatalf("catching up closed %d periods, want 3 (1, 2 empty, 3)", len(later))
	}

	all := append(first[:1], later...)
	var entries []auditlog.Entry
	for _, item := range env.ScanAudit(t) {
		if e, err := auditlog.FromItem(item); err == nil && e.EventID != "#digest" {
			entries = append(entries, e)
		}
	}
	// Each entry lies in exactly one digest's period, and each digest's signed tree is that
	// of the entries written in its period: so each entry is covered exactly once.
	covered := int64(0)
	for i, d := range all {
		if i > 0 && (d.PrevSignature != all[i-1].Signature || !d.PeriodStart.Equal(all[i-1].PeriodEnd)) {
			t.Errorf("digest %s does not follow %s", d.Period(), all[i-1].Period())
		}
		if !auditor.VerifySignature(&env.SigningKey.PublicKey, d) || !auditor.ManifestIntact(d) || d.Version != auditlog.DigestVersionTree {
			t.Errorf("digest %s (version %d) does not verify", d.Period(), d.Version)
		}
		var tree auditlog.PeriodTree
		for _, e := range entries {
			k := e.EventID + " " + e.Seq
			if !e.WrittenAt.Before(d.PeriodStart) && e.WrittenAt.Before(d.PeriodEnd) {
				tree.Add(auditlog.ManifestLine{EventID: e.EventID, Seq: e.Seq, NotificationID: e.NotificationID, Hash: e.Hash})
				if d.RetainUntil < e.RetainUntil {
					t.Errorf("digest %s expires at %d, before entry %s (%d)", d.Period(), d.RetainUntil, k, e.RetainUntil)
				}
			}
		}
		if tree.Size() != d.Count || tree.Root() != d.Root {
			t.Errorf("digest %s signs %d entries (root %s), its period holds %d (root %s)", d.Period(), d.Count, d.Root, tree.Size(), tree.Root())
		}
		covered += d.Count
	}
	for _, e := range entries {
		if e.At.Equal(late) && e.WrittenAt.Truncate(p) != base.Add(3*p) {
			t.Errorf("late entry %s %s belongs to the period of %s, want that of its writing", e.EventID, e.Seq, e.WrittenAt)
		}
	}
	if len(entries) != 4 || covered != 4 || !all[0].PeriodStart.Equal(base) {
		t.Errorf("%d entries, %d covered by digests from %s to %s; want 4 and 4", len(entries), covered, all[0].PeriodStart, all[len(all)-1].PeriodEnd)
	}
	b, err := auditor.Collect(context.Background(), env.Reader, base, base.Add(5*p))
	if err != nil {
		t.Fatal(err)
	}
	r := auditor.Check(b, auditor.CheckOptions{PublicKey: &env.SigningKey.PublicKey, Now: base.Add(4*p + audittest.DigestGrace), Grace: audittest.DigestGrace})
	if !r.OK() || r.Covered != 4 || r.Digests != 4 {
		t.Errorf("check = %+v, want OK with 4 entries covered by 4 digests", r)
	}
}

// TestDigestBeyondTheManifestCeiling digests one period of 20,000 entries, four times what a
// version 1 manifest item could hold, and verifies it: one small signed item covers them all.
// An entry deleted from the period afterwards is found.
func TestDigestBeyondTheManifestCeiling(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	entries := audittest.BulkEntries(20000, base, p)
	if err := audittest.WriteBulk(ctx, env.DB, env.Names.Audit, entries, 8); err != nil {
		t.Fatal(err)
	}
	now := base.Add(p + audittest.DigestGrace)
	ds, err := env.Digester(notifytest.NewClock(now)).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Count != 20000 || ds[0].Version != auditlog.DigestVersionTree {
		t.Fatalf("digest step wrote %+v, want one version 2 digest of 20000 entries", ds)
	}
	item, err := auditlog.DigestItem(ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if size := len(audittest.ItemText(item)); size > 2000 {
		t.Errorf("the digest item is %d bytes of text, want a small one whatever the period holds", size)
	}
	b, err := auditor.Collect(ctx, env.Reader, base, base.Add(p))
	if err != nil {
		t.Fatal(err)
	}
	opts := auditor.CheckOptions{PublicKey: &env.SigningKey.PublicKey, Now: now, Grace: audittest.DigestGrace}
	if r := auditor.Check(b, opts); !r.OK() || r.Covered != 20000 || r.Entries != 20000 {
		t.Fatalf("check of the 20000-entry period: covered %d of %d, problems %v", r.Covered, r.Entries, r.Problems)
	}
	b.Entries = b.Entries[1:]
	r := auditor.Check(b, opts)
	if want := "entries deleted: the signed digest of this period covers 20000 entries, only 19999 written in it are left (1 deleted)"; r.OK() || !strings.Contains(r.Problems[0].String(), want) {
		t.Errorf("check with one entry gone: %v\nwant the first problem to say %q", r.Problems, want)
	}
}

// TestDigestOfLedgeredAndIndexedEntries digests a period that holds both kinds of entries:
// 2,000 written as the audit writer writes them now (listed in ledger items, in no index) and
// 1,000 written before the ledgers existed (in the by_write_shard index): one digest covers
// all 3,000, and verify finds one of the ledgered entries deleted from the table afterwards.
func TestDigestOfLedgeredAndIndexedEntries(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	all := audittest.BulkBatchEntries(3000, base, p, 100)
	ledgered, legacy := all[:2000], all[2000:]
	if err := audittest.WriteBulkLedgered(ctx, env.DB, env.Names.Audit, ledgered, 4); err != nil {
		t.Fatal(err)
	}
	if err := audittest.WriteBulk(ctx, env.DB, env.Names.Audit, legacy, 4); err != nil {
		t.Fatal(err)
	}
	if n := len(env.ScanLedgers(t)); n != 20 {
		t.Fatalf("%d ledger items for 2,000 entries in batches of 100, want 20", n)
	}
	now := base.Add(p + audittest.DigestGrace)
	ds, err := env.Digester(notifytest.NewClock(now)).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Count != 3000 {
		t.Fatalf("digest step wrote %+v, want one digest of 3000 entries", ds)
	}
	opts := auditor.CheckOptions{PublicKey: &env.SigningKey.PublicKey, Now: now, Grace: audittest.DigestGrace}
	b, err := auditor.Collect(ctx, env.Reader, base, base.Add(p))
	if err != nil {
		t.Fatal(err)
	}
	if r := auditor.Check(b, opts); !r.OK() || r.Covered != 3000 {
		t.Fatalf("check: covered %d of %d, problems %v", r.Covered, r.Entries, r.Problems)
	}
	gone := ledgered[1234]
	if _, err := env.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(env.Names.Audit), Key: auditlog.ItemKey(gone.EventID, gone.Seq)}); err != nil {
		t.Fatal(err)
	}
	b, err = auditor.Collect(ctx, env.Reader, base, base.Add(p))
	if err != nil {
		t.Fatal(err)
	}
	if r := auditor.Check(b, opts); r.OK() || !strings.Contains(r.Problems[0].String(), "(1 deleted)") {
		t.Errorf("check with a ledgered entry deleted: %v, want it found deleted", r.Problems)
	}
}
