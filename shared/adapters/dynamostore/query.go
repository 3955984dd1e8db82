package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// QueryDue returns up to limit records of due-index shard shard whose next_action_at is at or
// before now, earliest first. The index holds keys only, so each record is then read itself
// with a consistent GetItem; one that is gone by then (purged), or whose record is no longer
// due at now, is left out. The index is
// eventually consistent: a record may appear a moment after it became due or still appear just
// after it moved on (the record read then says so), so the sweeper must act through
// Transition, whose version condition settles any race. limit <= 0 means no limit.
func (s *Store) QueryDue(ctx context.Context, shard int, now time.Time, limit int) ([]notify.Record, error) {
	if shard < 0 || shard >= tables.DueShards {
		return nil, fmt.Errorf("store.query due: shard %d outside [0,%d)", shard, tables.DueShards)
	}
	keyCond := expression.Key(tables.AttrDueShard).Equal(expression.Value(shard)).
		And(expression.Key(tables.AttrNextActionAt).LessThanEqual(expression.Value(tables.FormatTime(now))))
	keys, err := s.queryKeys(ctx, tables.IndexDue, keyCond, limit)
	if err != nil {
		return nil, fmt.Errorf("store.query due shard %d: %w", shard, err)
	}
	recs := make([]notify.Record, 0, len(keys))
	for _, key := range keys {
		rec, err := s.Get(ctx, key)
		if errors.Is(err, notify.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store.query due shard %d: %w", shard, err)
		}
		if rec.NextActionAt.IsZero() || rec.NextActionAt.After(now) {
			// Moved on since the index was written: not due (any more).
			continue
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// queryKeys pages through a keys-only index until it has limit idempotency keys (no limit when
// limit <= 0) or the index is exhausted.
func (s *Store) queryKeys(ctx context.Context, index string, keyCond expression.KeyConditionBuilder, limit int) ([]string, error) {
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
	var out []string
	for {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-len(out), 1000)))
		}
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, av := range page.Items {
			key, ok := av[tables.AttrIdempotencyKey].(*ddbtypes.AttributeValueMemberS)
			if !ok || key.Value == "" {
				return nil, fmt.Errorf("index %s item without %s", index, tables.AttrIdempotencyKey)
			}
			out = append(out, key.Value)
		}
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
