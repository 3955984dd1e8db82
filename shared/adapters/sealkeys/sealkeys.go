// Package sealkeys is the seal-keys table (SEAL_KEYS_TABLE): the seal.KeyStore that holds, once
// each, the KMS-encrypted data keys that sealed envelopes name by a 16-byte ID, so that the
// ~184-byte encrypted key is not stored in every notification record (docs/benchmarks.md, "The
// record, byte by byte"). Intake puts (never overwrites); dispatch gets, strongly consistent.
package sealkeys

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// API is the part of the DynamoDB client the table uses; *dynamodb.Client satisfies it.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Table is the seal-keys table named Name.
type Table struct {
	DB   API
	Name string
	// Now is the clock of created_at; time.Now when nil.
	Now func() time.Time
}

var _ seal.KeyStore = (*Table)(nil)

// New returns the seal-keys table name on db.
func New(db API, name string) *Table { return &Table{DB: db, Name: name} }

// PutKey writes the encrypted data key under id, with the TTL expiresAt, only if no item has
// that ID (a conditional put: the store never replaces a key an envelope may name). A put the
// SDK retried after its answer was lost finds its own item and fails its condition: when the
// stored key is the one given, that is this put having succeeded, and PutKey returns nil.
func (t *Table) PutKey(ctx context.Context, id, encrypted []byte, expiresAt time.Time) error {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	_, err := t.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.Name),
		Item: map[string]ddbtypes.AttributeValue{
			tables.SealKeyID:        &ddbtypes.AttributeValueMemberS{Value: hex.EncodeToString(id)},
			tables.SealKeyEncrypted: &ddbtypes.AttributeValueMemberB{Value: encrypted},
			tables.SealKeyCreatedAt: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(now().UnixMilli(), 10)},
			tables.SealKeyTTL:       &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(expiresAt.Unix(), 10)},
		},
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": tables.SealKeyID},
		// The item that failed the condition comes back with the error: no read, and no
		// GetItem for intake's role.
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var taken *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &taken) {
		if stored, ok := taken.Item[tables.SealKeyEncrypted].(*ddbtypes.AttributeValueMemberB); ok && bytes.Equal(stored.Value, encrypted) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("sealkeys.put %x: %w", id, err)
	}
	return nil
}

// GetKey reads the encrypted data key stored under id with a consistent read (the record that
// names it may have been written milliseconds after it). A missing item, or one without the
// key, gives an error wrapping seal.ErrUnknownKey: the envelope cannot be opened, ever.
func (t *Table) GetKey(ctx context.Context, id []byte) ([]byte, error) {
	out, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(t.Name),
		Key:            map[string]ddbtypes.AttributeValue{tables.SealKeyID: &ddbtypes.AttributeValueMemberS{Value: hex.EncodeToString(id)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("sealkeys.get %x: %w", id, err)
	}
	b, ok := out.Item[tables.SealKeyEncrypted].(*ddbtypes.AttributeValueMemberB)
	if !ok || len(b.Value) == 0 {
		return nil, fmt.Errorf("sealkeys.get %x: no such data key: %w", id, seal.ErrUnknownKey)
	}
	return b.Value, nil
}
