package archive_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resetnotify/resetnotify/infra/archivetest"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// hot is the tests' hot window: two hours of one-minute periods.
const hot = 2 * time.Hour

// periods writes n bulk entries over k periods from base, each with the drop_after the writer
// gives it under hot (none when legacy), and closes their digests.
func periods(t *testing.T, env *audittest.Env, base time.Time, n, k int, legacy bool) []auditlog.Digest {
	t.Helper()
	p := audittest.DigestPeriod
	entries := audittest.BulkEntries(n, base, time.Duration(k)*p)
	for i := range entries {
		if !legacy {
			entries[i].DropAfter = auditlog.DropAfter(entries[i], hot)
		}
	}
	if err := audittest.WriteBulk(context.Background(), env.DB, env.Names.Audit, entries, 4); err != nil {
		t.Fatal(err)
	}
	ds, err := env.Digester(notifytest.NewClock(base.Add(time.Duration(k)*p + audittest.DigestGrace))).Run(context.Background())
	if err != nil || len(ds) != k {
		t.Fatalf("digest step: %d digests, %v; want %d", len(ds), err, k)
	}
	return ds
}

// TestArchiveWritesSignedPartsOnceAndInOrder archives three periods into parts of a few KB,
// checks every part and the signed manifest chained to each digest, and runs the step again:
// nothing is put twice, and the archive items record the periods in order.
func TestArchiveWritesSignedPartsOnceAndInOrder(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	ds := periods(t, env, base, 600, 3, false)
	bucket := archivetest.NewBucket()
	now := base.Add(3*p + audittest.DigestGrace)
	a := env.Archiver(bucket, notifytest.NewClock(now), hot)
	a.PartBytes = 16 << 10
	items, err := a.Run(ctx)
	if err != nil || len(items) != 3 {
		t.Fatalf("archive run: %d periods, %v; want 3", len(items), err)
	}
	puts := bucket.Puts
	for i, it := range items {
		d := ds[i]
		if !it.PeriodStart.Equal(d.PeriodStart) || it.Count != d.Count || it.Objects < 2 {
			t.Errorf("archive item %d = %+v, want the period of digest %s with several parts", i, it, d.Period())
		}
		raw, ok := bucket.Latest(it.ManifestKey)
		if !ok {
			t.Fatalf("no manifest at %s", it.ManifestKey)
		}
		var m archive.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		sig, _ := base64.StdEncoding.DecodeString(m.Signature)
		if !ecdsa.VerifyASN1(&env.SigningKey.PublicKey, archive.ManifestSum(m), sig) {
			t.Errorf("manifest of %s: signature does not verify", it.Period())
		}
		if m.DigestSignature != d.Signature || m.TreeRoot != d.Root || m.Count != d.Count {
			t.Errorf("manifest of %s is not chained to its digest", it.Period())
		}
		var tree auditlog.PeriodTree
		prevLast := ""
		for _, o := range m.Objects {
			body, _ := bucket.Latest(o.Key)
			if len(body) != int(o.Bytes) || !strings.HasPrefix(o.Key, archive.PeriodPrefix(d.PeriodStart)) || o.First <= prevLast {
				t.Errorf("object %s: %d bytes (manifest %d), first %q after %q", o.Key, len(body), o.Bytes, o.First, prevLast)
			}
			prevLast = o.Last
			for _, line := range strings.Split(strings.TrimSpace(string(gunzip(t, body))), "\n") {
				e, err := auditlog.EntryFromJSON([]byte(line))
				if err != nil {
					t.Fatal(err)
				}
				tree.Add(auditlog.LineOf(e))
			}
		}
		if tree.Root() != d.Root || tree.Size() != d.Count {
			t.Errorf("the archived entries of %s do not rebuild its signed tree", d.Period())
		}
	}
	again, err := env.Archiver(bucket, notifytest.NewClock(now.Add(time.Minute)), hot).Run(ctx)
	if err != nil || len(again) != 0 || bucket.Puts != puts {
		t.Errorf("second run archived %d periods with %d more puts (%v); want none", len(again), bucket.Puts-puts, err)
	}
	// Idempotent by period too, and write-once: archiving a period again is refused at every
	// key (If-None-Match: *), adds no version, and keeps the versions the first run recorded.
	first, _ := bucket.Latest(archive.PartKey(ds[0].PeriodStart, 0))
	again1, err := a.Archive(ctx, ds[0])
	if err != nil {
		t.Fatal(err)
	}
	if second, _ := bucket.Latest(archive.PartKey(ds[0].PeriodStart, 0)); string(second) != string(first) {
		t.Error("archiving a period again wrote other bytes")
	}
	checkVersions(t, bucket, items[0])
	if !maps.Equal(again1.Versions, items[0].Versions) {
		t.Errorf("archiving a period again recorded versions %v, want the first run's %v", again1.Versions, items[0].Versions)
	}
}

// checkVersions: the item records a version for the manifest and every part, and each key
// has exactly that one version.
func checkVersions(t *testing.T, bucket *archivetest.Bucket, it archive.Item) {
	t.Helper()
	if len(it.Versions) != it.Objects+1 || it.Versions[it.ManifestKey] == "" {
		t.Errorf("archive item of %s records versions %v, want one for each of %d parts and the manifest", it.Period(), it.Versions, it.Objects)
	}
	for key := range it.Versions {
		if n := bucket.Versions(key); n != 1 {
			t.Errorf("%s has %d versions, want 1 (write-once)", key, n)
		}
	}
}

// TestARunThatStoppedBeforeItsItemResumes: parts and manifest already put by a run that
// stopped before its archive item (deleted here) are found taken by the next run's
// write-once puts; it keeps their versions, puts nothing new, and records the period.
func TestARunThatStoppedBeforeItsItemResumes(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	periods(t, env, base, 200, 1, false)
	bucket := archivetest.NewBucket()
	now := base.Add(p + audittest.DigestGrace)
	a := env.Archiver(bucket, notifytest.NewClock(now), hot)
	a.PartBytes = 16 << 10
	items, err := a.Run(ctx)
	if err != nil || len(items) != 1 {
		t.Fatalf("archive run: %d periods, %v", len(items), err)
	}
	env.DeleteArchiveItem(t, items[0].PeriodStart)
	b := env.Archiver(bucket, notifytest.NewClock(now.Add(time.Minute)), hot)
	b.PartBytes = a.PartBytes
	again, err := b.Run(ctx)
	if err != nil || len(again) != 1 {
		t.Fatalf("resumed run: %d periods, %v", len(again), err)
	}
	checkVersions(t, bucket, again[0])
	if !maps.Equal(again[0].Versions, items[0].Versions) || again[0].ManifestSHA256 != items[0].ManifestSHA256 {
		t.Errorf("resumed run recorded versions %v (manifest %s), want the stored ones %v (%s)",
			again[0].Versions, again[0].ManifestSHA256, items[0].Versions, items[0].ManifestSHA256)
	}
}

// failingS3 refuses every put.
type failingS3 struct{}

func (failingS3) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return nil, errors.New("AccessDenied")
}

func (failingS3) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return nil, errors.New("AccessDenied")
}

// TestNothingExpiresBeforeItIsArchived: with the bucket unreachable until near the end of the
// hot window, the step pushes the period's drop_after out, so TTL (ExpireAudit) takes nothing
// at the window's end; once the bucket answers, the period is archived and then expires.
func TestNothingExpiresBeforeItIsArchived(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	periods(t, env, base, 100, 1, false)
	early := base.Add(p + audittest.DigestGrace)
	if _, err := env.Archiver(failingS3{}, notifytest.NewClock(early), hot).Run(ctx); err == nil {
		t.Fatal("a run whose puts fail reported no error")
	}
	near := base.Add(hot - 30*time.Minute)
	a := env.Archiver(failingS3{}, notifytest.NewClock(near), hot)
	a.RescueMargin = time.Hour
	if _, err := a.Run(ctx); err == nil {
		t.Fatal("a run whose puts fail reported no error")
	}
	if n := env.ExpireAudit(t, base.Add(hot+p)); n != 0 {
		t.Fatalf("TTL took %d entries of a period not archived, at the end of its hot window", n)
	}
	later := base.Add(hot + 10*time.Minute)
	items, err := env.Archiver(archivetest.NewBucket(), notifytest.NewClock(later), hot).Run(ctx)
	if err != nil || len(items) != 1 {
		t.Fatalf("archive once the bucket answers: %d, %v", len(items), err)
	}
	if n := env.ExpireAudit(t, near.Add(3*time.Hour)); n != 100 {
		t.Errorf("TTL took %d entries of the archived period past its pushed-out drop_after, want 100", n)
	}
}

// TestUpgradeFromAWholeRetentionTable: entries written before the hot window (no drop_after)
// never expire until their period is archived; then the step gives them one, at least an
// hour away, and TTL takes them; digests and archive items stay.
func TestUpgradeFromAWholeRetentionTable(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	periods(t, env, base, 200, 2, true)
	upgraded := base.Add(30 * 24 * time.Hour) // the stack's periods are long past any hot window
	if n := env.ExpireAudit(t, upgraded); n != 0 {
		t.Fatalf("TTL took %d entries with no drop_after", n)
	}
	items, err := env.Archiver(archivetest.NewBucket(), notifytest.NewClock(upgraded), hot).Run(ctx)
	if err != nil || len(items) != 2 {
		t.Fatalf("archive the old periods: %d, %v", len(items), err)
	}
	if n := env.ExpireAudit(t, upgraded.Add(30*time.Minute)); n != 0 {
		t.Errorf("TTL took %d entries within the hour after archiving, want none", n)
	}
	if n := env.ExpireAudit(t, upgraded.Add(61*time.Minute)); n != 200 {
		t.Errorf("TTL took %d entries after the hour, want 200", n)
	}
	left := env.ScanAudit(t)
	if len(left) != 4 { // 2 digests, 2 archive items
		t.Errorf("%d items left, want the 2 digests and 2 archive items", len(left))
	}
}

// TestArchiveRefusesAPeriodThatNoLongerMatchesItsDigest: an entry deleted from the table
// after its period was signed is never archived as if nothing happened.
func TestArchiveRefusesAPeriodThatNoLongerMatchesItsDigest(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	periods(t, env, base, 40, 1, false)
	env.ExpireAudit(t, time.Unix(0, 0)) // nothing
	items := env.ScanAudit(t)
	deleteFirstEntry(t, env, items)
	bucket := archivetest.NewBucket()
	_, err := env.Archiver(bucket, notifytest.NewClock(base.Add(2*p)), hot).Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "not archived") || bucket.Puts != 0 {
		t.Errorf("archive of a changed period: %v, %d puts; want a refusal and no put", err, bucket.Puts)
	}
}

// TestNothingExpiresBeforeItIsArchivedWithLedgers is TestNothingExpiresBeforeItIsArchived for
// entries written as the audit writer writes them now, listed in ledger items: the rescue
// pushes out the ledgers' drop_after with the entries' (an entry whose ledger expired would
// no longer be found by the period's reads), and the period is archived whole afterwards.
func TestNothingExpiresBeforeItIsArchivedWithLedgers(t *testing.T) {
	env := audittest.NewEnv(t)
	ctx := context.Background()
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	entries := audittest.BulkBatchEntries(100, base, p, 25)
	for i := range entries {
		entries[i].DropAfter = auditlog.DropAfter(entries[i], hot)
	}
	if err := audittest.WriteBulkLedgered(ctx, env.DB, env.Names.Audit, entries, 4); err != nil {
		t.Fatal(err)
	}
	if n := len(env.ScanLedgers(t)); n != 4 {
		t.Fatalf("%d ledgers, want 4", n)
	}
	if ds, err := env.Digester(notifytest.NewClock(base.Add(p + audittest.DigestGrace))).Run(ctx); err != nil || len(ds) != 1 || ds[0].Count != 100 {
		t.Fatalf("digest step: %+v, %v; want one digest of 100 entries", ds, err)
	}
	near := base.Add(hot - 30*time.Minute)
	a := env.Archiver(failingS3{}, notifytest.NewClock(near), hot)
	a.RescueMargin = time.Hour
	if _, err := a.Run(ctx); err == nil {
		t.Fatal("a run whose puts fail reported no error")
	}
	if n := env.ExpireAudit(t, base.Add(hot+p)); n != 0 {
		t.Fatalf("TTL took %d items (entries or ledgers) of a period not archived, at the end of its hot window", n)
	}
	items, err := env.Archiver(archivetest.NewBucket(), notifytest.NewClock(base.Add(hot+10*time.Minute)), hot).Run(ctx)
	if err != nil || len(items) != 1 || items[0].Count != 100 {
		t.Fatalf("archive once the bucket answers: %+v, %v; want the 100 entries", items, err)
	}
	if n := env.ExpireAudit(t, near.Add(3*time.Hour)); n != 104 {
		t.Errorf("TTL took %d items of the archived period past its pushed-out drop_after, want 104 (100 entries, 4 ledgers)", n)
	}
}
