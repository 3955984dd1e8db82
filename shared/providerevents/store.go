package providerevents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// DefaultRetention is how long a receipt is kept when RECEIPT_RETENTION_DAYS is not set: long
// enough for any reconciliation of a notification (its token lives at most a day, a carrier
// may report up to 72 hours late), short enough to stay small.
const DefaultRetention = 7 * 24 * time.Hour

// statusAccepted is the stored status of an intermediate receipt (sms.ReceiptNone).
const statusAccepted = "accepted"

// API is the part of the DynamoDB client the store uses; *dynamodb.Client satisfies it.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store keeps receipts in the receipts table, one item per attempt_ref. It implements
// sms.ReceiptReader for the reconcile worker. It is safe for concurrent use.
type Store struct {
	client    API
	table     string
	retention time.Duration
	clock     notify.Clock
}

var _ sms.ReceiptReader = (*Store)(nil)

// NewStore returns a store over the receipts table named table. Each receipt expires (TTL)
// retention after it was recorded; retention <= 0 means DefaultRetention. A nil clock is the
// system clock.
func NewStore(client API, table string, retention time.Duration, clock notify.Clock) *Store {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if clock == nil {
		clock = notify.SystemClock{}
	}
	return &Store{client: client, table: table, retention: retention, clock: clock}
}

// item is a receipt as stored. Its tags must be the tables.Receipt* names; a test checks them,
// since Go cannot use a constant in a struct tag. It has no field for a number or a body.
type item struct {
	AttemptRef     string `dynamodbav:"attempt_ref"`
	MessageID      string `dynamodbav:"message_id,omitempty"`
	Status         string `dynamodbav:"status"`
	At             string `dynamodbav:"at,omitempty"`
	NotificationID string `dynamodbav:"notification_id"`
	Provider       string `dynamodbav:"provider"`
	Detail         string `dynamodbav:"detail,omitempty"`
	RecordedAt     string `dynamodbav:"recorded_at"`
	TTL            int64  `dynamodbav:"ttl"`
}

func toItem(r Receipt, ttl time.Time) item {
	id, _, _ := r.Attempt()
	status := string(r.Status)
	if r.Status == sms.ReceiptNone {
		status = statusAccepted
	}
	return item{
		AttemptRef:     r.AttemptRef,
		MessageID:      r.MessageID,
		Status:         status,
		At:             tables.FormatTime(r.At),
		NotificationID: id,
		Provider:       r.Provider,
		Detail:         r.Detail,
		RecordedAt:     tables.FormatTime(r.RecordedAt),
		TTL:            ttl.Unix(),
	}
}

func fromItem(av map[string]ddbtypes.AttributeValue) (Receipt, error) {
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return Receipt{}, fmt.Errorf("decode receipt: %w", err)
	}
	r := Receipt{AttemptRef: it.AttemptRef, MessageID: it.MessageID, Provider: it.Provider, Detail: it.Detail}
	switch it.Status {
	case statusAccepted:
		r.Status = sms.ReceiptNone
	case string(sms.ReceiptDelivered), string(sms.ReceiptUndelivered):
		r.Status = sms.ReceiptStatus(it.Status)
	default:
		return Receipt{}, fmt.Errorf("decode receipt %s: unknown status %q", it.AttemptRef, it.Status)
	}
	var err error
	if r.At, err = tables.ParseTime(it.At); err != nil {
		return Receipt{}, fmt.Errorf("decode receipt %s: %w", it.AttemptRef, err)
	}
	if r.RecordedAt, err = tables.ParseTime(it.RecordedAt); err != nil {
		return Receipt{}, fmt.Errorf("decode receipt %s: %w", it.AttemptRef, err)
	}
	return r, nil
}

// Put records rc and returns the receipt stored for its attempt afterwards, and whether this
// call changed it. It is one PutItem conditioned so that only a first receipt, or a final one
// over a stored intermediate one, is written (see Supersedes); when the condition fails
// DynamoDB returns the stored item in the same call, so a duplicate costs one request.
func (s *Store) Put(ctx context.Context, rc Receipt) (stored Receipt, changed bool, err error) {
	if err := rc.Validate(); err != nil {
		return Receipt{}, false, err
	}
	rc.RecordedAt = s.clock.Now()
	av, err := attributevalue.MarshalMap(toItem(rc, rc.RecordedAt.Add(s.retention)))
	if err != nil {
		return Receipt{}, false, fmt.Errorf("providerevents.put %s: %w", rc.AttemptRef, err)
	}
	cond := expression.AttributeNotExists(expression.Name(tables.ReceiptAttemptRef))
	if rc.Final() {
		cond = cond.Or(expression.Name(tables.ReceiptStatus).Equal(expression.Value(statusAccepted)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return Receipt{}, false, fmt.Errorf("providerevents.put %s: build condition: %w", rc.AttemptRef, err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                av,
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return rc, true, nil
	}
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Receipt{}, false, fmt.Errorf("providerevents.put %s: %w", rc.AttemptRef, err)
	}
	if len(ccf.Item) == 0 {
		// Not expected from DynamoDB; read it instead of guessing.
		got, ok, err := s.Get(ctx, rc.AttemptRef)
		if err != nil || !ok {
			return Receipt{}, false, fmt.Errorf("providerevents.put %s: condition failed, stored receipt unreadable (found %v): %w", rc.AttemptRef, ok, err)
		}
		return got, false, nil
	}
	got, err := fromItem(ccf.Item)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("providerevents.put %s: %w", rc.AttemptRef, err)
	}
	return got, false, nil
}

// Get returns the receipt stored for attemptRef with a strongly consistent read, and false
// when there is none.
func (s *Store) Get(ctx context.Context, attemptRef string) (Receipt, bool, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table),
		Key: map[string]ddbtypes.AttributeValue{
			tables.ReceiptAttemptRef: &ddbtypes.AttributeValueMemberS{Value: attemptRef},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Receipt{}, false, fmt.Errorf("providerevents.get %s: %w", attemptRef, err)
	}
	if len(out.Item) == 0 {
		return Receipt{}, false, nil
	}
	rc, err := fromItem(out.Item)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("providerevents.get %s: %w", attemptRef, err)
	}
	return rc, true, nil
}

// FindByAttemptRef implements sms.ReceiptReader: the receipt recorded for attemptRef (the
// final one when there is one, since a final receipt replaces an intermediate one), and false
// when none is recorded.
func (s *Store) FindByAttemptRef(ctx context.Context, attemptRef string) (sms.Receipt, bool, error) {
	rc, ok, err := s.Get(ctx, attemptRef)
	if err != nil || !ok {
		return sms.Receipt{}, ok, err
	}
	return rc.SMS(), true, nil
}
