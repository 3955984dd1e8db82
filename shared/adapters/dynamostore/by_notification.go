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

// KeyByNotificationID returns the idempotency key of the record whose notification ID is id,
// read from the sparse KEYS_ONLY by_notification index, which holds records from their first
// lease on (a receipt names an attempt, so its record was leased). It only reads. The index is eventually
// consistent, so a record admitted a moment ago may not be found yet; callers read the record
// itself with Get, which is consistent. It returns an error wrapping notify.ErrNotFound when
// no record carries id, and an error when more than one does (notification IDs are ULIDs, so
// that would be a bug worth stopping for).
func (s *Store) KeyByNotificationID(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("store.key by notification: empty ID: %w", notify.ErrNotFound)
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(tables.AttrAttemptedNotificationID).Equal(expression.Value(id))).
		Build()
	if err != nil {
		return "", fmt.Errorf("store.key by notification %s: build key condition: %w", id, err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(tables.IndexByNotification),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		// Two are enough to tell "one" from "more than one".
		Limit: aws.Int32(2),
	})
	if err != nil {
		return "", fmt.Errorf("store.key by notification %s: %w", id, err)
	}
	switch len(out.Items) {
	case 0:
		return "", fmt.Errorf("store.key by notification %s: %w", id, notify.ErrNotFound)
	case 1:
	default:
		return "", fmt.Errorf("store.key by notification %s: %d records share the ID", id, len(out.Items))
	}
	key, ok := out.Items[0][tables.AttrIdempotencyKey].(*ddbtypes.AttributeValueMemberS)
	if !ok || key.Value == "" {
		return "", fmt.Errorf("store.key by notification %s: index item without %s", id, tables.AttrIdempotencyKey)
	}
	return key.Value, nil
}
