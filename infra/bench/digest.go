package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/archivetest"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// digestBench writes n audit entries into one digest period of the template's default length
// (config.DefaultDigestPeriod) on DynamoDB Local, then runs the real digest step over it and
// the offline-equivalent verification of that period (Collect, then Check), and prints:
//   - digest_seconds_per_100k_entries: the digest step's run (query the period through the
//     by_write_day index, build the Merkle tree, sign, put), scaled to 100,000 entries;
//   - digest_peak_heap_mb: the most live heap above the baseline while it ran (sampled every
//     millisecond; the tree keeps about 100 bytes per entry);
//   - verify_seconds_per_100k_entries: collecting the period's bundle (its digests, the entries
//     written in it, every chain they touch) and checking it, scaled to 100,000 entries;
//   - digest_item_bytes: the signed digest item's size, the same whatever n is;
//   - archive_seconds_per_100k_entries: the real archive step over that period (read its
//     entries, check them against the digest, cut and compress the parts, sign the manifest,
//     record the period) into an in-memory bucket, so S3's own latency is not in it (about
//     ten puts a period of 100,000 entries), scaled to 100,000 entries; with
//     archive_peak_heap_mb, archive_objects and archive_bytes_per_entry (compressed).
func digestBench(ctx context.Context, endpoint string, n int, out io.Writer) error {
	cfg := aws.Config{Region: "us-east-1", Credentials: emulator.LocalCredentials()}
	db := awsclient.DynamoDB(cfg, endpoint)
	_, names := benchNames("bench-digest")
	drop, err := createTables(ctx, db, names)
	if err != nil {
		return err
	}
	defer drop()
	period := config.DefaultDigestPeriod
	start := time.Now().UTC().Truncate(period).Add(-2 * period)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	// The digest of the (empty) period before: the measured run is a steady-state one, which
	// goes on from the latest digest.
	clock := notifytest.NewClock(start.Add(config.DefaultDigestGrace))
	d := &digest.Digester{DB: db, Table: names.Audit, Signer: digest.LocalSigner{Key: key}, Period: period,
		Grace: config.DefaultDigestGrace, Retention: auditlog.DefaultRetention, Clock: clock, MaxPerRun: 1}
	if _, err := d.Run(ctx); err != nil {
		return fmt.Errorf("digest bench: the period before: %w", err)
	}
	// As the audit function writes them: stream batches of 100 entries, each listed in its
	// ledger item, none in the by_write_shard index.
	entries := audittest.BulkBatchEntries(n, start, period, 100)
	if err := audittest.WriteBulkLedgered(ctx, db, names.Audit, entries, 8); err != nil {
		return err
	}
	n = len(entries)
	entries = nil
	now := start.Add(period + config.DefaultDigestGrace)
	clock.Set(now)
	var ds []auditlog.Digest
	took, peak, err := measureHeap(func() error {
		ds, err = d.Run(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("digest bench: %w", err)
	}
	if len(ds) != 1 || ds[0].Count != int64(n) {
		return fmt.Errorf("digest bench: the digest step closed %d periods, want one of %d entries", len(ds), n)
	}
	item, err := auditlog.DigestItem(ds[0])
	if err != nil {
		return err
	}
	verifyTook, err := verifyPeriod(ctx, &auditlog.Reader{DB: db, Table: names.Audit}, ds[0], key, now, n)
	if err != nil {
		return err
	}
	per100k := func(d time.Duration) float64 { return d.Seconds() * 100000 / float64(n) }
	fmt.Fprintf(out, "digest_entries=%d\n", n)
	fmt.Fprintf(out, "digest_seconds_per_100k_entries=%.2f\n", per100k(took))
	fmt.Fprintf(out, "digest_peak_heap_mb=%.1f\n", float64(peak)/(1<<20))
	fmt.Fprintf(out, "verify_seconds_per_100k_entries=%.2f\n", per100k(verifyTook))
	fmt.Fprintf(out, "digest_item_bytes=%d\n", len(audittest.ItemText(item)))
	return archiveBench(ctx, db, names.Audit, key, clock, n, out)
}

// archiveBench runs the real archive step over the periods digestBench digested (the empty one
// before and the one of n entries) into an in-memory bucket, and prints its figures.
func archiveBench(ctx context.Context, db *dynamodb.Client, table string, key *ecdsa.PrivateKey, clock notify.Clock, n int, out io.Writer) error {
	bucket := archivetest.NewBucket()
	ar := &archive.Archiver{DB: db, Table: table, S3: bucket, Bucket: "bench-archive", Signer: digest.LocalSigner{Key: key},
		Algorithm: digest.SigningAlgorithm, Retention: auditlog.DefaultRetention, Clock: clock, Budget: time.Hour}
	var archived []archive.Item
	var err error
	took, peak, err := measureHeap(func() error {
		archived, err = ar.Run(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("digest bench: archive: %w", err)
	}
	if len(archived) != 2 || archived[1].Count != int64(n) {
		return fmt.Errorf("digest bench: the archive step archived %d periods, want the empty one and one of %d entries", len(archived), n)
	}
	var bytes int
	for _, k := range bucket.Keys() {
		b, _ := bucket.Latest(k)
		bytes += len(b)
	}
	fmt.Fprintf(out, "archive_seconds_per_100k_entries=%.2f\n", took.Seconds()*100000/float64(n))
	fmt.Fprintf(out, "archive_peak_heap_mb=%.1f\n", float64(peak)/(1<<20))
	fmt.Fprintf(out, "archive_objects=%d\n", archived[1].Objects+1)
	fmt.Fprintf(out, "archive_bytes_per_entry=%.1f\n", float64(bytes)/float64(n))
	return nil
}

// verifyPeriod collects the bundle of d's period and checks it; every one of the n entries
// must be covered.
func verifyPeriod(ctx context.Context, r *auditlog.Reader, d auditlog.Digest, key *ecdsa.PrivateKey, now time.Time, n int) (time.Duration, error) {
	began := time.Now()
	b, err := auditor.Collect(ctx, r, d.PeriodStart, d.PeriodEnd)
	if err != nil {
		return 0, fmt.Errorf("digest bench: collect: %w", err)
	}
	rep := auditor.Check(b, auditor.CheckOptions{PublicKey: &key.PublicKey, Now: now, Grace: config.DefaultDigestGrace, Strict: true})
	took := time.Since(began)
	if !rep.OK() || rep.Covered != n {
		return 0, fmt.Errorf("digest bench: verify covered %d of %d entries: %v", rep.Covered, n, rep.Problems)
	}
	return took, nil
}

// measureHeap runs f and returns how long it took and the most live heap (bytes in heap
// objects) above the level before it, sampled every millisecond.
func measureHeap(f func() error) (time.Duration, uint64, error) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if h := read(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	began := time.Now()
	err := f()
	took := time.Since(began)
	close(done)
	<-stopped
	return took, max(peak.Load(), base) - base, err
}
