package auditreplay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// ErrNotOurBatch means a failure record does not describe a batch of the notifications
// table's stream as it is: another stream, a shard the stream does not have, or sequence
// numbers outside the shard. The replay writes nothing for it and leaves the message to the
// queue's redrive, so it ends in the replay DLQ for a person to look at.
var ErrNotOurBatch = errors.New("not a batch of the notifications stream")

// MaxBatchAge bounds how old a batch the replay can be asked about is: the stream lists a
// shard until its last record is trimmed, 24 hours after it was written, and a shard takes
// records for hours; two days cover both. The scan for the notifications a lost batch touched
// never reaches further back.
const MaxBatchAge = 48 * time.Hour

// checkBatch checks b against the stream: it must name the notifications table's stream, a
// shard that stream lists, and a sequence range (start ≤ end, decimal) inside that shard's.
// Anyone able to send to the failure queue could otherwise have the replay write gap entries
// ("records gone") for every notification, or scan the notifications table from the start.
func (r *Replayer) checkBatch(ctx context.Context, b StreamBatchInfo) error {
	if err := r.checkStreamARN(b.StreamARN); err != nil {
		return err
	}
	if !decimal(b.StartSequenceNumber) || !decimal(b.EndSequenceNumber) || seqLess(b.EndSequenceNumber, b.StartSequenceNumber) {
		return fmt.Errorf("sequence numbers %q..%q are not a range: %w", b.StartSequenceNumber, b.EndSequenceNumber, ErrNotOurBatch)
	}
	shard, err := r.findShard(ctx, b.StreamARN, b.ShardID)
	if err != nil {
		return err
	}
	rng := shard.SequenceNumberRange
	if rng == nil {
		return fmt.Errorf("shard %q has no sequence range: %w", b.ShardID, ErrNotOurBatch)
	}
	if lo := aws.ToString(rng.StartingSequenceNumber); lo != "" && seqLess(b.StartSequenceNumber, lo) {
		return fmt.Errorf("sequence number %s is before shard %q starts: %w", b.StartSequenceNumber, b.ShardID, ErrNotOurBatch)
	}
	if hi := aws.ToString(rng.EndingSequenceNumber); hi != "" && seqLess(hi, b.EndSequenceNumber) {
		return fmt.Errorf("sequence number %s is after shard %q ends: %w", b.EndSequenceNumber, b.ShardID, ErrNotOurBatch)
	}
	return nil
}

// checkStreamARN checks that streamARN is a stream of the notifications table.
func (r *Replayer) checkStreamARN(streamARN string) error {
	a, err := arn.Parse(streamARN)
	table, label, ok := strings.Cut(strings.TrimPrefix(a.Resource, "table/"), "/stream/")
	if err != nil || a.Service != "dynamodb" || !strings.HasPrefix(a.Resource, "table/") || !ok || label == "" ||
		table != r.NotificationsTable {
		return fmt.Errorf("stream %q is not the notifications table's: %w", streamARN, ErrNotOurBatch)
	}
	return nil
}

// findShard returns the shard named id of the stream, reading the stream's description page
// by page. A shard the stream does not list is ErrNotOurBatch.
func (r *Replayer) findShard(ctx context.Context, streamARN, id string) (streamtypes.Shard, error) {
	if id == "" {
		return streamtypes.Shard{}, fmt.Errorf("no shard ID: %w", ErrNotOurBatch)
	}
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)}
	for {
		out, err := r.Streams.DescribeStream(ctx, in)
		var notFound *streamtypes.ResourceNotFoundException
		if errors.As(err, &notFound) {
			return streamtypes.Shard{}, fmt.Errorf("stream %q: %w", streamARN, ErrNotOurBatch)
		}
		if err != nil {
			return streamtypes.Shard{}, fmt.Errorf("describe stream: %w", err)
		}
		desc := out.StreamDescription
		if desc == nil {
			return streamtypes.Shard{}, errors.New("describe stream: no description")
		}
		for _, sh := range desc.Shards {
			if aws.ToString(sh.ShardId) == id {
				return sh, nil
			}
		}
		if desc.LastEvaluatedShardId == nil {
			return streamtypes.Shard{}, fmt.Errorf("shard %q is not in the stream: %w", id, ErrNotOurBatch)
		}
		in.ExclusiveStartShardId = desc.LastEvaluatedShardId
	}
}

// decimal reports whether s is a stream sequence number: 1 to 40 decimal digits.
func decimal(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
