package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Settle writes decided_at = at onto rec, counted and admitted by the guard, in one UpdateItem
// conditioned on the stored record being rec's version, accepted, and without decided_at; the
// version and everything else stay, so it is no transition and the audit trail does not
// change. A failed condition returns a *notify.ConflictError with the stored record (ALL_OLD):
// refused, marked by another request that counted it too (or by this very write, retried by
// the SDK after it committed: its decided_at is at, which notify.Decider recognises), or moved
// on by a worker or a caller. It writes no write token.
func (s *Store) Settle(ctx context.Context, rec notify.Record, at time.Time) (notify.Record, error) {
	key := rec.IdempotencyKey
	name := expression.Name
	stamp := tables.FormatTime(at)
	expr, err := expression.NewBuilder().
		WithUpdate(expression.Set(name(tables.AttrDecidedAt), expression.Value(stamp))).
		WithCondition(name(tables.AttrVersion).Equal(expression.Value(rec.Version)).
			And(name(tables.AttrState).Equal(expression.Value(string(notify.StateAccepted)))).
			And(expression.AttributeNotExists(name(tables.AttrDecidedAt)))).
		Build()
	if err != nil {
		return notify.Record{}, fmt.Errorf("store.settle %s: build expression: %w", key, err)
	}
	// A token never written: no stored item can match it.
	if err := s.updateIf(ctx, key, expr, newToken(), rec.Version); err != nil {
		return notify.Record{}, fmt.Errorf("store.settle %s v%d: %w", key, rec.Version, err)
	}
	settled := rec
	settled.DecidedAt = at
	return settled, nil
}
