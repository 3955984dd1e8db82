package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

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
	update := setOrRemove(expression.Set(name(tables.AttrWriteToken), expression.Value(token)),
		optional{tables.AttrNextActionAt, it.NextActionAt != "", it.NextActionAt},
		optional{tables.AttrDueShard, it.DueShard != nil, it.DueShard},
		optional{tables.AttrRequeuedAt, it.RequeuedAt != "", it.RequeuedAt},
	)
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
	if err := s.updateIf(ctx, key, expr, token, next.Version); err != nil {
		return fmt.Errorf("store.reschedule %s v%d: %w", key, prev.Version, err)
	}
	return nil
}
