package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// QueryDue returns up to limit records of due-index shard shard whose next_action_at is at or
// before now, earliest first. The index is eventually consistent: a record may appear a moment
// after it became due or still appear just after it moved on, so the sweeper must act through
// Transition, whose version condition settles any race. limit <= 0 means no limit.
func (s *Store) QueryDue(ctx context.Context, shard int, now time.Time, limit int) ([]notify.Record, error) {
	if shard < 0 || shard >= tables.DueShards {
		return nil, fmt.Errorf("store.query due: shard %d outside [0,%d)", shard, tables.DueShards)
	}
	keyCond := expression.Key(tables.AttrDueShard).Equal(expression.Value(shard)).
		And(expression.Key(tables.AttrNextActionAt).LessThanEqual(expression.Value(tables.FormatTime(now))))
	recs, err := s.query(ctx, tables.IndexDue, keyCond, limit)
	if err != nil {
		return nil, fmt.Errorf("store.query due shard %d: %w", shard, err)
	}
	return recs, nil
}

// ListByEvent returns every record admitted for eventID, through the by_event index (which is
// eventually consistent).
func (s *Store) ListByEvent(ctx context.Context, eventID string) ([]notify.Record, error) {
	keyCond := expression.Key(tables.AttrEventID).Equal(expression.Value(eventID))
	recs, err := s.query(ctx, tables.IndexByEvent, keyCond, 0)
	if err != nil {
		return nil, fmt.Errorf("store.list by event %s: %w", eventID, err)
	}
	return recs, nil
}

// query pages through an index until it has limit records (no limit when limit <= 0) or the
// index is exhausted.
func (s *Store) query(ctx context.Context, index string, keyCond expression.KeyConditionBuilder, limit int) ([]notify.Record, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, fmt.Errorf("build key condition: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(index),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(true),
	}
	var out []notify.Record
	for {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		}
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, av := range page.Items {
			rec, err := RecordFromItem(av)
			if err != nil {
				return nil, err
			}
			out = append(out, rec)
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
