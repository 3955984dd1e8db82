package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// HoldReceipt keeps a final receipt (notify.StateDelivered or StateUndelivered, with its
// provider, message ID and time) for rec's current attempt on the record while rec is
// dispatching, so the transition that ends the attempt applies it (see
// notify.Record.EarlyReceipt and formatEarlyReceipt). It is one UpdateItem conditioned on the
// record still being rec's version, dispatching, and holding no receipt yet; it changes no
// version. A failed condition returns a *notify.ConflictError (the caller re-reads and acts on
// the new state), unless the stored item carries this write's own token.
func (s *Store) HoldReceipt(ctx context.Context, rec notify.Record, receipt notify.Receipt) error {
	key := rec.IdempotencyKey
	if rec.State != notify.StateDispatching || (receipt.State != notify.StateDelivered && receipt.State != notify.StateUndelivered) {
		return fmt.Errorf("store.hold_receipt %s: %s receipt on a %s record", key, receipt.State, rec.State)
	}
	token := newToken()
	name := expression.Name
	update := expression.Set(name(tables.AttrEarlyReceipt), expression.Value(formatEarlyReceipt(receipt))).
		Set(name(tables.AttrWriteToken), expression.Value(token))
	cond := name(tables.AttrVersion).Equal(expression.Value(rec.Version)).
		And(name(tables.AttrState).Equal(expression.Value(string(notify.StateDispatching)))).
		And(expression.AttributeNotExists(name(tables.AttrEarlyReceipt)))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("store.hold_receipt %s: build expression: %w", key, err)
	}
	if err := s.updateIf(ctx, key, expr, token, rec.Version); err != nil {
		return fmt.Errorf("store.hold_receipt %s v%d: %w", key, rec.Version, err)
	}
	return nil
}
