// Package auditfixture gives the audit tests of several packages (audit, auditor) the same
// inputs: the stream records of a notification's life, from admission to its removal by TTL,
// and an in-memory audit table. It imports no audit package, so that package audit's own tests
// can use it.
package auditfixture

import (
	"context"
	"errors"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// Table is an in-memory audit table for the writer: PutItem honours only the writer's
// condition, attribute_not_exists(seq), and reports a failure with the old item when
// ReturnOld is set, as DynamoDB does.
type Table struct {
	mu        sync.Mutex
	Items     map[string]map[string]ddbtypes.AttributeValue
	ReturnOld bool
	Puts      int
	// FailPut, when set, fails the put of that seq.
	FailPut string
}

// NewTable returns an empty table that reports the old item of a failed condition.
func NewTable() *Table {
	return &Table{Items: map[string]map[string]ddbtypes.AttributeValue{}, ReturnOld: true}
}

func fakeKey(item map[string]ddbtypes.AttributeValue) string {
	return item[tables.AuditEventID].(*ddbtypes.AttributeValueMemberS).Value + "|" +
		item[tables.AuditSeq].(*ddbtypes.AttributeValueMemberS).Value
}

// GetItem returns the item under in.Key, if any.
func (f *Table) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: maps.Clone(f.Items[fakeKey(in.Key)])}, nil
}

// PutItem stores in.Item unless an item is stored under its key.
func (f *Table) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fakeKey(in.Item)
	if f.FailPut != "" && in.Item[tables.AuditSeq].(*ddbtypes.AttributeValueMemberS).Value == f.FailPut {
		return nil, errors.New("fake: throttled")
	}
	if old, ok := f.Items[k]; ok {
		e := &ddbtypes.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		if f.ReturnOld {
			e.Item = maps.Clone(old)
		}
		return nil, e
	}
	f.Items[k] = maps.Clone(in.Item)
	f.Puts++
	return &dynamodb.PutItemOutput{}, nil
}

// Stored returns every stored item but the ledger items (docs/audit.md), ordered by
// event ID and seq.
func (f *Table) Stored() []map[string]ddbtypes.AttributeValue {
	return f.stored(false)
}

// Ledgers returns the stored ledger items, ordered by event ID and seq.
func (f *Table) Ledgers() []map[string]ddbtypes.AttributeValue {
	return f.stored(true)
}

func (f *Table) stored(ledgers bool) []map[string]ddbtypes.AttributeValue {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.Items))
	for k, it := range f.Items {
		id, _ := it[tables.AuditEventID].(*ddbtypes.AttributeValueMemberS)
		if (id != nil && strings.HasPrefix(id.Value, tables.LedgerEventIDPrefix)) == ledgers {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]map[string]ddbtypes.AttributeValue, len(keys))
	for i, k := range keys {
		out[i] = maps.Clone(f.Items[k])
	}
	return out
}

// Rec is a notification as a stream image holds it, for building test records.
type Rec struct {
	Key, EventID, ID, State, Reason string
	Version, Attempt                int64
	Updated                         time.Time
	Provider, ProviderMessageID     string
}

// Image returns the stream image of r, with the attributes that must never reach the audit
// table (the sealed payload, and a stray phone number) added.
func (r Rec) Image() map[string]events.DynamoDBAttributeValue {
	m := map[string]events.DynamoDBAttributeValue{
		tables.AttrIdempotencyKey:     events.NewStringAttribute(r.Key),
		tables.AttrEventID:            events.NewStringAttribute(r.EventID),
		tables.AttrNotificationID:     events.NewStringAttribute(r.ID),
		tables.AttrChannel:            events.NewStringAttribute("sms"),
		tables.AttrPurpose:            events.NewStringAttribute("password_reset"),
		tables.AttrState:              events.NewStringAttribute(r.State),
		tables.AttrReason:             events.NewStringAttribute(r.Reason),
		tables.AttrVersion:            events.NewNumberAttribute(strconv.FormatInt(r.Version, 10)),
		tables.AttrAttempt:            events.NewNumberAttribute(strconv.FormatInt(r.Attempt, 10)),
		tables.AttrCreatedAt:          events.NewStringAttribute(tables.FormatTime(T0)),
		tables.AttrUpdatedAt:          events.NewStringAttribute(tables.FormatTime(r.Updated)),
		tables.AttrExpiresAt:          events.NewStringAttribute(tables.FormatTime(T0.Add(15 * time.Minute))),
		tables.AttrPolicyVersion:      events.NewStringAttribute("policy-7"),
		tables.AttrSafetyMarginMS:     events.NewNumberAttribute("60000"),
		tables.AttrRequestFingerprint: events.NewStringAttribute("f00d"),
		tables.AttrDestinationFP:      events.NewStringAttribute("fp0123456789abcd"),
		tables.AttrSealed:             events.NewBinaryAttribute([]byte(`{"to":"+447700900123","params":{"reset_url":"https://shop.example/reset?t=SECRET"}}`)),
		"to":                          events.NewStringAttribute("+447700900123"),
	}
	if r.Provider != "" {
		m[tables.AttrProvider] = events.NewStringAttribute(r.Provider)
	}
	// The actor that made the transition, as the store writes it.
	m[tables.AttrActor] = events.NewStringAttribute("fn-" + r.State + ":1/req-" + strconv.FormatInt(r.Version, 10))
	if r.ProviderMessageID != "" {
		m[tables.AttrProviderMessageID] = events.NewStringAttribute(r.ProviderMessageID)
	}
	return m
}

// T0 is when the records of Lifecycle were created.
var T0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

var seqNo int

// StreamRecord returns a stream record of the notifications table named name (INSERT,
// MODIFY or REMOVE) with the images given, numbered after the one before.
func StreamRecord(name string, oldImg, newImg map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	seqNo++
	return events.DynamoDBEventRecord{
		EventID:   "ev" + strconv.Itoa(seqNo),
		EventName: name,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: T0.Add(time.Hour)},
			NewImage:                    newImg,
			OldImage:                    oldImg,
			SequenceNumber:              strconv.Itoa(1000 + seqNo),
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}
}

// Insert returns the stream record that admits r.
func Insert(r Rec) events.DynamoDBEventRecord { return StreamRecord("INSERT", nil, r.Image()) }

// Modify returns the stream record of the transition from old to r.
func Modify(old, r Rec) events.DynamoDBEventRecord {
	return StreamRecord("MODIFY", old.Image(), r.Image())
}

// Remove returns the stream record that deletes old, by id when set.
func Remove(old Rec, id *events.DynamoDBUserIdentity) events.DynamoDBEventRecord {
	r := StreamRecord("REMOVE", old.Image(), nil)
	r.UserIdentity = id
	return r
}

// TTLIdentity is the user identity DynamoDB Streams gives a removal by TTL.
var TTLIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}

// Lifecycle returns the records of one notification: admitted, leased, sent, delivered.
func Lifecycle(key, eventID, id string) []Rec {
	base := Rec{Key: key, EventID: eventID, ID: id}
	steps := []struct {
		state, reason string
		attempt       int64
		provider, pm  string
	}{
		{"accepted", "ADMITTED", 0, "", ""},
		{"dispatching", "LEASE_ACQUIRED", 1, "", ""},
		{"sent", "PROVIDER_ACCEPTED", 1, "simulator", "sim-1"},
		{"delivered", "RECEIPT_DELIVERED", 1, "simulator", "sim-1"},
	}
	out := make([]Rec, len(steps))
	for i, s := range steps {
		r := base
		r.State, r.Reason, r.Attempt, r.Provider, r.ProviderMessageID = s.state, s.reason, s.attempt, s.provider, s.pm
		r.Version = int64(i + 1)
		r.Updated = T0.Add(time.Duration(i) * 1500 * time.Millisecond)
		out[i] = r
	}
	return out
}

// LifecycleRecords returns the stream records of Lifecycle, ending with a TTL removal.
func LifecycleRecords(key, eventID, id string) []events.DynamoDBEventRecord {
	rs := Lifecycle(key, eventID, id)
	out := []events.DynamoDBEventRecord{Insert(rs[0])}
	for i := 1; i < len(rs); i++ {
		out = append(out, Modify(rs[i-1], rs[i]))
	}
	return append(out, Remove(rs[len(rs)-1], TTLIdentity))
}
