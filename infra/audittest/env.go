package audittest

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/auditreplay"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Deadline bounds every wait on DynamoDB Local: tables becoming active, stream records
// appearing, TTL removing an item.
const Deadline = 60 * time.Second

// Env is a pair of fresh tables in DynamoDB Local, the real store over the notifications
// table, a reader of its stream, and the real audit handler over the audit table.
type Env struct {
	DB      *dynamodb.Client
	Streams *dynamodbstreams.Client
	Names   tables.Names
	Store   *dynamostore.Store
	Handler *audit.Handler
	Reader  *auditlog.Reader
	// WriteClock is the audit writer's clock, which stamps written_at: it starts at
	// WriteStart and moves only when a test moves it.
	WriteClock *notifytest.Clock
	// SigningKey signs the digests of Digester; PublicKeyPEM is its public half.
	SigningKey   *ecdsa.PrivateKey
	PublicKeyPEM []byte

	streamARN string
	iterators map[string]string // shard ID → next iterator; "" once the shard is closed
	shards    map[string]string // sequence number → shard ID of every record read
}

// NewEnv creates the tables (tablesetup.Create) under unique names, or skips t when DynamoDB
// Local is not configured (see testenv).
func NewEnv(t testing.TB) *Env {
	t.Helper()
	db := testenv.DynamoDB(t)
	names := tables.Names{
		Notifications: testenv.UniqueName(t, "notif"),
		Audit:         testenv.UniqueName(t, "audit"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	if err := tablesetup.Create(ctx, db, names); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Deadline)
		defer cancel()
		for _, n := range []string{names.Notifications, names.Audit} {
			_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	return Attach(t, names)
}

// Attach returns an Env over tables that already exist (created by tablesetup.Create, e.g. by
// stacktest.Stack), reading the notifications table's stream from now on. It does not delete
// them when t ends.
func Attach(t testing.TB, names tables.Names) *Env {
	t.Helper()
	db := testenv.DynamoDB(t)
	streams := testenv.Streams(t)
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(names.Notifications)})
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := digest.NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := digest.PublicKeyPEM(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	clock := notifytest.NewClock(WriteStart)
	return &Env{
		DB:           db,
		Streams:      streams,
		Names:        names,
		Store:        dynamostore.New(db, names.Notifications),
		WriteClock:   clock,
		SigningKey:   key,
		PublicKeyPEM: pub,
		Handler: &audit.Handler{
			Writer:   &auditlog.Writer{DB: db, Table: names.Audit, Clock: clock},
			Function: "resetnotify-audit", FunctionVersion: "$LATEST",
			Clock: notify.SystemClock{},
		},
		Reader:    &auditlog.Reader{DB: db, Table: names.Audit},
		streamARN: aws.ToString(out.Table.LatestStreamArn),
		iterators: map[string]string{},
		shards:    map[string]string{},
	}
}

// WriteStart is where the audit writer's clock starts: half an hour after ScenarioStart, when
// every scenario has ended, so each entry is written after its transition.
var WriteStart = ScenarioStart.Add(30 * time.Minute)

// DigestPeriod and DigestGrace are the digest settings of Digester: the local stack's.
const (
	DigestPeriod = time.Minute
	DigestGrace  = 10 * time.Second
)

// Digester returns the real digest step over the audit table, signing with e.SigningKey and
// reading the time from clock.
func (e *Env) Digester(clock notify.Clock) *digest.Digester {
	return &digest.Digester{
		DB: e.DB, Table: e.Names.Audit, Signer: digest.LocalSigner{Key: e.SigningKey},
		Period: DigestPeriod, Grace: DigestGrace, Retention: auditlog.DefaultRetention, Clock: clock,
	}
}

// CloseDigests moves the writer's clock past the grace of the current period and runs the
// digest step at that time, so every entry written so far is covered; it returns the
// digests written.
func (e *Env) CloseDigests(t testing.TB) []auditlog.Digest {
	t.Helper()
	now := e.WriteClock.Now().Truncate(DigestPeriod).Add(DigestPeriod + DigestGrace)
	e.WriteClock.Set(now)
	ds, err := e.Digester(notifytest.NewClock(now)).Run(context.Background())
	if err != nil {
		t.Fatalf("digest step: %v", err)
	}
	return ds
}

// StreamARN returns the notifications table's stream ARN.
func (e *Env) StreamARN() string { return e.streamARN }

// ReadStream returns the stream records written since the previous call, converted with
// audit.EventRecord, polling until at least want have arrived or Deadline passes. Records of
// one shard keep their order; shards follow one another in the order DescribeStream lists them.
func (e *Env) ReadStream(t testing.TB, want int) []events.DynamoDBEventRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	var out []events.DynamoDBEventRecord
	for {
		recs, err := e.poll(ctx)
		if err != nil {
			t.Fatalf("audittest.ReadStream: %v", err)
		}
		out = append(out, recs...)
		if len(out) >= want {
			return out
		}
		select {
		case <-ctx.Done():
			t.Fatalf("audittest.ReadStream: %d stream records after %s, want %d", len(out), Deadline, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// poll reads every open shard once to its current end.
func (e *Env) poll(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
	desc, err := e.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(e.streamARN)})
	if err != nil {
		return nil, fmt.Errorf("describe stream: %w", err)
	}
	var out []events.DynamoDBEventRecord
	for _, sh := range desc.StreamDescription.Shards {
		id := aws.ToString(sh.ShardId)
		it, known := e.iterators[id]
		if !known {
			gi, err := e.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(e.streamARN), ShardId: sh.ShardId,
				ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
			})
			if err != nil {
				return nil, fmt.Errorf("shard iterator %s: %w", id, err)
			}
			it = aws.ToString(gi.ShardIterator)
		}
		for it != "" {
			page, err := e.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(it)})
			if err != nil {
				return nil, fmt.Errorf("get records %s: %w", id, err)
			}
			for _, r := range page.Records {
				rec := auditlog.EventRecord(r, e.streamARN)
				e.shards[rec.Change.SequenceNumber] = id
				out = append(out, rec)
			}
			next := aws.ToString(page.NextShardIterator)
			if len(page.Records) == 0 || next == "" {
				it = next
				break
			}
			it = next
		}
		e.iterators[id] = it
	}
	return out, nil
}

// Replay delivers recs to the audit handler as one batch invoked with requestID, and fails t
// on a batch item failure.
func (e *Env) Replay(t testing.TB, requestID string, recs []events.DynamoDBEventRecord) {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
	resp, err := e.Handler.Handle(ctx, events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatalf("audit handler: %v", err)
	}
	if len(resp.BatchItemFailures) > 0 {
		t.Fatalf("audit handler reported failures: %+v", resp.BatchItemFailures)
	}
}

// DeliverBatch hands recs to h as Lambda's stream event source mapping of template.yaml does
// (ReportBatchItemFailures, MaximumRetryAttempts, an on-failure destination): after a batch
// item failure it retries from the failed record, and after retries retries it gives up on
// the rest of the batch and returns the failure record it would send to the destination. It
// returns nil when the batch succeeded.
func (e *Env) DeliverBatch(t testing.TB, h *audit.Handler, recs []events.DynamoDBEventRecord, retries int) *auditreplay.FailureRecord {
	t.Helper()
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-mapping"})
	batch := recs
	for try := 0; ; try++ {
		resp, err := h.Handle(ctx, events.DynamoDBEvent{Records: batch})
		if err != nil {
			t.Fatalf("audit handler: %v", err)
		}
		if len(resp.BatchItemFailures) == 0 {
			return nil
		}
		failed := resp.BatchItemFailures[0].ItemIdentifier
		for i, r := range batch {
			if r.Change.SequenceNumber == failed {
				batch = batch[i:]
				break
			}
		}
		if try < retries {
			continue
		}
		fr := auditreplay.NewFailureRecord(e.shards[batch[0].Change.SequenceNumber], e.streamARN, batch, try+1, time.Now())
		return &fr
	}
}

// ScanAudit returns every item of the audit table but the ledger items (entries, digests,
// archive items), raw, sorted by event ID and seq.
func (e *Env) ScanAudit(t testing.TB) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	var out []map[string]ddbtypes.AttributeValue
	for _, it := range e.scanAll(t) {
		if !auditlog.IsLedgerItem(it) {
			out = append(out, it)
		}
	}
	return out
}

// ScanLedgers returns the ledger items of the audit table (docs/audit.md), raw,
// sorted by event ID and seq.
func (e *Env) ScanLedgers(t testing.TB) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	var out []map[string]ddbtypes.AttributeValue
	for _, it := range e.scanAll(t) {
		if auditlog.IsLedgerItem(it) {
			out = append(out, it)
		}
	}
	return out
}

// scanAll returns every item of the audit table, raw, sorted by event ID and seq.
func (e *Env) scanAll(t testing.TB) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	var out []map[string]ddbtypes.AttributeValue
	p := dynamodb.NewScanPaginator(e.DB, &dynamodb.ScanInput{TableName: aws.String(e.Names.Audit), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("scan audit: %v", err)
		}
		out = append(out, page.Items...)
	}
	key := func(it map[string]ddbtypes.AttributeValue) string {
		s := func(a string) string {
			if v, ok := it[a].(*ddbtypes.AttributeValueMemberS); ok {
				return v.Value
			}
			return ""
		}
		return s(tables.AuditEventID) + "\x00" + s(tables.AuditSeq)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// ExpireNow sets the TTL attribute of the records with keys to a minute ago, so DynamoDB
// Local's TTL process removes them within seconds, and waits until they are gone.
//
// DynamoDB Local 1.25.1 never TTL-deletes an item that lacks the key of a sparse global
// secondary index, and once it meets one it stops deleting anything else in that table. A
// sent or terminal record is not in the due index, so ExpireNow also puts the record back in
// it (due_shard and next_action_at), and a record never leased into by_notification
// (attempted_notification_id), with the same write. That write keeps the version, so the
// audit writer ignores it; real DynamoDB needs no such help.
func (e *Env) ExpireNow(t testing.TB, keys ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	// A minute ago: TTL ignores expiry times more than five years old.
	past := time.Now().Add(-time.Minute)
	for _, key := range keys {
		_, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(e.Names.Notifications),
			Key:       map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: key}},
			// Every sparse index's key too (DynamoDB Local's TTL skips an item that lacks one):
			// the due index's, and by_notification's for a record never leased.
			UpdateExpression: aws.String("SET #ttl = :past, #shard = if_not_exists(#shard, :shard), #next = if_not_exists(#next, :next), #att = if_not_exists(#att, :att)"),
			ExpressionAttributeNames: map[string]string{
				"#ttl": tables.AttrTTL, "#shard": tables.AttrDueShard, "#next": tables.AttrNextActionAt,
				"#att": tables.AttrAttemptedNotificationID,
			},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
				":past":  &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(past.Unix(), 10)},
				":shard": &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(tables.DueShard(key))},
				":next":  &ddbtypes.AttributeValueMemberS{Value: tables.FormatTime(past)},
				":att":   &ddbtypes.AttributeValueMemberS{Value: "expire-now-" + key},
			},
		})
		if err != nil {
			t.Fatalf("expire %s: %v", key, err)
		}
	}
	for _, key := range keys {
		for {
			_, err := e.Store.Get(ctx, key)
			if errors.Is(err, notify.ErrNotFound) {
				break
			}
			if err != nil {
				t.Fatalf("expire %s: %v", key, err)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("expire %s: TTL did not remove the item within %s", key, Deadline)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// Plain returns items as plain Go values (strings, numbers as float64, booleans), so tests
// can compare them with go-cmp and scan them as text.
func Plain(t testing.TB, items []map[string]ddbtypes.AttributeValue) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := attributevalue.UnmarshalListOfMaps(items, &out); err != nil {
		t.Fatalf("audittest.Plain: %v", err)
	}
	return out
}

// ItemText returns item as text for a scanner: one "name=value" line per attribute, sorted,
// with binary values as their raw bytes, so a secret inside a binary attribute shows too.
func ItemText(item map[string]ddbtypes.AttributeValue) string {
	names := make([]string, 0, len(item))
	for n := range item {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		writeValue(&b, item[n])
		b.WriteByte('\n')
	}
	return b.String()
}

func writeValue(b *strings.Builder, v ddbtypes.AttributeValue) {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		b.WriteString(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		b.WriteString(x.Value)
	case *ddbtypes.AttributeValueMemberB:
		b.Write(x.Value)
	case *ddbtypes.AttributeValueMemberBOOL:
		fmt.Fprint(b, x.Value)
	case *ddbtypes.AttributeValueMemberSS:
		b.WriteString(strings.Join(x.Value, " "))
	case *ddbtypes.AttributeValueMemberNS:
		b.WriteString(strings.Join(x.Value, " "))
	case *ddbtypes.AttributeValueMemberBS:
		for _, v := range x.Value {
			b.Write(v)
			b.WriteByte(' ')
		}
	case *ddbtypes.AttributeValueMemberL:
		for _, v := range x.Value {
			writeValue(b, v)
			b.WriteByte(' ')
		}
	case *ddbtypes.AttributeValueMemberM:
		b.WriteString(ItemText(x.Value))
	}
}
