package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/resetnotify/resetnotify/infra/samtemplate"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/auditreplay"
)

// streamHandler is the signature of a DynamoDB stream Lambda handler with partial batch
// responses.
type streamHandler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// pollInterval is how often an idle shard is read again; Lambda's mapping polls about 4 times
// a second.
const pollInterval = 250 * time.Millisecond

// shardRefresh is how often the stream's shard list is read again.
const shardRefresh = 5 * time.Second

// streamRetryDelay is the pause before a failed record is handed to the function again.
var streamRetryDelay = time.Second

// pollStream reads every shard of table's stream from its oldest record and hands the records
// to h in batches, as the Lambda event source mapping src with ReportBatchItemFailures would:
// up to its batch size per batch, an idle stream read again after its batching window (at
// least pollInterval), a batch item failure makes the next read start again at the failed
// record, and once the same record has failed src.MaxRetries more times the rest of the batch
// is given up on and described to onFailure (the on-failure destination). It returns when ctx
// ends.
func pollStream(ctx context.Context, streams *dynamodbstreams.Client, db *dynamodb.Client, table string, src samtemplate.Source,
	h streamHandler, onFailure func(context.Context, auditreplay.FailureRecord) error, log *slog.Logger) error {
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("stream of %s: %w", table, err)
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	if arn == "" {
		return fmt.Errorf("table %s has no stream", table)
	}
	p := &streamPoller{streams: streams, arn: arn, src: src, h: h, onFailure: onFailure, log: log, shards: map[string]*shardState{}}
	for ctx.Err() == nil {
		if !p.refreshShards(ctx) {
			continue
		}
		busy := false
		for id, st := range p.shards {
			if st.done || st.iterator == "" {
				continue
			}
			if p.pollShard(ctx, id, st) {
				busy = true
			}
		}
		if !busy {
			sleep(ctx, max(pollInterval, src.Window))
		}
	}
	return nil
}

// streamPoller is pollStream's state: the stream, its event source mapping's settings and
// where each shard is read.
type streamPoller struct {
	streams   *dynamodbstreams.Client
	arn       string
	src       samtemplate.Source
	h         streamHandler
	onFailure func(context.Context, auditreplay.FailureRecord) error
	log       *slog.Logger
	shards    map[string]*shardState
	// described is when the shard list was last read.
	described time.Time
}

// shardState is where one shard is read.
type shardState struct {
	iterator string
	done     bool
	// failedSeq is the record that failed last, failures how often in a row.
	failedSeq string
	failures  int
}

// advance moves st to the next iterator; none means the shard is closed and read to its end.
func (st *shardState) advance(next *string) {
	st.iterator = aws.ToString(next)
	st.done = st.iterator == ""
}

// refreshShards takes a TRIM_HORIZON iterator for each new shard. New shards appear rarely
// (DynamoDB Local rolls them over every few hours): it looks for them every shardRefresh, not
// on every poll. It reports false when the stream could not be described.
func (p *streamPoller) refreshShards(ctx context.Context) bool {
	if time.Since(p.described) < shardRefresh {
		return true
	}
	out, err := p.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.arn)})
	if err != nil {
		p.log.Warn("describe stream failed", "error", err)
		sleep(ctx, time.Second)
		return false
	}
	p.described = time.Now()
	for _, s := range out.StreamDescription.Shards {
		id := aws.ToString(s.ShardId)
		if _, ok := p.shards[id]; ok {
			continue
		}
		it, err := p.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(p.arn), ShardId: s.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			p.log.Warn("shard iterator failed", "shard", id, "error", err)
			continue
		}
		p.shards[id] = &shardState{iterator: aws.ToString(it.ShardIterator)}
	}
	return true
}

// pollShard reads one batch of shard id and hands it to the handler. It reports whether the
// shard had records.
func (p *streamPoller) pollShard(ctx context.Context, id string, st *shardState) bool {
	recs, err := p.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(st.iterator), Limit: aws.Int32(int32(p.src.BatchSize))})
	if err != nil {
		// An iterator DynamoDB Local calls trimmed or expired never recovers: forget the
		// shard so the next refresh takes a fresh TRIM_HORIZON iterator. Reading again
		// from the oldest record is safe: the audit writer skips entries it has.
		p.log.Warn("get records failed; taking a new iterator", "shard", id, "error", err)
		delete(p.shards, id)
		p.described = time.Time{}
		sleep(ctx, time.Second)
		return false
	}
	if len(recs.Records) == 0 {
		st.advance(recs.NextShardIterator)
		return false
	}
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, len(recs.Records))}
	for _, r := range recs.Records {
		ev.Records = append(ev.Records, auditlog.EventRecord(r, p.arn))
	}
	resp, err := p.h(ctx, ev)
	if err != nil {
		p.log.Warn("stream batch failed; retrying", "shard", id, "error", err)
		sleep(ctx, time.Second)
		return true
	}
	if len(resp.BatchItemFailures) > 0 {
		p.failed(ctx, id, st, ev, resp.BatchItemFailures[0].ItemIdentifier, recs.NextShardIterator)
		return true
	}
	st.advance(recs.NextShardIterator)
	return true
}

// failed handles a batch whose record seq failed: the next read starts again at seq, until it
// has failed src.MaxRetries more times; then the rest of the batch goes to the on-failure
// destination and the shard moves on to next.
func (p *streamPoller) failed(ctx context.Context, id string, st *shardState, ev events.DynamoDBEvent, seq string, next *string) {
	if seq == st.failedSeq {
		st.failures++
	} else {
		st.failedSeq, st.failures = seq, 0
	}
	if p.src.MaxRetries >= 0 && st.failures >= p.src.MaxRetries {
		fr := failureRecord(id, p.arn, seq, ev.Records, p.src.MaxRetries)
		if err := p.onFailure(ctx, fr); err != nil {
			p.log.Warn("on-failure destination failed; retrying the batch", "shard", id, "error", err)
			sleep(ctx, streamRetryDelay)
			return
		}
		p.log.Warn("stream batch given up on; sent to the on-failure destination", "shard", id,
			"start", fr.BatchInfo.StartSequenceNumber, "end", fr.BatchInfo.EndSequenceNumber)
		st.failedSeq, st.failures = "", 0
		st.advance(next)
		return
	}
	it, err := p.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(p.arn), ShardId: aws.String(id),
		ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(seq),
	})
	if err == nil {
		st.iterator = aws.ToString(it.ShardIterator)
	}
	p.log.Warn("stream record failed; retrying from it", "shard", id, "sequence_number", seq)
	sleep(ctx, streamRetryDelay)
}

// failureRecord describes the records of batch from the one with sequence number failed on,
// as Lambda's on-failure destination message does.
func failureRecord(shard, streamARN, failed string, batch []events.DynamoDBEventRecord, retries int) auditreplay.FailureRecord {
	for i, r := range batch {
		if r.Change.SequenceNumber == failed {
			batch = batch[i:]
			break
		}
	}
	return auditreplay.NewFailureRecord(shard, streamARN, batch, retries+1, time.Now())
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
