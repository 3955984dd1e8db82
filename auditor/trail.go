package auditor

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// ArchiveAPI is the part of S3 the auditor reads the archive with: GetObject only (the
// AuditorRole's s3:GetObject on the archive bucket).
type ArchiveAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ ArchiveAPI = (*s3.Client)(nil)

// HotMargin is how much earlier than the hot window's end a period is read from the archive
// rather than the table: the entries of a period that starts Hot ago begin to leave the table
// by TTL (drop_after = written_at + Hot), and clocks differ.
const HotMargin = time.Hour

// TimelineSpan is how far around a range (or around the entries the table still holds) the
// archive is searched for an event's entries: a notification's entries are written from its
// admission to its purge, the record's TTL (expires_at, at most MaxAheadHours ahead, plus the
// status grace) and the writer's lateness later: well within 3 days.
const TimelineSpan = 72 * time.Hour

// Trail reads the audit trail as auditors see it: the digests always from the table; the
// entries of a period from the archive when the period is archived and outside the hot window
// (its start at least Hot, less HotMargin, before Now), else from the table. With no S3 client
// or no hot window it is the table alone. Archived periods are checked as they are read: the
// manifest against the archive item and its signature (with PublicKey), its chain to the
// period's digest, each object against the manifest; what does not match is in Problems, named
// by period, and the entries read are still returned (so verify also finds them not to be
// what the digest signs).
type Trail struct {
	Reader    *auditlog.Reader
	S3        ArchiveAPI
	Hot       time.Duration
	Now       time.Time
	PublicKey *ecdsa.PublicKey

	// Problems are what reading the archive found wrong.
	Problems []Problem
	// TablePeriods and ArchivePeriods count what was read where (ArchivePeriods by start).
	ArchivePeriods map[time.Time]bool
	TableReads     int

	items   []archive.Item
	loaded  bool
	periods map[time.Time]*coldPeriod
}

// coldPeriod is one archived period as read: its manifest, and its objects' entries by key.
type coldPeriod struct {
	item     archive.Item
	manifest *archive.Manifest
	objects  map[string][]auditlog.Entry
}

// Sources says what the trail read, for people: "table T" and/or "archive (N periods, from to
// to)".
func (t *Trail) Sources() string {
	var parts []string
	if t.TableReads > 0 || len(t.ArchivePeriods) == 0 {
		parts = append(parts, "table "+t.Reader.Table)
	}
	if n := len(t.ArchivePeriods); n > 0 {
		var first, last time.Time
		for s := range t.ArchivePeriods {
			if first.IsZero() || s.Before(first) {
				first = s
			}
			if s.After(last) {
				last = s
			}
		}
		bucket := ""
		if p := t.periods[first]; p != nil {
			bucket = " s3://" + p.item.Bucket
		}
		parts = append(parts, fmt.Sprintf("archive%s (%d archived periods outside the hot window, starting %s to %s)",
			bucket, n, tables.FormatTime(first), tables.FormatTime(last)))
	}
	return strings.Join(parts, " and ")
}

// Items returns the archive items of the table, in period order (read once).
func (t *Trail) Items(ctx context.Context) ([]archive.Item, error) {
	if t.loaded {
		return t.items, nil
	}
	for it, err := range archive.Items(ctx, t.Reader.DB, t.Reader.Table, time.Time{}, time.Time{}, true) {
		if err != nil {
			return nil, fmt.Errorf("auditor.trail: %w", err)
		}
		t.items = append(t.items, it)
	}
	t.loaded = true
	return t.items, nil
}

// cold returns the archived periods outside the hot window that overlap [from, to).
func (t *Trail) cold(ctx context.Context, from, to time.Time) ([]archive.Item, error) {
	if t.S3 == nil || t.Hot <= 0 {
		return nil, nil
	}
	items, err := t.Items(ctx)
	if err != nil {
		return nil, err
	}
	var out []archive.Item
	for _, it := range items {
		if t.isCold(it) && it.PeriodEnd.After(from) && it.PeriodStart.Before(to) {
			out = append(out, it)
		}
	}
	return out, nil
}

func (t *Trail) isCold(it archive.Item) bool {
	return !t.Now.Before(it.PeriodStart.Add(t.Hot).Add(-HotMargin))
}

// coldAt reports whether an entry written at w belongs to a cold period (read from the
// archive instead of the table).
func (t *Trail) coldAt(w time.Time) bool {
	if t.S3 == nil || t.Hot <= 0 || w.IsZero() {
		return false
	}
	i := sort.Search(len(t.items), func(i int) bool { return t.items[i].PeriodEnd.After(w) })
	return i < len(t.items) && !w.Before(t.items[i].PeriodStart) && t.isCold(t.items[i])
}

// WrittenIn yields the entries written in [start, end): from the table, and from the archive
// for the cold periods.
func (t *Trail) WrittenIn(ctx context.Context, start, end time.Time) iter.Seq2[auditlog.Entry, error] {
	return t.merged(ctx, start, end, auditlog.WrittenIn(ctx, t.Reader.DB, t.Reader.Table, start, end),
		func(e auditlog.Entry) bool { return !e.WrittenAt.Before(start) && e.WrittenAt.Before(end) })
}

// Range yields the entries whose at is in [from, to), as audit.Reader.Range does, with the
// cold periods' entries from the archive.
func (t *Trail) Range(ctx context.Context, from, to time.Time) iter.Seq2[auditlog.Entry, error] {
	return t.merged(ctx, from.Add(-auditlog.ClockSkew), to.Add(auditlog.MaxLateness), t.Reader.Range(ctx, from, to),
		func(e auditlog.Entry) bool { return !e.At.Before(from) && e.At.Before(to) })
}

// merged yields the table's entries (table) that are not in a cold period, then the entries
// of the cold periods overlapping [start, end) that keep accepts.
func (t *Trail) merged(ctx context.Context, start, end time.Time, table iter.Seq2[auditlog.Entry, error], keep func(auditlog.Entry) bool) iter.Seq2[auditlog.Entry, error] {
	return func(yield func(auditlog.Entry, error) bool) {
		cold, err := t.cold(ctx, start, end)
		if err != nil {
			yield(auditlog.Entry{}, err)
			return
		}
		t.TableReads++
		for e, err := range table {
			if err == nil && t.coldAt(e.WrittenAt) {
				continue
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
		for _, it := range cold {
			entries, err := t.period(ctx, it, "")
			if err != nil {
				yield(auditlog.Entry{}, err)
				return
			}
			for _, e := range entries {
				if keep(e) && !yield(e, nil) {
					return
				}
			}
		}
	}
}

// Timeline returns every entry of eventID: the table's, and the archive's in the cold periods
// of [from, to) (zero: TimelineSpan around the written_at of the entries the table holds, or
// nothing from the archive when it holds none).
func (t *Trail) Timeline(ctx context.Context, eventID string, from, to time.Time) ([]auditlog.Entry, error) {
	hot, err := t.Reader.Timeline(ctx, eventID)
	if err != nil {
		return nil, err
	}
	t.TableReads++
	if from.IsZero() && to.IsZero() {
		for _, e := range hot {
			if !e.WrittenAt.IsZero() && (from.IsZero() || e.WrittenAt.Before(from)) {
				from = e.WrittenAt
			}
			to = maxTime(to, e.WrittenAt)
		}
		if from.IsZero() {
			return hot, nil
		}
		from, to = from.Add(-TimelineSpan), to.Add(TimelineSpan)
	}
	cold, err := t.cold(ctx, from, to)
	if err != nil {
		return nil, err
	}
	var out []auditlog.Entry
	for _, e := range hot {
		if !t.coldAt(e.WrittenAt) {
			out = append(out, e)
		}
	}
	for _, it := range cold {
		entries, err := t.period(ctx, it, eventID)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.EventID == eventID {
				out = append(out, e)
			}
		}
	}
	return auditlog.Sorted(out), nil
}

// period returns the entries of the archived period it, reading its manifest and the objects
// that may hold eventID (every object when eventID is ""), once each.
func (t *Trail) period(ctx context.Context, it archive.Item, eventID string) ([]auditlog.Entry, error) {
	if t.periods == nil {
		t.periods, t.ArchivePeriods = map[time.Time]*coldPeriod{}, map[time.Time]bool{}
	}
	p := t.periods[it.PeriodStart]
	if p == nil {
		p = &coldPeriod{item: it, objects: map[string][]auditlog.Entry{}}
		t.periods[it.PeriodStart] = p
		if err := t.readManifest(ctx, p); err != nil {
			return nil, err
		}
	}
	t.ArchivePeriods[it.PeriodStart] = true
	if p.manifest == nil {
		return nil, nil
	}
	var out []auditlog.Entry
	for _, o := range p.manifest.Objects {
		if eventID != "" && !spans(o, eventID) {
			continue
		}
		entries, ok := p.objects[o.Key]
		if !ok {
			var err error
			if entries, err = t.readObject(ctx, p, o); err != nil {
				return nil, err
			}
			p.objects[o.Key] = entries
		}
		out = append(out, entries...)
	}
	return out, nil
}

// spans reports whether the object's entries can include eventID.
func spans(o archive.ObjectRef, eventID string) bool {
	first, _, _ := strings.Cut(o.First, "\x00")
	last, _, _ := strings.Cut(o.Last, "\x00")
	return first <= eventID && eventID <= last
}

func (t *Trail) problem(p *coldPeriod, format string, args ...any) {
	t.Problems = append(t.Problems, Problem{Period: p.item.Period(), What: "archive: " + fmt.Sprintf(format, args...)})
}

// readManifest reads and checks the period's manifest; a manifest missing or unreadable is a
// problem, not an error (the period then reads as empty, and verify finds its entries gone).
func (t *Trail) readManifest(ctx context.Context, p *coldPeriod) error {
	raw, found, err := t.get(ctx, p.item, p.item.ManifestKey)
	switch {
	case err != nil:
		return err
	case !found:
		t.problem(p, "manifest %s is missing from the archive", p.item.ManifestKey)
		return nil
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != p.item.ManifestSHA256 {
		t.problem(p, "manifest %s is not the one the archive item records (its SHA-256 differs): replaced", p.item.ManifestKey)
	}
	var m archive.Manifest
	if err := json.Unmarshal(raw, &m); err != nil || m.Format != archive.ManifestFormat {
		t.problem(p, "manifest %s is not an archive manifest", p.item.ManifestKey)
		return nil
	}
	if t.PublicKey != nil {
		sig, err := base64.StdEncoding.DecodeString(m.Signature)
		if err != nil || !ecdsa.VerifyASN1(t.PublicKey, archive.ManifestSum(m), sig) {
			t.problem(p, "manifest %s is not signed by the digest key: forged or altered", p.item.ManifestKey)
		}
	}
	if !m.PeriodStart.Equal(p.item.PeriodStart) || !m.PeriodEnd.Equal(p.item.PeriodEnd) {
		t.problem(p, "manifest %s names another period (%s)", p.item.ManifestKey, m.Period())
	}
	p.manifest = &m
	return nil
}

// readObject reads one part, checks it against the manifest and returns its entries.
func (t *Trail) readObject(ctx context.Context, p *coldPeriod, o archive.ObjectRef) ([]auditlog.Entry, error) {
	raw, found, err := t.get(ctx, p.item, o.Key)
	if err != nil {
		return nil, err
	}
	if !found {
		t.problem(p, "object %s is missing from the archive (dropped)", o.Key)
		return nil, nil
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != o.SHA256 {
		t.problem(p, "object %s does not match its signed manifest (its SHA-256 differs): replaced or altered", o.Key)
	}
	entries, err := ReadArchiveObject(raw)
	if err != nil {
		t.problem(p, "object %s: %v", o.Key, err)
		return entries, nil
	}
	if int64(len(entries)) != o.Entries || (len(entries) > 0 && (auditlog.LineOf(entries[0]).Key() != o.First || auditlog.LineOf(entries[len(entries)-1]).Key() != o.Last)) {
		t.problem(p, "object %s does not hold the entries its manifest names (%d of %d, or others): reordered or replaced", o.Key, len(entries), o.Entries)
	}
	return entries, nil
}

// ReadArchiveObject decodes an archive part: gzip-compressed JSON Lines of entries
// (audit.EntryJSON). Entries are returned in the object's order.
func ReadArchiveObject(raw []byte) ([]auditlog.Entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, errors.New("not gzip")
	}
	var out []auditlog.Entry
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := auditlog.EntryFromJSON(sc.Bytes())
		if err != nil {
			return out, fmt.Errorf("line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("not gzip-compressed JSON Lines: %w", err)
	}
	return out, nil
}

// get reads one object of the archived period it: the version its archive item records (a
// later version, which only a put without If-None-Match could add, is never read), or the
// latest of an item written before versions were kept. found is false when there is no such
// key or version.
func (t *Trail) get(ctx context.Context, it archive.Item, key string) ([]byte, bool, error) {
	bucket := it.Bucket
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if v := it.Versions[key]; v != "" {
		in.VersionId = aws.String(v)
	}
	out, err := t.S3.GetObject(ctx, in)
	if err != nil {
		if isNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("auditor.archive get s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(out.Body, 1<<30))
	if err != nil {
		return nil, false, fmt.Errorf("auditor.archive get s3://%s/%s: %w", bucket, key, err)
	}
	return raw, true, nil
}

// isNotFound reports whether err is S3's answer for a key that does not exist.
func isNotFound(err error) bool {
	var nsk *s3types.NoSuchKey
	var nf *s3types.NotFound
	var api smithy.APIError
	return errors.As(err, &nsk) || errors.As(err, &nf) ||
		(errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchVersion"))
}

// CheckChain checks each archived period read against its signed digest among ds: the
// manifest names the digest's signature, count and tree root. A period read from the archive
// without a digest in ds is not checked here (Check reports its entries as not covered).
func (t *Trail) CheckChain(ds []auditlog.Digest) {
	byStart := map[time.Time]auditlog.Digest{}
	for _, d := range ds {
		byStart[d.PeriodStart.UTC()] = d
	}
	starts := make([]time.Time, 0, len(t.periods))
	for s := range t.periods {
		starts = append(starts, s)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for _, s := range starts {
		p := t.periods[s]
		d, ok := byStart[s.UTC()]
		if !ok || p.manifest == nil {
			continue
		}
		if p.manifest.DigestSignature != d.Signature || p.manifest.Count != d.Count || p.manifest.TreeRoot != d.Root {
			t.problem(p, "manifest %s is not chained to the period's signed digest (another digest signature, count or tree root)", p.item.ManifestKey)
		}
	}
}
