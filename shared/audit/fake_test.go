package audit

import (
	"context"
	"errors"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// fakeDB is an in-memory audit table for the writer: PutItem honours only the writer's
// condition, attribute_not_exists(seq), and reports a failure with the old item when
// returnOld is set, as DynamoDB does.
type fakeDB struct {
	mu        sync.Mutex
	items     map[string]map[string]ddbtypes.AttributeValue
	returnOld bool
	puts      int
	// failPut, when set, fails the put of that seq.
	failPut string
}

func newFakeDB() *fakeDB {
	return &fakeDB{items: map[string]map[string]ddbtypes.AttributeValue{}, returnOld: true}
}

func fakeKey(item map[string]ddbtypes.AttributeValue) string {
	return item[tables.AuditEventID].(*ddbtypes.AttributeValueMemberS).Value + "|" +
		item[tables.AuditSeq].(*ddbtypes.AttributeValueMemberS).Value
}

func (f *fakeDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: maps.Clone(f.items[fakeKey(in.Key)])}, nil
}

func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fakeKey(in.Item)
	if f.failPut != "" && in.Item[tables.AuditSeq].(*ddbtypes.AttributeValueMemberS).Value == f.failPut {
		return nil, errors.New("fake: throttled")
	}
	if old, ok := f.items[k]; ok {
		e := &ddbtypes.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		if f.returnOld {
			e.Item = maps.Clone(old)
		}
		return nil, e
	}
	f.items[k] = maps.Clone(in.Item)
	f.puts++
	return &dynamodb.PutItemOutput{}, nil
}

// entries returns every stored entry in timeline order.
func (f *fakeDB) entries() []Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Entry
	keys := make([]string, 0, len(f.items))
	for k := range f.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e, err := FromItem(f.items[k])
		if err != nil {
			panic(err)
		}
		out = append(out, e)
	}
	return Sorted(out)
}

// rec is a notification as a stream image holds it, for building test records.
type rec struct {
	key, eventID, id, state, reason string
	version, attempt                int64
	updated                         time.Time
	provider, providerMessageID     string
}

// image returns the stream image of r, with the attributes that must never reach the audit
// table (the sealed payload, and a stray phone number) added.
func (r rec) image() map[string]events.DynamoDBAttributeValue {
	m := map[string]events.DynamoDBAttributeValue{
		tables.AttrIdempotencyKey:     events.NewStringAttribute(r.key),
		tables.AttrEventID:            events.NewStringAttribute(r.eventID),
		tables.AttrNotificationID:     events.NewStringAttribute(r.id),
		tables.AttrChannel:            events.NewStringAttribute("sms"),
		tables.AttrPurpose:            events.NewStringAttribute("password_reset"),
		tables.AttrState:              events.NewStringAttribute(r.state),
		tables.AttrReason:             events.NewStringAttribute(r.reason),
		tables.AttrVersion:            events.NewNumberAttribute(strconv.FormatInt(r.version, 10)),
		tables.AttrAttempt:            events.NewNumberAttribute(strconv.FormatInt(r.attempt, 10)),
		tables.AttrCreatedAt:          events.NewStringAttribute(tables.FormatTime(t0)),
		tables.AttrUpdatedAt:          events.NewStringAttribute(tables.FormatTime(r.updated)),
		tables.AttrExpiresAt:          events.NewStringAttribute(tables.FormatTime(t0.Add(15 * time.Minute))),
		tables.AttrPolicyVersion:      events.NewStringAttribute("policy-7"),
		tables.AttrSafetyMarginMS:     events.NewNumberAttribute("60000"),
		tables.AttrRequestFingerprint: events.NewStringAttribute("f00d"),
		tables.AttrDestinationFP:      events.NewStringAttribute("fp0123456789abcd"),
		tables.AttrSealed:             events.NewBinaryAttribute([]byte(`{"to":"+447700900123","params":{"reset_url":"https://shop.example/reset?t=SECRET"}}`)),
		"to":                          events.NewStringAttribute("+447700900123"),
	}
	if r.provider != "" {
		m[tables.AttrProvider] = events.NewStringAttribute(r.provider)
	}
	// The actor that made the transition, as the store writes it.
	m[tables.AttrActor] = events.NewStringAttribute("fn-" + r.state + ":1/req-" + strconv.FormatInt(r.version, 10))
	if r.providerMessageID != "" {
		m[tables.AttrProviderMessageID] = events.NewStringAttribute(r.providerMessageID)
	}
	return m
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

var seqNo int

func streamRecord(name string, oldImg, newImg map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	seqNo++
	return events.DynamoDBEventRecord{
		EventID:   "ev" + strconv.Itoa(seqNo),
		EventName: name,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: t0.Add(time.Hour)},
			NewImage:                    newImg,
			OldImage:                    oldImg,
			SequenceNumber:              strconv.Itoa(1000 + seqNo),
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}
}

func insert(r rec) events.DynamoDBEventRecord { return streamRecord("INSERT", nil, r.image()) }

func modify(old, r rec) events.DynamoDBEventRecord {
	return streamRecord("MODIFY", old.image(), r.image())
}

func remove(old rec, id *events.DynamoDBUserIdentity) events.DynamoDBEventRecord {
	r := streamRecord("REMOVE", old.image(), nil)
	r.UserIdentity = id
	return r
}

var ttlIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}

// lifecycle returns the records of one notification: admitted, leased, sent, delivered.
func lifecycle(key, eventID, id string) []rec {
	base := rec{key: key, eventID: eventID, id: id}
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
	out := make([]rec, len(steps))
	for i, s := range steps {
		r := base
		r.state, r.reason, r.attempt, r.provider, r.providerMessageID = s.state, s.reason, s.attempt, s.provider, s.pm
		r.version = int64(i + 1)
		r.updated = t0.Add(time.Duration(i) * 1500 * time.Millisecond)
		out[i] = r
	}
	return out
}

// lifecycleRecords returns the stream records of lifecycle, ending with a TTL removal.
func lifecycleRecords(key, eventID, id string) []events.DynamoDBEventRecord {
	rs := lifecycle(key, eventID, id)
	out := []events.DynamoDBEventRecord{insert(rs[0])}
	for i := 1; i < len(rs); i++ {
		out = append(out, modify(rs[i-1], rs[i]))
	}
	return append(out, remove(rs[len(rs)-1], ttlIdentity))
}
