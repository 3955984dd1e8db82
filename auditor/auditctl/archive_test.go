package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/archivetest"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// archivedEnv is three one-minute periods of bulk entries, digested, archived into an
// in-memory bucket, and then expired from the table by a one-day hot window: the auditor's
// clock is three days later.
type archivedEnv struct {
	env      *audittest.Env
	bucket   *archivetest.Bucket
	base     time.Time
	now      time.Time
	key      string
	digests  []auditlog.Digest
	archived []archive.Item
}

const archiveEntries = 240

func newArchivedEnv(t *testing.T) *archivedEnv {
	t.Helper()
	base := audittest.WriteStart.Truncate(audittest.DigestPeriod)
	return newArchivedEnvAt(t, base.Add(3*24*time.Hour), base.Add(3*24*time.Hour), archiveEntries)
}

// newArchivedEnvAt is newArchivedEnv with the hot window's TTL applied at expireAt (want
// entries removed) and the auditor's clock at now.
func newArchivedEnvAt(t *testing.T, expireAt, now time.Time, want int) *archivedEnv {
	t.Helper()
	ctx := context.Background()
	env := audittest.NewEnv(t)
	p := audittest.DigestPeriod
	hot := 24 * time.Hour
	a := &archivedEnv{env: env, bucket: archivetest.NewBucket(), base: audittest.WriteStart.Truncate(p)}
	a.now = now
	entries := audittest.BulkEntries(archiveEntries, a.base, 3*p)
	for i := range entries {
		entries[i].DropAfter = auditlog.DropAfter(entries[i], hot)
	}
	if err := audittest.WriteBulk(ctx, env.DB, env.Names.Audit, entries, 4); err != nil {
		t.Fatal(err)
	}
	closed := a.base.Add(3*p + audittest.DigestGrace)
	var err error
	if a.digests, err = env.Digester(notifytest.NewClock(closed)).Run(ctx); err != nil || len(a.digests) != 3 {
		t.Fatalf("digests: %d, %v", len(a.digests), err)
	}
	ar := env.Archiver(a.bucket, notifytest.NewClock(closed), hot)
	ar.PartBytes = 16 << 10
	if a.archived, err = ar.Run(ctx); err != nil || len(a.archived) != 3 {
		t.Fatalf("archive: %d, %v", len(a.archived), err)
	}
	if n := env.ExpireAudit(t, expireAt); n != want {
		t.Fatalf("the hot window took %d entries, want %d", n, want)
	}
	pem, err := digest.PublicKeyPEM(&env.SigningKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	a.key = filepath.Join(t.TempDir(), "digest.pem")
	if err := os.WriteFile(a.key, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// app returns auditctl over the table and the bucket, AUDIT_HOT_DAYS=1 (0: the table alone).
func (a *archivedEnv) app(hotDays string) (*app, *bytes.Buffer, *bytes.Buffer) {
	cli, out, errOut := testApp(a.env.DB, a.env.Names.Audit, a.now)
	env := map[string]string{envAuditTable: a.env.Names.Audit, config.EnvAuditHotDays: hotDays,
		config.EnvAuditDigestPeriodMinutes: "1", config.EnvAuditDigestGraceSeconds: "10"}
	cli.getenv = func(k string) string { return env[k] }
	cli.newS3 = func(context.Context) (auditor.ArchiveAPI, error) { return a.bucket, nil }
	return cli, out, errOut
}

func (a *archivedEnv) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cli, out, errOut := a.app("1")
	err = cli.run(context.Background(), args)
	return out.String(), errOut.String(), err
}

func (a *archivedEnv) rangeArgs() []string {
	return []string{"--from", tables.FormatTime(a.base), "--to", tables.FormatTime(a.base.Add(3 * audittest.DigestPeriod))}
}

// TestVerifyFromTheArchive: once the hot window has taken every entry from the table, verify
// over the whole range passes from the archive and says so; with the table alone it finds
// every entry deleted; an export spanning the archive verifies offline; timeline, evidence and
// its proof read the archive; archive status lists the periods.
func TestVerifyFromTheArchive(t *testing.T) {
	a := newArchivedEnv(t)
	args := append([]string{"verify", "--public-key", a.key}, a.rangeArgs()...)
	out, stderr, err := a.run(t, args...)
	if err != nil || !strings.HasPrefix(out, "OK: ") || !strings.Contains(out, "240 entries covered") {
		t.Fatalf("verify from the archive: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "read table "+a.env.Names.Audit+" and archive s3://"+audittest.ArchiveBucket+" (3 archived periods") {
		t.Errorf("verify does not say it read the archive: %q", stderr)
	}
	tableOnly, tout, _ := a.app("0")
	if err := tableOnly.run(context.Background(), args); err == nil || !strings.Contains(tout.String(), "entries deleted") {
		t.Errorf("verify of the table alone after the hot window: %v\n%s", err, tout)
	}

	export, _, err := a.run(t, append([]string{"export", "--format", "jsonl"}, a.rangeArgs()...)...)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := a.run(t, append([]string{"verify", "--input", file, "--public-key", a.key}, a.rangeArgs()...)...); err != nil || !strings.HasPrefix(out, "OK: ") {
		t.Errorf("verify --input of an export read from the archive: %v\n%s%s", err, out, stderr)
	}
	// A copy of the export with one archived entry changed fails, naming its period.
	lines := strings.Split(export, "\n")
	for i, l := range lines {
		if strings.Contains(l, `"event_id":"bulk-000003"`) && strings.Contains(l, `"reason":"BULK"`) {
			lines[i] = strings.Replace(l, `"reason":"BULK"`, `"reason":"EDITED"`, 1)
			break
		}
	}
	tampered := filepath.Join(t.TempDir(), "tampered.jsonl")
	if err := os.WriteFile(tampered, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = a.run(t, append([]string{"verify", "--input", tampered, "--public-key", a.key}, a.rangeArgs()...)...)
	if err == nil || !strings.Contains(out, "period "+a.digests[0].Period()) {
		t.Errorf("verify --input of an edited export: %v\n%s\nwant a failure naming period %s", err, out, a.digests[0].Period())
	}

	// timeline: the table holds nothing of the event any more; the archive over a range does.
	if _, _, err := a.run(t, "timeline", "--event-id", "bulk-000003"); err == nil || !strings.Contains(err.Error(), "give --from and --to") {
		t.Errorf("timeline with nothing in the table: %v, want to be asked for --from and --to", err)
	}
	out, stderr, err = a.run(t, append([]string{"timeline", "--event-id", "bulk-000003", "--format", "jsonl"}, a.rangeArgs()...)...)
	if err != nil || strings.Count(out, "\n") != audittest.BulkNotifications*audittest.BulkVersions || !strings.Contains(stderr, "archive") {
		t.Errorf("timeline from the archive: %v, %d lines\n%s", err, strings.Count(out, "\n"), stderr)
	}

	proof := filepath.Join(t.TempDir(), "proof.json")
	if _, stderr, err := a.run(t, append([]string{"evidence", "--event-id", "bulk-000003", "--proof", proof, "--public-key", a.key}, a.rangeArgs()...)...); err != nil {
		t.Fatalf("evidence --proof from the archive: %v\n%s", err, stderr)
	}
	offline, _, _ := testApp(nil, "unused", a.now)
	var pout bytes.Buffer
	offline.stdout = &pout
	if err := offline.run(context.Background(), []string{"verify", "--proof", proof, "--public-key", a.key}); err != nil || !strings.HasPrefix(pout.String(), "OK: ") {
		t.Errorf("verify --proof of an archived event, offline: %v\n%s", err, pout.String())
	}

	out, _, err = a.run(t, "archive", "status")
	if err != nil || !strings.HasPrefix(out, "3 periods archived, 0 periods pending") || strings.Count(out, "archive only") != 3 {
		t.Errorf("archive status: %v\n%s", err, out)
	}
}

// TestVerifyFindsATamperedArchive: an archive object replaced (an entry edited), dropped, or
// two objects swapped makes verify fail with a sentence naming the period.
func TestVerifyFindsATamperedArchive(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		tamper     func(a *archivedEnv, m archive.Item)
	}{
		{"replaced", "does not match its signed manifest", func(a *archivedEnv, m archive.Item) {
			key := archive.PartKey(m.PeriodStart, 0)
			body, _ := a.bucket.Latest(key)
			a.bucket.Replace(key, regzip(t, bytes.Replace(gunzipAll(t, body), []byte(`"reason":"BULK"`), []byte(`"reason":"EDITED"`), 1)))
		}},
		{"dropped", "is missing from the archive", func(a *archivedEnv, m archive.Item) {
			a.bucket.Drop(archive.PartKey(m.PeriodStart, 1))
		}},
		{"reordered", "does not match its signed manifest", func(a *archivedEnv, m archive.Item) {
			k0, k1 := archive.PartKey(m.PeriodStart, 0), archive.PartKey(m.PeriodStart, 1)
			b0, _ := a.bucket.Latest(k0)
			b1, _ := a.bucket.Latest(k1)
			a.bucket.Replace(k0, b1)
			a.bucket.Replace(k1, b0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newArchivedEnv(t)
			m := a.archived[1]
			if m.Objects < 2 {
				t.Fatalf("period archived in %d objects, the test needs 2", m.Objects)
			}
			tc.tamper(a, m)
			out, _, err := a.run(t, append([]string{"verify", "--public-key", a.key}, a.rangeArgs()...)...)
			first := strings.SplitN(out, "\n", 2)[0]
			if err == nil || !strings.Contains(first, "period "+m.Period()+": archive: ") || !strings.Contains(out, tc.want) {
				t.Errorf("verify after the archive was %s: %v\n%s\nwant BROKEN naming period %s and %q", tc.name, err, out, m.Period(), tc.want)
			}
		})
	}
}

func gunzipAll(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func regzip(t *testing.T, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// TestExportSpanningTableAndArchive: the first two periods are outside the hot window (their
// entries gone from the table), the third inside it; export reads both, says so, and verify
// --input passes on the file, offline.
func TestExportSpanningTableAndArchive(t *testing.T) {
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	// TTL has taken what was written before base+2p; the auditor looks 23 h and 1.5 periods in:
	// periods 0 and 1 are cold (started more than the hot window less an hour ago), 2 is hot.
	a := newArchivedEnvAt(t, base.Add(24*time.Hour+2*p), base.Add(23*time.Hour+3*p/2), 2*archiveEntries/3)
	export, stderr, err := a.run(t, append([]string{"export", "--format", "jsonl"}, a.rangeArgs()...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "read table "+a.env.Names.Audit+" and archive s3://"+audittest.ArchiveBucket+" (2 archived periods") {
		t.Errorf("export does not say it read the table and 2 archived periods: %q", stderr)
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := a.run(t, append([]string{"verify", "--input", file, "--public-key", a.key}, a.rangeArgs()...)...)
	if err != nil || !strings.HasPrefix(out, "OK: ") || !strings.Contains(out, "240 entries covered") {
		t.Errorf("verify --input of an export spanning table and archive: %v\n%s", err, out)
	}
}
