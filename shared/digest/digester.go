// Package digest is the digest function's handler: Digester, run on a schedule, closes each
// audit period that has ended (plus a grace) with one signed digest item in the audit table.
// The digest's format and the period's Merkle tree are package audit's ("Digests"); the
// signers (a KMS key in AWS, a local key otherwise) are here. Verifying digests is the
// auditor's (package auditor).
package digest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// DigestAPI is the part of the DynamoDB API the digest step uses: Query (the digests, the
// ledgers and the by_write_shard index), BatchGetItem (the entries a ledger lists), GetItem and
// PutItem, the latter always conditioned on
// attribute_not_exists(seq).
type DigestAPI interface {
	auditlog.QueryAPI
	auditlog.WriterAPI
}

var _ DigestAPI = (*dynamodb.Client)(nil)

// DefaultMaxPeriodsPerRun bounds how many periods one run of the digest step closes, so a
// step that catches up after an outage stays within its timeout; the next run goes on.
const DefaultMaxPeriodsPerRun = 60

// Digester is the digest step: each run closes every period that has ended at least Grace
// ago with a signed digest, in order, each naming the previous one.
type Digester struct {
	DB     DigestAPI
	Table  string
	Signer Signer
	// Period is the length of a period (config.DefaultDigestPeriod in AWS, a minute locally). A
	// period starts at a multiple of it (UTC), so an hour's digest covers hh:00 to hh+1:00.
	Period time.Duration
	// Grace is how long after a period's end the step waits before closing it: longer than
	// the audit writer can take between stamping written_at and its put completing (the audit
	// function's timeout; its batch's stamp is taken in the same invocation), plus the
	// eventual consistency of the ledgers' and the index's reads.
	Grace time.Duration
	// Retention is the entries' retention: a digest is kept at least until the last entry it
	// covers expires, and at least Retention after its period ends.
	Retention time.Duration
	// MaxPerRun bounds the periods closed per run; zero means DefaultMaxPeriodsPerRun.
	MaxPerRun int
	Clock     notify.Clock
	Log       *slog.Logger
	// Metrics, when set, receives per run a DigestsWritten count and DigestLag, in seconds:
	// how long the oldest period not yet closed has been closable (0 when none is).
	Metrics *obs.Metrics
	// Archiver, when set, archives each digested period after the run's digests are written
	// (package archive). Its failures are its own (ArchiveErrors, a log line): they never fail
	// the digest run, so DigestErrorsAlarm stays about digests.
	Archiver *archive.Archiver
	// LagBound is how far behind the step may be before verify counts a digest not yet
	// written as missing (config.DefaultDigestLagBound); a run that ends further behind logs
	// a warning. The template's DigestLagAlarm has the same threshold.
	LagBound time.Duration
}

// Handle is the scheduled function's handler: one run per EventBridge schedule event.
func (d *Digester) Handle(ctx context.Context, _ events.EventBridgeEvent) error {
	_, err := d.Run(ctx)
	if d.Archiver != nil {
		// Reported by the archiver itself (ArchiveErrors and its log line).
		_, _ = d.Archiver.Run(ctx)
	}
	return err
}

// Run closes every period that is due and returns the digests it wrote (or found written by
// a concurrent run). The first digest ever starts the chain at the period of the earliest
// entry written yesterday or today (UTC), or at the latest period that is due when there is
// none; entries written before that are covered by no digest, and verify says so.
func (d *Digester) Run(ctx context.Context) ([]auditlog.Digest, error) {
	now := d.now()
	prev, found, err := auditlog.LatestDigest(ctx, d.DB, d.Table)
	if err != nil {
		return nil, err
	}
	var start time.Time
	var prevPtr *auditlog.Digest
	if found {
		start, prevPtr = prev.PeriodEnd, &prev
	} else if start, err = d.firstStart(ctx, now); err != nil {
		return nil, err
	}
	max := d.MaxPerRun
	if max <= 0 {
		max = DefaultMaxPeriodsPerRun
	}
	var out []auditlog.Digest
	for len(out) < max {
		end := start.Truncate(d.Period).Add(d.Period)
		if end.Add(d.Grace).After(now) {
			break
		}
		dg, err := d.close(ctx, start, end, prevPtr, now)
		if err != nil {
			d.Report(ctx, len(out), start, now)
			return out, err
		}
		d.log().InfoContext(ctx, "audit digest", "period_start", tables.FormatTime(dg.PeriodStart),
			"period_end", tables.FormatTime(dg.PeriodEnd), "count", dg.Count, "key_id", dg.KeyID)
		out = append(out, dg)
		prevPtr, start = &out[len(out)-1], end
	}
	d.Report(ctx, len(out), start, d.now())
	return out, nil
}

// Lag returns how long the period that starts at next (the oldest not yet closed) has been
// closable at now: since its end plus the grace; 0 when it is not closable yet.
func (d *Digester) Lag(next, now time.Time) time.Duration {
	closable := next.Truncate(d.Period).Add(d.Period).Add(d.Grace)
	return max(0, now.Sub(closable))
}

// The digest step's metrics, by Function only (template.yaml's DigestLagAlarm reads
// MetricDigestLag).
const (
	MetricDigestsWritten = "DigestsWritten"
	MetricDigestLag      = "DigestLag"
)

// Report emits the figures of a run that wrote written digests and left next as the oldest
// period not closed: MetricDigestsWritten, and MetricDigestLag (Lag, in seconds). A lag past
// LagBound is logged as a warning.
func (d *Digester) Report(ctx context.Context, written int, next, now time.Time) {
	lag := d.Lag(next, now)
	d.Metrics.Emit(nil,
		obs.Metric{Name: MetricDigestsWritten, Unit: obs.UnitCount, Value: float64(written)},
		obs.Metric{Name: MetricDigestLag, Unit: obs.UnitSeconds, Value: lag.Seconds()})
	if d.LagBound > 0 && lag > d.LagBound {
		d.log().WarnContext(ctx, "audit digest step behind its lag bound", "lag_seconds", int64(lag.Seconds()),
			"lag_bound_seconds", int64(d.LagBound.Seconds()), "next_period_start", tables.FormatTime(next))
	}
}

// close builds, signs and stores the version 2 digest of [start, end): the Merkle tree of the
// entries written in the period (PeriodTree; about 100 bytes of memory per entry while it is
// built). When a concurrent run stored the period's digest first, it returns that one.
func (d *Digester) close(ctx context.Context, start, end time.Time, prev *auditlog.Digest, now time.Time) (auditlog.Digest, error) {
	dg := auditlog.Digest{Version: auditlog.DigestVersionTree, PeriodStart: start, PeriodEnd: end, KeyID: d.Signer.KeyID(),
		Algorithm: SigningAlgorithm, SignedAt: now, RetainUntil: end.Add(d.Retention).Unix()}
	if prev != nil {
		dg.PrevPeriodStart, dg.PrevSignature = prev.PeriodStart, prev.Signature
	}
	var tree auditlog.PeriodTree
	for e, err := range auditlog.WrittenIn(ctx, d.DB, d.Table, start, end) {
		if err != nil {
			return auditlog.Digest{}, fmt.Errorf("digest.digest %s: %w", dg.Period(), err)
		}
		tree.Add(auditlog.LineOf(e))
		dg.RetainUntil = max(dg.RetainUntil, e.RetainUntil)
	}
	dg.Count, dg.Root = tree.Size(), tree.Root()
	sig, err := d.Signer.Sign(ctx, auditlog.DigestSum(dg))
	if err != nil {
		return auditlog.Digest{}, fmt.Errorf("digest.digest %s: %w", dg.Period(), err)
	}
	dg.Signature = base64.StdEncoding.EncodeToString(sig)
	stored, err := d.put(ctx, dg)
	if err != nil {
		return auditlog.Digest{}, fmt.Errorf("digest.digest %s: %w", dg.Period(), err)
	}
	return stored, nil
}

// put stores dg once; if its period already has a digest it returns that one.
func (d *Digester) put(ctx context.Context, dg auditlog.Digest) (auditlog.Digest, error) {
	item, err := auditlog.DigestItem(dg)
	if err != nil {
		return auditlog.Digest{}, err
	}
	cond, err := expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(expression.Name(tables.AuditSeq))).Build()
	if err != nil {
		return auditlog.Digest{}, fmt.Errorf("build condition: %w", err)
	}
	_, err = d.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(d.Table), Item: item,
		ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names(),
	})
	var failed *ddbtypes.ConditionalCheckFailedException
	switch {
	case err == nil:
		return dg, nil
	case !errors.As(err, &failed):
		return auditlog.Digest{}, fmt.Errorf("put: %w", err)
	}
	out, err := d.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(d.Table), ConsistentRead: aws.Bool(true),
		Key: auditlog.ItemKey(tables.DigestEventID, tables.FormatTime(dg.PeriodStart)),
	})
	if err != nil {
		return auditlog.Digest{}, fmt.Errorf("get stored digest: %w", err)
	}
	return auditlog.DigestFromItem(out.Item)
}

// firstStart returns where the first digest's period starts: the period of the earliest entry
// written yesterday or today, else the latest period that is due: one item per shard
// (EarliestWrittenIn), once in a table's life.
func (d *Digester) firstStart(ctx context.Context, now time.Time) (time.Time, error) {
	latest := now.Add(-d.Grace).Truncate(d.Period).Add(-d.Period)
	today := now.Truncate(24 * time.Hour)
	e, found, err := auditlog.EarliestWrittenIn(ctx, d.DB, d.Table, today.Add(-24*time.Hour), latest.Add(d.Period))
	if err != nil {
		return time.Time{}, fmt.Errorf("digest.digest first period: %w", err)
	}
	if !found {
		return latest, nil
	}
	if first := e.WrittenAt.Truncate(d.Period); first.Before(latest) {
		return first, nil
	}
	return latest, nil
}

func (d *Digester) now() time.Time {
	if d.Clock == nil {
		return time.Now().UTC()
	}
	return d.Clock.Now().UTC()
}

func (d *Digester) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}
