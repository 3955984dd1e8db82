package compat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// The shapes, by file name in testdata/<release>/.
const (
	RecordFile     = "record.json"
	MessageFile    = "dispatch-message.json"
	ReceiptFile    = "receipt.json"
	AuditEntryFile = "audit-entry.json"
)

// At is when the sample notification was admitted.
var At = time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)

// SampleRecord is the notification every shape describes: sent by its first attempt, so that
// most of a record's fields are set.
func SampleRecord() notify.Record {
	return notify.Record{
		IdempotencyKey: "own3r-fp!evt-1:sms:password_reset", NotificationID: "01JBXAMPLE0000000000000000",
		EventID: "evt-1", Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		State: notify.StateSent, Reason: notify.ReasonProviderAccepted, Version: 3, Attempt: 1,
		CreatedAt: At, UpdatedAt: At.Add(2 * time.Second), ExpiresAt: At.Add(15 * time.Minute),
		DispatchDeadline: At.Add(14 * time.Minute), PolicyVersion: "default-1", SafetyMargin: time.Minute,
		RequestFingerprint: "f00d", Owner: "own3r-fp", Sealed: []byte{1, 2, 3}, DestinationFP: "abcd",
		Provider: "simulator", ProviderMessageID: "sim-42", AttemptedAt: At.Add(time.Second),
		NextActionAt: At.Add(15 * time.Minute), PurgeAt: At.Add(24*time.Hour + 15*time.Minute),
		Actor:    notify.Actor{Function: "dispatch", Version: "7", RequestID: "req-1"},
		PrefixFP: "0a0b0c", Country: "US",
	}
}

// SampleReceipt is the provider's delivery receipt for the sample's attempt.
func SampleReceipt() providerevents.Receipt {
	return providerevents.Receipt{
		AttemptRef: "01JBXAMPLE0000000000000000-a1", MessageID: "sim-42", Status: sms.ReceiptDelivered,
		At: At.Add(5 * time.Second), Provider: "simulator", Detail: "DELIVERED",
	}
}

// Shapes returns each shape as this checkout's code writes it, by file name.
func Shapes() (map[string][]byte, error) {
	rec := SampleRecord()
	item, err := dynamostore.ItemFromRecord(rec)
	if err != nil {
		return nil, fmt.Errorf("compat: record: %w", err)
	}
	out := map[string][]byte{}
	if out[RecordFile], err = ItemJSON(item); err != nil {
		return nil, err
	}
	if out[MessageFile], err = message(rec); err != nil {
		return nil, err
	}
	if out[ReceiptFile], err = receipt(); err != nil {
		return nil, err
	}
	if out[AuditEntryFile], err = auditEntry(item); err != nil {
		return nil, err
	}
	return out, nil
}

// message is the dispatch queue body intake sends for rec.
func message(rec notify.Record) ([]byte, error) {
	q := &capture{}
	if err := sqsqueue.New(q, "dispatch", "reconcile").Enqueue(context.Background(), notify.DispatchQueue, notify.MessageOf(rec), 0); err != nil {
		return nil, fmt.Errorf("compat: message: %w", err)
	}
	return []byte(q.body), nil
}

// receipt is the receipts table's item for SampleReceipt, as provider-events stores it.
func receipt() ([]byte, error) {
	db := &capture{}
	store := providerevents.NewStore(db, "receipts", 0, fixedClock(At.Add(6*time.Second)))
	if _, _, err := store.Put(context.Background(), SampleReceipt()); err != nil {
		return nil, fmt.Errorf("compat: receipt: %w", err)
	}
	return ItemJSON(db.item)
}

// auditEntry is the audit entry the audit function writes for the record's INSERT, first of
// its chain.
func auditEntry(item map[string]ddbtypes.AttributeValue) ([]byte, error) {
	img, err := Image(item)
	if err != nil {
		return nil, err
	}
	rec := events.DynamoDBEventRecord{EventID: "ev1", EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: At.Add(3 * time.Second)},
		NewImage:                    img, SequenceNumber: "1001", StreamViewType: "NEW_AND_OLD_IMAGES",
	}}
	e, ok, err := auditlog.Build(rec, auditlog.Meta{Actor: auditlog.Actor{Function: "audit", Version: "3", RequestID: "req-2"}})
	if err != nil || !ok {
		return nil, fmt.Errorf("compat: audit entry: built %v: %w", ok, err)
	}
	e.WrittenAt = At.Add(4 * time.Second)
	e.WriteDay = e.WrittenAt.Format(auditlog.DayLayout)
	if e, err = auditlog.Link(e, auditlog.GenesisHash); err != nil {
		return nil, fmt.Errorf("compat: audit entry: %w", err)
	}
	return ItemJSON(auditlog.Item(e))
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// capture stands in for SQS and DynamoDB: it keeps what was sent or put.
type capture struct {
	body string
	item map[string]ddbtypes.AttributeValue
}

func (c *capture) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.body = *in.MessageBody
	return &sqs.SendMessageOutput{}, nil
}

func (c *capture) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.item = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

func (c *capture) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errors.New("compat: no reads")
}
