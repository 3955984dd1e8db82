package dynamostore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Get returns the record for key with a strongly consistent read, or an error wrapping
// notify.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (notify.Record, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return notify.Record{}, fmt.Errorf("store.get %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return notify.Record{}, fmt.Errorf("store.get %s: %w", key, notify.ErrNotFound)
	}
	rec, err := RecordFromItem(out.Item)
	if err != nil {
		return notify.Record{}, fmt.Errorf("store.get %s: %w", key, err)
	}
	return rec, nil
}

func keyOf(key string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: key},
	}
}
