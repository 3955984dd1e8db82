package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Transition replaces prev by next in one UpdateItem. It SETs the fields a transition may
// change and REMOVEs those that became empty: sealed once sending is done, next_action_at and
// due_shard once nothing is due, lease_until when the lease is released. The fields fixed at
// admission (key, IDs, request fingerprint, deadlines, policy, ttl) are never written again.
//
// The write is conditioned on the stored version being prev.Version and, when next takes the
// lease (state dispatching), on dispatch_deadline being after next.UpdatedAt, so a slow worker
// cannot lease late. A failed condition returns an error wrapping notify.ErrConflict.
func (s *Store) Transition(ctx context.Context, prev, next notify.Record) error {
	key := prev.IdempotencyKey
	if next.IdempotencyKey != key || next.Version != prev.Version+1 {
		return fmt.Errorf("store.transition %s: next is %s v%d, want %s v%d", key,
			next.IdempotencyKey, next.Version, key, prev.Version+1)
	}
	it := toItem(next)
	name := expression.Name

	update := expression.Set(name(tables.AttrState), expression.Value(it.State)).
		Set(name(tables.AttrReason), expression.Value(it.Reason)).
		Set(name(tables.AttrVersion), expression.Value(it.Version)).
		Set(name(tables.AttrAttempt), expression.Value(it.Attempt)).
		Set(name(tables.AttrUpdatedAt), expression.Value(it.UpdatedAt)).
		Set(name(tables.AttrReconcileCount), expression.Value(it.ReconcileCount))
	optional := []struct {
		attr  string
		set   bool
		value any
	}{
		{tables.AttrSealed, it.Sealed != nil, it.Sealed},
		{tables.AttrProvider, it.Provider != "", it.Provider},
		{tables.AttrProviderMessageID, it.ProviderMessageID != "", it.ProviderMessageID},
		{tables.AttrLeaseUntil, it.LeaseUntil != "", it.LeaseUntil},
		{tables.AttrAttemptedAt, it.AttemptedAt != "", it.AttemptedAt},
		{tables.AttrNextActionAt, it.NextActionAt != "", it.NextActionAt},
		{tables.AttrDueShard, it.DueShard != nil, it.DueShard},
	}
	for _, o := range optional {
		if o.set {
			update = update.Set(name(o.attr), expression.Value(o.value))
		} else {
			update = update.Remove(name(o.attr))
		}
	}

	cond := name(tables.AttrVersion).Equal(expression.Value(prev.Version))
	if next.State == notify.StateDispatching {
		cond = cond.And(name(tables.AttrDispatchDeadline).GreaterThan(expression.Value(it.UpdatedAt)))
	}
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("store.transition %s: build expression: %w", key, err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(key),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if isConditionFailed(err) {
		return fmt.Errorf("store.transition %s v%d -> %s: %w", key, prev.Version, next.State, notify.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store.transition %s v%d -> %s: %w", key, prev.Version, next.State, err)
	}
	return nil
}
