package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Transition replaces prev by next in one UpdateItem. It SETs the fields a transition may
// change and REMOVEs those that became empty: decide_by and decided_at once the record has
// left accepted, sealed once sending is done, next_action_at and due_shard once nothing is
// due, lease_until and lease_token when the lease is released, reconcile_count at 0. The
// fields fixed at admission (key, IDs, request fingerprint, deadlines, policy, ttl) are never
// written again. It also writes next's actor and a fresh write token.
//
// The write is conditioned on the stored version being prev.Version and, when next takes the
// lease (state dispatching), on dispatch_deadline being after next.UpdatedAt, so a slow worker
// cannot lease late; a refusal (state refused) also on the record not being settled
// (decided_at absent). From dispatching it is also conditioned on no early receipt having
// arrived since prev was read, so the caller learns of one and can apply it. A failed
// condition returns a *notify.ConflictError with the stored record (ALL_OLD), unless that
// record is this very write, committed by an earlier try of the SDK's retryer: then
// Transition succeeds.
func (s *Store) Transition(ctx context.Context, prev, next notify.Record) error {
	key := prev.IdempotencyKey
	if next.IdempotencyKey != key || next.Version != prev.Version+1 {
		return fmt.Errorf("store.transition %s: next is %s v%d, want %s v%d", key,
			next.IdempotencyKey, next.Version, key, prev.Version+1)
	}
	token := newToken()
	expr, err := transitionExpression(prev, next, token)
	if err != nil {
		return fmt.Errorf("store.transition %s: build expression: %w", key, err)
	}
	if err := s.updateIf(ctx, key, expr, token, next.Version); err != nil {
		return fmt.Errorf("store.transition %s v%d -> %s: %w", key, prev.Version, next.State, err)
	}
	return nil
}

// transitionExpression builds the update and condition of Transition.
func transitionExpression(prev, next notify.Record, token string) (expression.Expression, error) {
	it := toItem(next)
	name := expression.Name

	update := expression.Set(name(tables.AttrState), expression.Value(it.State)).
		Set(name(tables.AttrReason), expression.Value(it.Reason)).
		Set(name(tables.AttrVersion), expression.Value(it.Version)).
		Set(name(tables.AttrAttempt), expression.Value(it.Attempt)).
		Set(name(tables.AttrUpdatedAt), expression.Value(it.UpdatedAt)).
		Set(name(tables.AttrWriteToken), expression.Value(token))
	update = setOrRemove(update,
		optional{tables.AttrSealed, it.Sealed != nil, it.Sealed},
		optional{tables.AttrProvider, it.Provider != "", it.Provider},
		optional{tables.AttrProviderMessageID, it.ProviderMessageID != "", it.ProviderMessageID},
		optional{tables.AttrAttemptProviders, len(it.AttemptProviders) > 0, it.AttemptProviders},
		optional{tables.AttrLeaseUntil, it.LeaseUntil != "", it.LeaseUntil},
		optional{tables.AttrLeaseToken, it.LeaseToken != "", it.LeaseToken},
		optional{tables.AttrAttemptedAt, it.AttemptedAt != "", it.AttemptedAt},
		optional{tables.AttrNotFoundAt, it.NotFoundAt != "", it.NotFoundAt},
		optional{tables.AttrNextActionAt, it.NextActionAt != "", it.NextActionAt},
		optional{tables.AttrDueShard, it.DueShard != nil, it.DueShard},
		optional{tables.AttrActor, it.Actor != "", it.Actor},
		optional{tables.AttrEarlyReceipt, it.EarlyReceipt != "", it.EarlyReceipt},
		optional{tables.AttrRequeuedAt, it.RequeuedAt != "", it.RequeuedAt},
		optional{tables.AttrAttemptedNotificationID, it.AttemptedNotificationID != "", it.AttemptedNotificationID},
		optional{tables.AttrConvertedAt, it.ConvertedAt != "", it.ConvertedAt},
		optional{tables.AttrReconcileCount, it.ReconcileCount != 0, it.ReconcileCount},
		// The decision bound ends with accepted (notify.Record.tidy).
		optional{tables.AttrDecideBy, it.DecideBy != "", it.DecideBy},
		optional{tables.AttrDecidedAt, it.DecidedAt != "", it.DecidedAt},
	)
	if it.RetryAt != "" {
		update = update.Set(name(tables.AttrRetryAt), expression.Value(it.RetryAt))
	}

	cond := name(tables.AttrVersion).Equal(expression.Value(prev.Version))
	if next.State == notify.StateDispatching {
		cond = cond.And(name(tables.AttrDispatchDeadline).GreaterThan(expression.Value(it.UpdatedAt)))
	}
	if next.State == notify.StateRefused {
		// The creator's refusal loses to a duplicate's settle after the decision bound.
		cond = cond.And(expression.AttributeNotExists(name(tables.AttrDecidedAt)))
	}
	if prev.State == notify.StateDispatching && !prev.EarlyReceipt.Held() {
		cond = cond.And(expression.AttributeNotExists(name(tables.AttrEarlyReceipt)))
	}
	return expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
}
