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

// Admit writes rec unless an item holds its key, as one PutItem conditioned on
// attribute_not_exists(idempotency_key). On a conflict DynamoDB returns the existing item in
// the same call (ReturnValuesOnConditionCheckFailure ALL_OLD), so a replay costs one request
// and never a second read. The put carries a fresh write token: when the SDK retried a put that
// had already committed, the item returned holds that token and the admission is ours.
func (s *Store) Admit(ctx context.Context, rec notify.Record) (notify.Record, bool, error) {
	av, err := ItemFromRecord(rec)
	if err != nil {
		return notify.Record{}, false, fmt.Errorf("store.admit %s: %w", rec.IdempotencyKey, err)
	}
	token := newToken()
	av[tables.AttrWriteToken] = &ddbtypes.AttributeValueMemberS{Value: token}
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(expression.Name(tables.AttrIdempotencyKey))).
		Build()
	if err != nil {
		return notify.Record{}, false, fmt.Errorf("store.admit %s: build condition: %w", rec.IdempotencyKey, err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                av,
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return rec, true, nil
	}
	if !isConditionFailed(err) {
		return notify.Record{}, false, fmt.Errorf("store.admit %s: %w", rec.IdempotencyKey, err)
	}
	existing, stored, err := failedItem(err)
	if err != nil {
		return notify.Record{}, false, fmt.Errorf("store.admit %s: %w", rec.IdempotencyKey, err)
	}
	if stored == token {
		return rec, true, nil
	}
	return existing, false, nil
}
