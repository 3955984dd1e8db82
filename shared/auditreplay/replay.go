// Package auditreplay is the audit-replay function's handler: Replayer takes the stream
// batches the audit function gave up on (its on-failure queue), re-reads them from the stream
// and writes the missing entries, or a gap entry per notification once the stream no longer
// holds them (package audit, "Replay and gaps").
package auditreplay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// FailureRecord is the message a DynamoDB stream event source mapping sends to its on-failure
// destination when it gives up on a batch: which function and why, and where in the stream
// the batch lay. It holds no stream image, so no secret.
type FailureRecord struct {
	RequestContext struct {
		RequestID              string `json:"requestId"`
		FunctionARN            string `json:"functionArn"`
		Condition              string `json:"condition"`
		ApproximateInvokeCount int    `json:"approximateInvokeCount"`
	} `json:"requestContext"`
	Version   string           `json:"version"`
	Timestamp time.Time        `json:"timestamp"`
	BatchInfo *StreamBatchInfo `json:"DDBStreamBatchInfo"`
}

// StreamBatchInfo is the shard and sequence range of the batch that was given up on.
type StreamBatchInfo struct {
	ShardID                         string    `json:"shardId"`
	StartSequenceNumber             string    `json:"startSequenceNumber"`
	EndSequenceNumber               string    `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord time.Time `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  time.Time `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int       `json:"batchSize"`
	StreamARN                       string    `json:"streamArn"`
}

// NewFailureRecord returns the failure record that a stream event source mapping sends when
// it gives up on batch (non-empty) of shard after invokes invocations, at now. The local
// stack and the tests, which stand in for the mapping, use it.
func NewFailureRecord(shard, streamARN string, batch []events.DynamoDBEventRecord, invokes int, now time.Time) FailureRecord {
	first, last := batch[0], batch[len(batch)-1]
	fr := FailureRecord{Version: "1.0", Timestamp: now.UTC()}
	fr.RequestContext.Condition = "RetryAttemptsExhausted"
	fr.RequestContext.ApproximateInvokeCount = invokes
	fr.BatchInfo = &StreamBatchInfo{
		ShardID: shard, StreamARN: streamARN, BatchSize: len(batch),
		StartSequenceNumber: first.Change.SequenceNumber, EndSequenceNumber: last.Change.SequenceNumber,
		ApproximateArrivalOfFirstRecord: first.Change.ApproximateCreationDateTime.Time,
		ApproximateArrivalOfLastRecord:  last.Change.ApproximateCreationDateTime.Time,
	}
	return fr
}

// StreamsAPI is the part of the DynamoDB Streams API that the replay reads with: DescribeStream
// to check that a failure record names a shard the stream has, then the records.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsAPI = (*dynamodbstreams.Client)(nil)

// ScanAPI is the part of the DynamoDB API that finds the notifications a lost batch may have
// touched: a keys-only Scan of the notifications table.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ ScanAPI = (*dynamodb.Client)(nil)

// RecordGetter reads a notification's current record (dynamostore.Store).
type RecordGetter interface {
	Get(ctx context.Context, key string) (notify.Record, error)
}

// ReplayResult counts what one replay did.
type ReplayResult struct {
	// Replayed entries were missing and are now written; Duplicates were already there.
	Replayed, Duplicates int
	// Gaps counts the gap entries written because the stream no longer held the records.
	Gaps int
	// RecordsGone is true when the stream no longer held the batch.
	RecordsGone bool
}

// Replayer is the replay path of lost stream batches: the audit-replay function on the audit
// function's on-failure queue. For each failure record it re-reads the batch's records from
// the stream and writes the entries that are missing, marked replayed (a retry writes
// nothing new). When the stream no longer holds them (after 24 hours, or a record that can
// never be built), it writes a gap entry for each notification whose chain lacks versions,
// built from the notification's current record and marked reconstructed.
type Replayer struct {
	Streams StreamsAPI
	Writer  *auditlog.Writer
	// Reader reads the chains, Records the notifications' current records, and Scan with
	// NotificationsTable lists the notifications touched since the lost batch.
	Reader             *auditlog.Reader
	Records            RecordGetter
	Scan               ScanAPI
	NotificationsTable string
	Retention          time.Duration
	// InFlight is how recent a record's last transition may be and still be taken for one
	// the audit function has not reached yet, rather than a lost one: such records get no
	// gap entry. Zero means DefaultInFlight.
	InFlight                  time.Duration
	Function, FunctionVersion string
	Clock                     notify.Clock
	Log                       *slog.Logger
	Metrics                   *obs.Metrics
}

// DefaultInFlight exceeds five minutes behind the stream, where the dashboard marks the audit
// function as behind.
const DefaultInFlight = 10 * time.Minute

// arrivalSlack widens the lost batch's arrival times: a transition is stamped (updated_at)
// a moment before its stream record arrives.
const arrivalSlack = time.Minute

// Handle replays each failure record in ev. A message that is not a failure record is
// logged and dropped (it can never succeed); a replay that fails is reported as a batch item
// failure, so SQS delivers it again and, after its redrive count, moves it to the replay DLQ.
func (r *Replayer) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		var fr FailureRecord
		if err := json.Unmarshal([]byte(m.Body), &fr); err != nil || fr.BatchInfo == nil {
			r.log().ErrorContext(ctx, "audit replay: not a stream failure record; dropped", "message_id", m.MessageId)
			r.Metrics.Emit(map[string]string{"Outcome": "malformed"}, obs.Metric{Name: "AuditReplays", Unit: obs.UnitCount, Value: 1})
			continue
		}
		res, err := r.Replay(ctx, *fr.BatchInfo)
		if err != nil {
			outcome := "failed"
			if errors.Is(err, ErrNotOurBatch) {
				outcome = "invalid"
			}
			r.log().ErrorContext(ctx, "audit replay failed", "message_id", m.MessageId, "outcome", outcome, "error", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			r.Metrics.Emit(map[string]string{"Outcome": outcome}, obs.Metric{Name: "AuditReplays", Unit: obs.UnitCount, Value: 1})
			continue
		}
		outcome := "replayed"
		if res.RecordsGone {
			outcome = "gap"
		}
		r.log().InfoContext(ctx, "audit replay", "message_id", m.MessageId, "shard", fr.BatchInfo.ShardID,
			"start", fr.BatchInfo.StartSequenceNumber, "end", fr.BatchInfo.EndSequenceNumber,
			"replayed", res.Replayed, "duplicates", res.Duplicates, "gaps", res.Gaps, "records_gone", res.RecordsGone)
		r.Metrics.Emit(map[string]string{"Outcome": outcome}, obs.Metric{Name: "AuditReplays", Unit: obs.UnitCount, Value: 1})
	}
	return resp, nil
}

// Replay re-reads the batch's records and writes what is missing, or gap entries when the
// stream no longer holds them. It trusts nothing in b: a batch that is not one of the
// notifications stream's (see checkBatch) is an error wrapping ErrNotOurBatch, which leaves
// the message to its queue's redrive (the replay DLQ), never a gap.
func (r *Replayer) Replay(ctx context.Context, b StreamBatchInfo) (ReplayResult, error) {
	var res ReplayResult
	if err := r.checkBatch(ctx, b); err != nil {
		return res, fmt.Errorf("auditreplay.replay: %w", err)
	}
	actor := auditlog.Actor{Function: r.Function, Version: r.FunctionVersion}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		actor.RequestID = lc.AwsRequestID
	}
	gone, unbuildable, err := r.replayRecords(ctx, b, actor, &res)
	switch {
	case err != nil:
		return res, fmt.Errorf("auditreplay.replay %s %s: %w", b.ShardID, b.StartSequenceNumber, err)
	case gone:
		res.RecordsGone = true
		keys, err := r.touchedSince(ctx, b.ApproximateArrivalOfFirstRecord.Add(-arrivalSlack))
		if err != nil {
			return res, fmt.Errorf("auditreplay.replay %s %s: %w", b.ShardID, b.StartSequenceNumber, err)
		}
		unbuildable = append(unbuildable, keys...)
	}
	deferred := 0
	for _, key := range unbuildable {
		n, later, err := r.gapsFor(ctx, key, actor)
		if err != nil {
			return res, fmt.Errorf("auditreplay.replay %s %s: %w", b.ShardID, b.StartSequenceNumber, err)
		}
		res.Gaps += n
		if later {
			deferred++
		}
	}
	if deferred > 0 {
		// Delivered again after the queue's visibility timeout, when they have settled.
		return res, fmt.Errorf("auditreplay.replay %s %s: %d notifications changed too recently to tell a lost transition from one on its way: %w",
			b.ShardID, b.StartSequenceNumber, deferred, ErrTooRecent)
	}
	return res, nil
}

// ErrTooRecent means a replay left a notification for later because its record changed within
// the in-flight window.
var ErrTooRecent = errors.New("changed too recently; retry later")

// replayRecords writes the entries of the records in [start, end] of the shard. gone is true
// when the stream no longer holds the start of the range; unbuildable names the keys of
// records that can never become entries (malformed), which get gap entries instead.
func (r *Replayer) replayRecords(ctx context.Context, b StreamBatchInfo, actor auditlog.Actor, res *ReplayResult) (gone bool, unbuildable []string, err error) {
	it, err := r.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(b.StreamARN), ShardId: aws.String(b.ShardID),
		ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(b.StartSequenceNumber),
	})
	if recordsGone(err) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("shard iterator: %w", err)
	}
	iterator, first, empty := aws.ToString(it.ShardIterator), true, 0
	// An open shard answers empty pages at its end; a few in a row mean the range's end is
	// not coming, which the replay reports so that the message is delivered again.
	for iterator != "" && empty < 3 {
		page, err := r.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(iterator)})
		if recordsGone(err) {
			return true, unbuildable, nil
		}
		if err != nil {
			return false, unbuildable, fmt.Errorf("get records: %w", err)
		}
		iterator = aws.ToString(page.NextShardIterator)
		if len(page.Records) == 0 {
			empty++
			continue
		}
		for _, rec := range page.Records {
			seq := aws.ToString(rec.Dynamodb.SequenceNumber)
			if first && seq != b.StartSequenceNumber {
				return true, unbuildable, nil // the start was trimmed away
			}
			first = false
			if seqLess(b.EndSequenceNumber, seq) {
				return false, unbuildable, nil
			}
			key, err := r.replayOne(ctx, auditlog.EventRecord(rec, b.StreamARN), actor, res)
			if err != nil {
				return false, unbuildable, err
			}
			if key != "" {
				unbuildable = append(unbuildable, key)
			}
			if seq == b.EndSequenceNumber {
				return false, unbuildable, nil
			}
		}
	}
	if first {
		return true, nil, nil // the shard held nothing from the start on
	}
	return false, unbuildable, fmt.Errorf("the stream ended before sequence number %s", b.EndSequenceNumber)
}

// replayOne writes the entry of one record, marked replayed. It returns the record's key
// instead when the record cannot be built into an entry.
func (r *Replayer) replayOne(ctx context.Context, rec events.DynamoDBEventRecord, actor auditlog.Actor, res *ReplayResult) (string, error) {
	e, ok, err := auditlog.Build(rec, auditlog.Meta{Actor: actor, Retention: r.Retention, Now: r.now()})
	if errors.Is(err, auditlog.ErrMalformed) {
		if k, ok := rec.Change.Keys[tables.AttrIdempotencyKey]; ok && k.DataType() == events.DataTypeString {
			return k.String(), nil
		}
		return "", err
	}
	if err != nil || !ok {
		return "", err
	}
	e.Replayed = true
	_, outcome, err := r.Writer.Write(ctx, e)
	if err != nil {
		return "", err
	}
	if outcome == auditlog.Written {
		res.Replayed++
	} else {
		res.Duplicates++
	}
	return "", nil
}

// touchedSince returns the keys of the notifications whose last transition is at or after
// since: every notification a batch that arrived then can have touched. A keys-only Scan of
// the notifications table, filtered on updated_at: it reads the table (which TTL keeps to the
// records of the last days) and keeps the recent keys.
// since is never earlier than MaxBatchAge ago: a batch of a shard the stream still lists is
// no older than that, so a failure record claiming an older arrival (or none) cannot make the
// scan reach further back.
func (r *Replayer) touchedSince(ctx context.Context, since time.Time) ([]string, error) {
	if floor := r.now().Add(-MaxBatchAge); since.Before(floor) {
		since = floor
	}
	expr, err := expression.NewBuilder().
		WithProjection(expression.NamesList(expression.Name(tables.AttrIdempotencyKey))).
		WithFilter(expression.Name(tables.AttrUpdatedAt).GreaterThanEqual(expression.Value(tables.FormatTime(since)))).
		Build()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	p := dynamodb.NewScanPaginator(r.Scan, &dynamodb.ScanInput{
		TableName: aws.String(r.NotificationsTable), ProjectionExpression: expr.Projection(),
		FilterExpression: expr.Filter(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var keys []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		for _, item := range page.Items {
			var k struct {
				Key string `dynamodbav:"idempotency_key"`
			}
			if err := attributevalue.UnmarshalMap(item, &k); err == nil && k.Key != "" {
				keys = append(keys, k.Key)
			}
		}
	}
	return keys, nil
}

// gapsFor writes one gap entry for each run of versions that the chain of key's current
// notification lacks, up to the record's version. A record already removed gets none; one too
// recent to tell a lost transition from one still on its way gets none now (later is true).
func (r *Replayer) gapsFor(ctx context.Context, key string, actor auditlog.Actor) (n int, later bool, err error) {
	rec, err := r.Records.Get(ctx, key)
	if errors.Is(err, notify.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("gap %s: %w", key, err)
	}
	inFlight := r.InFlight
	if inFlight <= 0 {
		inFlight = DefaultInFlight
	}
	if rec.UpdatedAt.After(r.now().Add(-inFlight)) {
		r.log().WarnContext(ctx, "audit replay: record too recent for a gap entry", "notification_id", rec.NotificationID)
		return 0, true, nil
	}
	all, err := r.Reader.Timeline(ctx, rec.EventID)
	if err != nil {
		return 0, false, fmt.Errorf("gap %s: %w", key, err)
	}
	have := map[int64]auditlog.Entry{}
	for _, e := range all {
		if e.NotificationID != rec.NotificationID || e.Purged() {
			continue
		}
		lo := e.Version
		if e.Gap() {
			lo = e.GapFrom
		}
		for v := lo; v <= e.Version; v++ {
			have[v] = e
		}
	}
	for v := int64(1); v <= rec.Version; v++ {
		if _, ok := have[v]; ok {
			continue
		}
		from := v
		for v < rec.Version {
			if _, ok := have[v+1]; ok {
				break
			}
			v++
		}
		e := r.gapEntry(rec, from, v, have[from-1], actor)
		if _, outcome, err := r.Writer.Write(ctx, e); err != nil {
			return n, false, fmt.Errorf("gap %s: %w", key, err)
		} else if outcome == auditlog.Written {
			n++
		}
	}
	return n, false, nil
}

// gapEntry builds the gap entry for versions from..to of rec's notification, from rec's
// allow-listed fields; prev is the entry before the gap, if any.
func (r *Replayer) gapEntry(rec notify.Record, from, to int64, prev auditlog.Entry, actor auditlog.Actor) auditlog.Entry {
	now := r.now()
	retention := r.Retention
	if retention <= 0 {
		retention = auditlog.DefaultRetention
	}
	return auditlog.Entry{
		EventID: rec.EventID, Seq: auditlog.Seq(rec.IdempotencyKey, to), NotificationID: rec.NotificationID,
		Version: to, GapFrom: from, At: now, Day: now.Format(auditlog.DayLayout),
		FromState: prev.ToState, ToState: auditlog.StateGap, Reason: auditlog.ReasonRecordsLost,
		Attempt: int64(rec.Attempt), Provider: rec.Provider, ProviderMessageID: rec.ProviderMessageID,
		DestinationFP: rec.DestinationFP, PolicyVersion: rec.PolicyVersion, SafetyMarginMS: rec.SafetyMargin.Milliseconds(),
		Actor: actor.String(), RetainUntil: now.Add(retention).Unix(), Replayed: true, Reconstructed: true,
	}
}

func (r *Replayer) now() time.Time {
	if r.Clock == nil {
		return time.Now().UTC()
	}
	return r.Clock.Now().UTC()
}

func (r *Replayer) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// recordsGone reports whether err says the stream no longer holds the records: trimmed after
// 24 hours. A shard or stream that is not found is not "gone" but an error: checkBatch found
// the shard a moment before, so the batch is retried (and, if it never succeeds, left in the
// replay DLQ) rather than taken for lost.
func recordsGone(err error) bool {
	var trimmed *streamtypes.TrimmedDataAccessException
	return errors.As(err, &trimmed)
}

// seqLess compares two stream sequence numbers: decimal strings of up to 40 digits.
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
