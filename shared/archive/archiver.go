package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TableAPI is the part of DynamoDB the archive step uses: Query (digests, archive items, the
// ledgers and the by_write_shard index), BatchGetItem (the entries a ledger lists), PutItem and GetItem under "#archive", and UpdateItem of
// drop_after alone (the template's policies allow no other attribute).
type TableAPI interface {
	auditlog.QueryAPI
	auditlog.WriterAPI
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// PutAPI is the part of S3 the archive step uses: PutObject, always with If-None-Match: *
// (the bucket policy refuses any other put), and GetObject of a key that put found taken (a
// run that stopped before its archive item). The bucket's default retention (Object Lock,
// compliance mode) locks every object it puts.
type PutAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ PutAPI = (*s3.Client)(nil)

// Signer signs the SHA-256 of a manifest's canonical encoding with the digest key
// (digest.Signer).
type Signer interface {
	KeyID() string
	Sign(ctx context.Context, sum []byte) ([]byte, error)
}

// RescueShare is the default rescue margin's share of the hot window: 7 days of the
// default 35 (Archiver.RescueMargin).
const RescueShare = 5

// DefaultMaxPerRun bounds the periods one run archives; DefaultBudget the time after which a
// run starts no other period (the digest function's timeout is 60 s).
const (
	DefaultMaxPerRun = 60
	DefaultBudget    = 30 * time.Second
)

// The archive step's metrics, by Function (template.yaml's ArchiveLagAlarm and
// ArchiveErrorsAlarm read them).
const (
	MetricArchivedPeriods = "ArchivedPeriods"
	MetricArchiveLag      = "ArchiveLag"
	MetricArchiveErrors   = "ArchiveErrors"
)

// Archiver is the archive step: each run archives, in order, every period that has a signed
// digest and no archive item yet. It is idempotent (keys and bytes are the same on a re-run;
// the archive item is written last, with attribute_not_exists) and resumable (a run goes on
// from the latest archive item).
//
// Nothing expires before it is archived: an entry's drop_after (the table's TTL) is its
// written_at plus the hot window, and the step archives a period minutes after its digest.
// Should a period stay unarchived (an S3, KMS or mismatch error) until RescueMargin before
// its hot window ends, each failed run pushes its entries' drop_after out by twice that
// margin (UpdateItem of drop_after alone, only where it is nearer than the margin), so they
// stay in the table until the period is archived. Entries written before the hot window
// existed carry no drop_after (they would never expire): once their period is archived the
// step gives them one, at least an hour away: the upgrade path of a stack that holds the whole
// retention in DynamoDB (docs/audit.md).
type Archiver struct {
	DB     TableAPI
	Table  string
	S3     PutAPI
	Bucket string
	Signer Signer
	// Algorithm names the signature algorithm (digest.SigningAlgorithm).
	Algorithm string
	// Hot is the hot window (AUDIT_HOT_DAYS); zero means entries keep retain_until as TTL
	// and nothing is rescued or given a drop_after.
	Hot time.Duration
	// RescueMargin is how long before the hot window of an unarchived period's entries ends
	// the step pushes their drop_after out; zero means Hot / RescueShare.
	RescueMargin time.Duration
	// Retention is the audit retention: an archive item is kept as long as its digest.
	Retention time.Duration
	PartBytes int
	MaxPerRun int
	Budget    time.Duration
	Clock     notify.Clock
	Log       *slog.Logger
	Metrics   *obs.Metrics
}

// Item is what the audit table records of an archived period (under "#archive").
type Item struct {
	PeriodStart, PeriodEnd time.Time
	Count                  int64
	Bucket, ManifestKey    string
	ManifestSHA256         string
	Objects                int
	ArchivedAt             time.Time
	RetainUntil            int64
	// Versions maps each object key (parts and manifest) to the version ID S3 gave it; empty
	// in items written before versions were kept (readers then get the latest version).
	Versions map[string]string
}

// Period names the archived period.
func (it Item) Period() string { return auditlog.PeriodName(it.PeriodStart, it.PeriodEnd) }

// Run archives every digested period not archived yet, in order, within MaxPerRun and Budget,
// and reports ArchivedPeriods, ArchiveLag (seconds since the oldest digested period not
// archived was signed; 0 when none is) and ArchiveErrors.
func (a *Archiver) Run(ctx context.Context) ([]Item, error) {
	began := a.now()
	next, err := a.next(ctx)
	var out []Item
	var pending *auditlog.Digest
	if err == nil {
		out, pending, err = a.archiveFrom(ctx, next, began)
	}
	lag := 0.0
	if pending != nil {
		lag = max(0, a.now().Sub(pending.SignedAt).Seconds())
	}
	failed := 0.0
	if err != nil {
		failed = 1
		a.log().ErrorContext(ctx, "audit archive failed", "error", err.Error())
	}
	a.Metrics.Emit(nil,
		obs.Metric{Name: MetricArchivedPeriods, Unit: obs.UnitCount, Value: float64(len(out))},
		obs.Metric{Name: MetricArchiveLag, Unit: obs.UnitSeconds, Value: lag},
		obs.Metric{Name: MetricArchiveErrors, Unit: obs.UnitCount, Value: failed})
	return out, err
}

// archiveFrom archives the digests from next on; pending is the first digest left unarchived.
func (a *Archiver) archiveFrom(ctx context.Context, next, began time.Time) ([]Item, *auditlog.Digest, error) {
	var out []Item
	maxN, budget := a.MaxPerRun, a.Budget
	if maxN <= 0 {
		maxN = DefaultMaxPerRun
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	for d, err := range auditlog.Digests(ctx, a.DB, a.Table, next, time.Time{}, true) {
		if err != nil {
			return out, nil, fmt.Errorf("archive.run: %w", err)
		}
		if len(out) >= maxN || a.now().Sub(began) > budget {
			return out, &d, nil
		}
		it, err := a.Archive(ctx, d)
		if err != nil {
			if rerr := a.rescue(ctx, d); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return out, &d, err
		}
		a.log().InfoContext(ctx, "audit period archived", "period_start", tables.FormatTime(it.PeriodStart),
			"count", it.Count, "objects", it.Objects)
		out = append(out, it)
	}
	return out, nil, nil
}

// next returns the start of the first period to archive: the end of the latest archived
// period, else the start of the first digest (zero when there is none).
func (a *Archiver) next(ctx context.Context) (time.Time, error) {
	for it, err := range Items(ctx, a.DB, a.Table, time.Time{}, time.Time{}, false) {
		if err != nil {
			return time.Time{}, fmt.Errorf("archive.run: %w", err)
		}
		return it.PeriodEnd, nil
	}
	return time.Time{}, nil
}

// Archive archives the period of d: it reads the period's entries, checks them against d
// (the tree it signs), puts the parts and the signed manifest, each with its SHA-256 for S3 to
// check, then records the archive item. Entries that lack a drop_after then get one.
func (a *Archiver) Archive(ctx context.Context, d auditlog.Digest) (Item, error) {
	entries, err := a.entries(ctx, d)
	if err != nil {
		return Item{}, err
	}
	parts, err := Parts(d.PeriodStart, entries, a.PartBytes)
	if err != nil {
		return Item{}, err
	}
	m := Manifest{Format: ManifestFormat, PeriodStart: d.PeriodStart.UTC(), PeriodEnd: d.PeriodEnd.UTC(), Count: d.Count,
		TreeRoot: d.Root, DigestSignature: d.Signature, KeyID: a.Signer.KeyID(), Algorithm: a.Algorithm, SignedAt: a.now()}
	versions := map[string]string{}
	for _, p := range parts {
		v, err := a.putPart(ctx, p)
		if err != nil {
			return Item{}, fmt.Errorf("archive.archive %s: %w", d.Period(), err)
		}
		versions[p.Ref.Key] = v
		m.Objects = append(m.Objects, p.Ref)
	}
	body, v, err := a.putManifest(ctx, m)
	if err != nil {
		return Item{}, fmt.Errorf("archive.archive %s: %w", d.Period(), err)
	}
	versions[ManifestKey(d.PeriodStart)] = v
	it := Item{PeriodStart: d.PeriodStart.UTC(), PeriodEnd: d.PeriodEnd.UTC(), Count: d.Count, Bucket: a.Bucket,
		ManifestKey: ManifestKey(d.PeriodStart), ManifestSHA256: sha256Hex(body), Objects: len(parts),
		ArchivedAt: a.now(), RetainUntil: max(d.RetainUntil, d.PeriodEnd.Add(a.Retention).Unix()), Versions: versions}
	if it, err = a.record(ctx, it); err != nil {
		return Item{}, fmt.Errorf("archive.archive %s: %w", d.Period(), err)
	}
	if err := a.dropLegacy(ctx, entries); err != nil {
		return it, fmt.Errorf("archive.archive %s: %w", d.Period(), err)
	}
	return it, nil
}

// entries returns the period's entries in canonical order, or an error when they are not what
// d signs: a period whose table no longer matches its digest is never archived.
func (a *Archiver) entries(ctx context.Context, d auditlog.Digest) ([]auditlog.Entry, error) {
	var entries []auditlog.Entry
	var tree auditlog.PeriodTree
	for e, err := range auditlog.WrittenIn(ctx, a.DB, a.Table, d.PeriodStart, d.PeriodEnd) {
		if err != nil {
			return nil, fmt.Errorf("archive.archive %s: %w", d.Period(), err)
		}
		entries = append(entries, e)
		tree.Add(auditlog.LineOf(e))
	}
	if d.Version != auditlog.DigestVersionTree {
		return nil, fmt.Errorf("archive.archive %s: a version %d digest: only tree digests (version 2) are archived", d.Period(), d.Version)
	}
	if tree.Size() != d.Count || tree.Root() != d.Root {
		return nil, fmt.Errorf("archive.archive %s: the table holds %d entries for the period, not the %d its signed digest covers (or another tree root): not archived", d.Period(), tree.Size(), d.Count)
	}
	SortCanonical(entries)
	return entries, nil
}

// SortCanonical sorts entries in the order of their period's tree: event ID, then seq.
func SortCanonical(entries []auditlog.Entry) {
	sort.Slice(entries, func(i, j int) bool { return auditlog.LineOf(entries[i]).Key() < auditlog.LineOf(entries[j]).Key() })
}

// record writes the archive item once; when a concurrent run wrote it first, it returns that
// one.
func (a *Archiver) record(ctx context.Context, it Item) (Item, error) {
	cond, err := expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(expression.Name(tables.AuditSeq))).Build()
	if err != nil {
		return Item{}, fmt.Errorf("build condition: %w", err)
	}
	_, err = a.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(a.Table), Item: ItemAttributes(it),
		ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names()})
	var failed *ddbtypes.ConditionalCheckFailedException
	switch {
	case err == nil:
		return it, nil
	case !errors.As(err, &failed):
		return Item{}, fmt.Errorf("put archive item: %w", err)
	}
	got, err := a.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Table), ConsistentRead: aws.Bool(true),
		Key: auditlog.ItemKey(tables.ArchiveEventID, tables.FormatTime(it.PeriodStart))})
	if err != nil {
		return Item{}, fmt.Errorf("get archive item: %w", err)
	}
	return ItemFromAttributes(got.Item)
}

// dropLegacy gives the archived entries that have no drop_after (written before the hot
// window existed) one: their hot window's end, at least an hour from now.
func (a *Archiver) dropLegacy(ctx context.Context, entries []auditlog.Entry) error {
	if a.Hot <= 0 {
		return nil
	}
	floor := a.now().Add(time.Hour).Unix()
	for _, e := range entries {
		if e.DropAfter != 0 {
			continue
		}
		at := max(min(e.WrittenAt.Add(a.Hot).Unix(), e.RetainUntil), floor)
		if err := a.setDropAfter(ctx, e, at, at); err != nil {
			return err
		}
	}
	return nil
}

// rescue pushes out the drop_after of d's entries when its hot window ends within
// RescueMargin: to twice the margin from now, where it is nearer than the margin.
func (a *Archiver) rescue(ctx context.Context, d auditlog.Digest) error {
	margin := a.RescueMargin
	if margin <= 0 {
		margin = a.Hot / RescueShare
	}
	now := a.now()
	if a.Hot <= 0 || now.Before(d.PeriodStart.Add(a.Hot).Add(-margin)) {
		return nil
	}
	below, at := now.Add(margin).Unix(), now.Add(2*margin).Unix()
	n := 0
	for e, err := range auditlog.WrittenIn(ctx, a.DB, a.Table, d.PeriodStart, d.PeriodEnd) {
		if err != nil {
			return fmt.Errorf("archive.rescue %s: %w", d.Period(), err)
		}
		if e.DropAfter != 0 && e.DropAfter >= below {
			continue
		}
		if err := a.setDropAfter(ctx, e, min(at, e.RetainUntil), below); err != nil {
			return fmt.Errorf("archive.rescue %s: %w", d.Period(), err)
		}
		n++
	}
	// And the ledgers that list them: an entry is found through its ledger.
	for l, err := range auditlog.LedgersIn(ctx, a.DB, a.Table, d.PeriodStart, d.PeriodEnd) {
		if err != nil {
			return fmt.Errorf("archive.rescue %s: %w", d.Period(), err)
		}
		if l.DropAfter != 0 && l.DropAfter >= below {
			continue
		}
		if err := a.setDropAfter(ctx, auditlog.Entry{EventID: l.EventID, Seq: l.Seq}, at, below); err != nil {
			return fmt.Errorf("archive.rescue %s: %w", d.Period(), err)
		}
	}
	a.log().WarnContext(ctx, "audit period not archived near the end of its hot window: its entries' TTL pushed out",
		"period_start", tables.FormatTime(d.PeriodStart), "entries", n, "drop_after", at)
	return nil
}

// setDropAfter sets e's drop_after to at where it is missing or before below; an entry gone,
// or already further out, is left alone.
func (a *Archiver) setDropAfter(ctx context.Context, e auditlog.Entry, at, below int64) error {
	name := expression.Name(tables.AuditDropAfter)
	cond := expression.AttributeExists(expression.Name(tables.AuditSeq)).And(
		expression.AttributeNotExists(name).Or(name.LessThan(expression.Value(below))))
	expr, err := expression.NewBuilder().WithCondition(cond).
		WithUpdate(expression.Set(name, expression.Value(at))).Build()
	if err != nil {
		return fmt.Errorf("set drop_after: %w", err)
	}
	_, err = a.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(a.Table), Key: auditlog.ItemKey(e.EventID, e.Seq),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var failed *ddbtypes.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &failed) {
		return fmt.Errorf("set drop_after %s %s: %w", e.EventID, e.Seq, err)
	}
	return nil
}

// ItemAttributes returns it as an audit table item under ArchiveEventID; its drop_after is its
// retain_until.
func ItemAttributes(it Item) map[string]ddbtypes.AttributeValue {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n := func(v int64) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	return map[string]ddbtypes.AttributeValue{
		tables.AuditEventID: s(tables.ArchiveEventID), tables.AuditSeq: s(tables.FormatTime(it.PeriodStart)),
		tables.DigestPeriodStart: s(tables.FormatTime(it.PeriodStart)), tables.DigestPeriodEnd: s(tables.FormatTime(it.PeriodEnd)),
		tables.DigestCount: n(it.Count), tables.ArchiveBucket: s(it.Bucket), tables.ArchiveManifestKey: s(it.ManifestKey),
		tables.ArchiveManifestSHA256: s(it.ManifestSHA256), tables.ArchiveObjects: n(int64(it.Objects)),
		tables.ArchivedAt: s(tables.FormatTime(it.ArchivedAt)), tables.AuditRetainUntil: n(it.RetainUntil),
		tables.AuditDropAfter: n(it.RetainUntil), tables.ArchiveVersions: versionsAttribute(it.Versions),
	}
}

// ItemFromAttributes reads an archive item.
func ItemFromAttributes(item map[string]ddbtypes.AttributeValue) (Item, error) {
	var it Item
	var errs []error
	str := func(name string) string {
		v, ok := item[name].(*ddbtypes.AttributeValueMemberS)
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not a string", name))
			return ""
		}
		return v.Value
	}
	num := func(name string) int64 {
		v, ok := item[name].(*ddbtypes.AttributeValueMemberN)
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not a number", name))
			return 0
		}
		x, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is not an integer", name))
		}
		return x
	}
	tm := func(name string) time.Time {
		t, err := tables.ParseTime(str(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is not a time", name))
		}
		return t
	}
	it.PeriodStart, it.PeriodEnd, it.ArchivedAt = tm(tables.DigestPeriodStart), tm(tables.DigestPeriodEnd), tm(tables.ArchivedAt)
	it.Count, it.Objects, it.RetainUntil = num(tables.DigestCount), int(num(tables.ArchiveObjects)), num(tables.AuditRetainUntil)
	it.Bucket, it.ManifestKey, it.ManifestSHA256 = str(tables.ArchiveBucket), str(tables.ArchiveManifestKey), str(tables.ArchiveManifestSHA256)
	if v, ok := item[tables.ArchiveVersions]; ok {
		var err error
		if it.Versions, err = versionsFrom(v); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return it, fmt.Errorf("archive.item: %w", err)
	}
	return it, nil
}

func (a *Archiver) now() time.Time {
	if a.Clock == nil {
		return time.Now().UTC()
	}
	return a.Clock.Now().UTC()
}

func (a *Archiver) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

func sha256Hex(b []byte) string { return hex.EncodeToString(sha256Sum(b)) }

func sha256Sum(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}
