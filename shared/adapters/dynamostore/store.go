// Package dynamostore keeps notification records in the DynamoDB notifications table. It
// implements notify.Store with one conditional write per call: Admit is a PutItem conditioned
// on the key not existing, which returns the existing item on conflict; Transition is an
// UpdateItem conditioned on the expected version (and, for a lease, on the dispatch deadline
// still being ahead). It never decides a transition; notify.Record.Apply does.
//
// The package has its own storage model (item), so no attribute name reaches the domain.
// Timestamps that an expression compares or another reader parses are stored as
// tables.FormatTime strings (RFC 3339 UTC, nine fraction digits, so string order is time
// order); those only this package reads as Unix milliseconds (msTime), to keep the record
// under 1 KB; ttl is epoch seconds as DynamoDB TTL requires; due_shard and
// next_action_at are present only while the record is due for the sweeper, which keeps the
// due index sparse.
package dynamostore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// API is the part of the DynamoDB client the store uses; *dynamodb.Client satisfies it.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is a notify.Store over one notifications table. It is safe for concurrent use.
type Store struct {
	client API
	table  string
}

var _ notify.Store = (*Store)(nil)

// New returns a store over the notifications table named table.
func New(client API, table string) *Store {
	return &Store{client: client, table: table}
}

// Table returns the name of the table the store writes.
func (s *Store) Table() string { return s.table }

// isConditionFailed reports whether err is a lost conditional write: a failed condition
// expression, or a transaction cancelled because one of its conditions failed.
func isConditionFailed(err error) bool {
	var cf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return true
	}
	var tc *ddbtypes.TransactionCanceledException
	if errors.As(err, &tc) {
		for _, r := range tc.CancellationReasons {
			if r.Code != nil && *r.Code == "ConditionalCheckFailed" {
				return true
			}
		}
	}
	return false
}

// newToken returns a random write token: 16 base32 characters, 80 bits, so two writes of a
// record never share one (the chance is 2^-80 a pair), in 16 bytes of the record where
// rand.Text's 130 bits took 26.
func newToken() string { return rand.Text()[:tokenLen] }

// tokenLen is the length of a write token.
const tokenLen = 16

// failedItem decodes the item a failed condition returned with ALL_OLD, and its write token.
func failedItem(err error) (notify.Record, string, error) {
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || len(ccf.Item) == 0 {
		return notify.Record{}, "", fmt.Errorf("condition failed without the existing item: %w", err)
	}
	return decodeItem(ccf.Item)
}

// conflict turns a failed condition into the store's answer. When the returned item carries
// token at version, the write is our own: the SDK retried it after the first try had
// committed (a timeout or a reset connection on the response), and the retry failed its
// condition only because the write it repeats is already there. It returns nil then, and
// otherwise a *notify.ConflictError holding the stored record.
func conflict(err error, token string, version int64) error {
	cur, stored, derr := failedItem(err)
	if derr != nil {
		return fmt.Errorf("%w: %w", notify.ErrConflict, derr)
	}
	if stored == token && cur.Version == version {
		return nil
	}
	return &notify.ConflictError{Current: cur}
}

// updateIf applies expr's update to the record at key in one UpdateItem conditioned on expr's
// condition. A failed condition returns the stored item (ALL_OLD), which conflict turns into a
// *notify.ConflictError, or into success when it carries token at version.
func (s *Store) updateIf(ctx context.Context, key string, expr expression.Expression, token string, version int64) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 keyOf(key),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if isConditionFailed(err) {
		err = conflict(err, token, version)
	}
	return err
}

// optional is an attribute an update writes when set and removes otherwise.
type optional struct {
	attr  string
	set   bool
	value any
}

// setOrRemove adds each of opts to update: a SET when it is set, a REMOVE when not.
func setOrRemove(update expression.UpdateBuilder, opts ...optional) expression.UpdateBuilder {
	for _, o := range opts {
		if o.set {
			update = update.Set(expression.Name(o.attr), expression.Value(o.value))
		} else {
			update = update.Remove(expression.Name(o.attr))
		}
	}
	return update
}
