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

	"github.com/resetnotify/resetnotify/dev/samtemplate"
	"github.com/resetnotify/resetnotify/shared/audit"
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
	h streamHandler, onFailure func(context.Context, audit.FailureRecord) error, log *slog.Logger) error {
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("stream of %s: %w", table, err)
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	if arn == "" {
		return fmt.Errorf("table %s has no stream", table)
	}
	type shardState struct {
		iterator string
		done     bool
		// failedSeq is the record that failed last, failures how often in a row.
		failedSeq string
		failures  int
	}
	shards := map[string]*shardState{}
	var described time.Time
	for ctx.Err() == nil {
		// New shards appear rarely (DynamoDB Local rolls them over every few hours): look
		// for them every few seconds, not on every poll.
		var found []streamtypes.Shard
		if time.Since(described) >= shardRefresh {
			out, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
			if err != nil {
				log.Warn("describe stream failed", "error", err)
				sleep(ctx, time.Second)
				continue
			}
			described, found = time.Now(), out.StreamDescription.Shards
		}
		for _, s := range found {
			id := aws.ToString(s.ShardId)
			if _, ok := shards[id]; ok {
				continue
			}
			it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(arn), ShardId: s.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
			})
			if err != nil {
				log.Warn("shard iterator failed", "shard", id, "error", err)
				continue
			}
			shards[id] = &shardState{iterator: aws.ToString(it.ShardIterator)}
		}
		busy := false
		for id, st := range shards {
			if st.done || st.iterator == "" {
				continue
			}
			recs, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(st.iterator), Limit: aws.Int32(int32(src.BatchSize))})
			if err != nil {
				// An iterator DynamoDB Local calls trimmed or expired never recovers: forget the
				// shard so the next refresh takes a fresh TRIM_HORIZON iterator. Reading again
				// from the oldest record is safe: the audit writer skips entries it has.
				log.Warn("get records failed; taking a new iterator", "shard", id, "error", err)
				delete(shards, id)
				described = time.Time{}
				sleep(ctx, time.Second)
				continue
			}
			if len(recs.Records) == 0 {
				st.iterator = aws.ToString(recs.NextShardIterator)
				st.done = st.iterator == ""
				continue
			}
			busy = true
			ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, len(recs.Records))}
			for _, r := range recs.Records {
				ev.Records = append(ev.Records, audit.EventRecord(r, arn))
			}
			resp, err := h(ctx, ev)
			if err != nil {
				log.Warn("stream batch failed; retrying", "shard", id, "error", err)
				sleep(ctx, time.Second)
				continue
			}
			if len(resp.BatchItemFailures) > 0 {
				seq := resp.BatchItemFailures[0].ItemIdentifier
				if seq == st.failedSeq {
					st.failures++
				} else {
					st.failedSeq, st.failures = seq, 0
				}
				if src.MaxRetries >= 0 && st.failures >= src.MaxRetries {
					fr := failureRecord(id, arn, seq, ev.Records, src.MaxRetries)
					if err := onFailure(ctx, fr); err != nil {
						log.Warn("on-failure destination failed; retrying the batch", "shard", id, "error", err)
						sleep(ctx, streamRetryDelay)
						continue
					}
					log.Warn("stream batch given up on; sent to the on-failure destination", "shard", id,
						"start", fr.BatchInfo.StartSequenceNumber, "end", fr.BatchInfo.EndSequenceNumber)
					st.failedSeq, st.failures = "", 0
					st.iterator = aws.ToString(recs.NextShardIterator)
					st.done = st.iterator == ""
					continue
				}
				it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
					StreamArn: aws.String(arn), ShardId: aws.String(id),
					ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: aws.String(seq),
				})
				if err == nil {
					st.iterator = aws.ToString(it.ShardIterator)
				}
				log.Warn("stream record failed; retrying from it", "shard", id, "sequence_number", seq)
				sleep(ctx, streamRetryDelay)
				continue
			}
			st.iterator = aws.ToString(recs.NextShardIterator)
			st.done = st.iterator == ""
		}
		if !busy {
			sleep(ctx, max(pollInterval, src.Window))
		}
	}
	return nil
}

// failureRecord describes the records of batch from the one with sequence number failed on,
// as Lambda's on-failure destination message does.
func failureRecord(shard, streamARN, failed string, batch []events.DynamoDBEventRecord, retries int) audit.FailureRecord {
	for i, r := range batch {
		if r.Change.SequenceNumber == failed {
			batch = batch[i:]
			break
		}
	}
	return audit.NewFailureRecord(shard, streamARN, batch, retries+1, time.Now())
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
