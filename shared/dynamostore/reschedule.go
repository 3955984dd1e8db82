package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Reschedule writes next's next_action_at (with its due shard) and requeued_at over prev in
// one UpdateItem conditioned on the stored version and next_action_at still being prev's. It
// is not a transition: the version, and so the audit trail, stay as they are. A failed
// condition returns a *notify.ConflictError, unless the stored item carries this write's own
// token (the SDK retried it after it had committed).
func (s *Store) Reschedule(ctx context.Context, prev, next notify.Record) error {
	key := prev.IdempotencyKey
	if next.IdempotencyKey != key || next.Version != prev.Version {
		return fmt.Errorf("store.reschedule %s: next is %s v%d, want %s v%d", key,
			next.IdempotencyKey, next.Version, key, prev.Version)
	}
	token := newToken()
	it, old := toItem(next), toItem(prev)
	name := expression.Name
	update := expression.Set(name(tables.AttrWriteToken), expression.Value(token))
	for _, o := range []struct {
		attr  string
		set   bool
		value any
	}{
		{tables.AttrNextActionAt, it.NextActionAt != "", it.NextActionAt},
		{tables.AttrDueShard, it.DueShard != nil, it.DueShard},
		{tables.AttrRequeuedAt, it.RequeuedAt != "", it.RequeuedAt},
	} {
		if o.set {
			update = update.Set(name(o.attr), expression.Value(o.value))
		} else {
			update = update.Remove(name(o.attr))
		}
	}
	cond := name(tables.AttrVersion).Equal(expression.Value(prev.Version))
	if old.NextActionAt == "" {
		cond = cond.And(expression.AttributeNotExists(name(tables.AttrNextActionAt)))
	} else {
		cond = cond.And(name(tables.AttrNextActionAt).Equal(expression.Value(old.NextActionAt)))
	}
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("store.reschedule %s: build expression: %w", key, err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 keyOf(key),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if isConditionFailed(err) {
		err = conflict(err, token, next.Version)
	}
	if err != nil {
		return fmt.Errorf("store.reschedule %s v%d: %w", key, prev.Version, err)
	}
	return nil
}
