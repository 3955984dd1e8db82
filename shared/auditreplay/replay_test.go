package auditreplay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/testenv"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/auditreplay"
	"github.com/resetnotify/resetnotify/shared/tables"
)

func TestFailureRecordSample(t *testing.T) {
	raw, err := os.ReadFile("../../events/audit-failure.json")
	if err != nil {
		t.Fatal(err)
	}
	var fr auditreplay.FailureRecord
	if err := json.Unmarshal(raw, &fr); err != nil {
		t.Fatal(err)
	}
	b := fr.BatchInfo
	if b == nil || b.ShardID != "shardId-00000001573689847184-864758bb" || b.StartSequenceNumber != "800000000003126276362" ||
		b.EndSequenceNumber != "800000000003126276364" || b.BatchSize != 3 || !strings.Contains(b.StreamARN, "/stream/") ||
		b.ApproximateArrivalOfFirstRecord.IsZero() || fr.RequestContext.Condition != "RetryAttemptsExhausted" {
		t.Errorf("decoded %+v %+v", fr, b)
	}
}

// failingPuts is the audit table with every put of the seqs in fail refused, as a throttled
// or unreachable table would refuse them.
type failingPuts struct {
	*dynamodb.Client
	fail map[string]bool
}

func (f failingPuts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if s, ok := in.Item[tables.AuditSeq].(*ddbtypes.AttributeValueMemberS); ok && f.fail[s.Value] {
		return nil, errors.New("injected: audit table unavailable")
	}
	return f.Client.PutItem(ctx, in, opts...)
}

// trimmedStream is a stream that no longer holds any record: what DynamoDB Streams answers
// 24 hours after a record was written.
type trimmedStream struct{ *dynamodbstreams.Client }

func (trimmedStream) GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return nil, &streamtypes.TrimmedDataAccessException{Message: aws.String("injected: records beyond the retention period")}
}

// lostBatch audits notification R (four transitions) and a second, intact notification; the
// batch holding R's versions 2 and 3 fails every retry, so the mapping sends its failure
// record to a real queue. It returns the env and the queue.
func lostBatch(t *testing.T) (*audittest.Env, *sqs.Client, string) {
	env, client, queue, _ := lostBatchWithSecrets(t)
	return env, client, queue
}

// lostBatchWithSecrets is lostBatch that also returns the phone numbers and params sent.
func lostBatchWithSecrets(t *testing.T) (*audittest.Env, *sqs.Client, string, []string) {
	t.Helper()
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	const key = "evt-r:sms:password_reset"
	s.Submit(t, "evt-ok", "", "+447700900401", map[string]string{"code": "OK0001"}, 15*time.Minute)
	s.Submit(t, "evt-r", "", "+447700900402", map[string]string{"code": "R00001"}, 15*time.Minute)
	env.Replay(t, "req-1", env.ReadStream(t, 2))
	s.Step(t, key, time.Second, audittest.Lease)
	s.Step(t, key, time.Second, audittest.Accepted("sim-r"))
	lost := env.ReadStream(t, 2)
	broken := *env.Handler
	broken.Writer = &auditlog.Writer{DB: failingPuts{env.DB, map[string]bool{auditlog.Seq(key, 2): true}}, Table: env.Names.Audit, Clock: env.WriteClock}
	fr := env.DeliverBatch(t, &broken, lost, 2)
	if fr == nil || fr.BatchInfo.BatchSize != 2 {
		t.Fatalf("the mapping did not give up on the batch: %+v", fr)
	}
	s.Step(t, key, time.Second, audittest.Delivered)
	env.Replay(t, "req-2", env.ReadStream(t, 1)) // version 4: chained from nothing
	if p := auditor.Verify(timeline(t, env, "evt-r")); len(p) == 0 || !strings.Contains(p[0].What, "versions 2–3 missing") {
		t.Fatalf("before the replay verify found %v, want versions 2–3 missing", p)
	}

	client := testenv.SQS(t)
	queue := testenv.Queue(t, client, testenv.UniqueName(t, "audit-failure"))
	body, err := json.Marshal(fr)
	if err != nil {
		t.Fatal(err)
	}
	if leaks := audittest.Leaks(string(body), s.Submitted); len(leaks) > 0 {
		t.Errorf("the failure record holds %v", leaks)
	}
	if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(string(body))}); err != nil {
		t.Fatal(err)
	}
	return env, client, queue, s.Submitted
}

func timeline(t *testing.T, env *audittest.Env, eventID string) []auditlog.Entry {
	t.Helper()
	es, err := env.Reader.Timeline(context.Background(), eventID)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func replayer(env *audittest.Env, streams auditreplay.StreamsAPI) *auditreplay.Replayer {
	return &auditreplay.Replayer{
		Streams: streams, Writer: &auditlog.Writer{DB: env.DB, Table: env.Names.Audit, Clock: env.WriteClock},
		Reader: env.Reader, Records: env.Store, Scan: env.DB, NotificationsTable: env.Names.Notifications,
		Function: "resetnotify-audit-replay", FunctionVersion: "$LATEST", Clock: env.WriteClock,
	}
}

// replayQueue runs the replay function on the failure queue once, as its SQS event source
// mapping would, and checks the message was consumed.
func replayQueue(t *testing.T, client *sqs.Client, queue string, r *auditreplay.Replayer) {
	t.Helper()
	res, err := pump.Once(context.Background(), client, queue, r.Handle, pump.Options{WaitTime: 2 * time.Second, Region: "us-east-1"})
	if err != nil || res.Received != 1 || res.Deleted != 1 {
		t.Fatalf("replay pump = %+v, %v; want one message received and deleted", res, err)
	}
}

func checkAll(t *testing.T, env *audittest.Env) auditor.Report {
	t.Helper()
	env.CloseDigests(t)
	now := env.WriteClock.Now()
	b, err := auditor.Collect(context.Background(), env.Reader, now.Add(-time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	return auditor.Check(b, auditor.CheckOptions{PublicKey: &env.SigningKey.PublicKey, Now: now, Grace: audittest.DigestGrace})
}

func TestReplayWritesMissingEntries(t *testing.T) {
	env, client, queue := lostBatch(t)
	env.WriteClock.Advance(time.Minute) // the replay comes later
	r := replayer(env, env.Streams)
	replayQueue(t, client, queue, r)
	es := timeline(t, env, "evt-r")
	if p := auditor.Verify(es); len(p) != 0 {
		t.Fatalf("after the replay: %v", p)
	}
	var replayed []int64
	for _, e := range es {
		if e.Replayed {
			replayed = append(replayed, e.Version)
		}
	}
	if len(es) != 4 || len(replayed) != 2 || replayed[0] != 2 || replayed[1] != 3 {
		t.Errorf("chain has %d entries, replayed versions %v; want 4 and [2 3]", len(es), replayed)
	}
	// Replaying again writes nothing new.
	res, err := r.Replay(context.Background(), *mustFailure(t, env))
	if err != nil || res.Replayed != 0 || res.Duplicates != 2 {
		t.Errorf("second replay = %+v, %v; want 2 duplicates", res, err)
	}
	if rep := checkAll(t, env); !rep.OK() || len(rep.KnownGaps) != 0 {
		t.Errorf("check = %+v, want OK without gaps", rep)
	}
}

func TestReplayWithRecordsGoneWritesGap(t *testing.T) {
	env, client, queue, submitted := lostBatchWithSecrets(t)
	// The trimmed stream stands for the 24 hours having passed; the writer's clock moves on a
	// minute only, so the digest step has few periods to close.
	env.WriteClock.Advance(time.Minute)
	// A record that changed within the in-flight window gets no gap entry yet: the replay
	// fails, so the message comes back later.
	impatient := replayer(env, trimmedStream{env.Streams})
	impatient.InFlight = 24 * time.Hour
	if _, err := impatient.Replay(context.Background(), *mustFailure(t, env)); !errors.Is(err, auditreplay.ErrTooRecent) {
		t.Fatalf("replay of a recent record = %v, want ErrTooRecent", err)
	}
	if g := auditor.KnownGaps(timeline(t, env, "evt-r")); len(g) != 0 {
		t.Fatalf("a gap entry was written for a recent record: %+v", g)
	}
	replayQueue(t, client, queue, replayer(env, trimmedStream{env.Streams}))
	es := timeline(t, env, "evt-r")
	if p := auditor.Verify(es); len(p) != 0 {
		t.Fatalf("after the gap entry: %v", p)
	}
	gaps := auditor.KnownGaps(es)
	if len(gaps) != 1 || gaps[0].FromVersion != 2 || gaps[0].ToVersion != 3 || gaps[0].Seq != "evt-r:sms:password_reset#0000000003#gap" {
		t.Fatalf("known gaps = %+v, want versions 2–3 of evt-r", gaps)
	}
	var gap auditlog.Entry
	for _, e := range es {
		if e.Gap() {
			gap = e
		}
	}
	if !gap.Reconstructed || gap.ToState != auditlog.StateGap || gap.Reason != auditlog.ReasonRecordsLost || gap.ProviderMessageID != "sim-r" || gap.DestinationFP == "" {
		t.Errorf("gap entry = %+v, want it reconstructed from the current record", gap)
	}
	if g := auditor.KnownGaps(timeline(t, env, "evt-ok")); len(g) != 0 {
		t.Errorf("the intact notification got gap entries: %+v", g)
	}
	rep := checkAll(t, env)
	if !rep.OK() || len(rep.KnownGaps) != 1 {
		t.Errorf("check = %+v, want OK with one known gap", rep)
	}
	// Neither the gap entry nor the digests (their manifests decoded) hold a secret.
	for _, item := range env.ScanAudit(t) {
		text := audittest.ItemText(item)
		if d, err := auditlog.DigestFromItem(item); err == nil {
			text += fmt.Sprint(d.Manifest)
		}
		if leaks := audittest.Leaks(text, submitted); len(leaks) > 0 {
			t.Errorf("audit item holds %v", leaks)
		}
	}
}

// mustFailure rebuilds the failure record of the lost batch from the stream, for a second
// replay.
func mustFailure(t *testing.T, env *audittest.Env) *auditreplay.StreamBatchInfo {
	t.Helper()
	out, err := env.Streams.DescribeStream(context.Background(), &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(env.StreamARN())})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range out.StreamDescription.Shards {
		it, err := env.Streams.GetShardIterator(context.Background(), &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(env.StreamARN()), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		page, err := env.Streams.GetRecords(context.Background(), &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) >= 4 {
			return &auditreplay.StreamBatchInfo{ShardID: aws.ToString(sh.ShardId), StreamARN: env.StreamARN(),
				StartSequenceNumber: aws.ToString(page.Records[2].Dynamodb.SequenceNumber),
				EndSequenceNumber:   aws.ToString(page.Records[3].Dynamodb.SequenceNumber)}
		}
	}
	t.Fatal("no shard holds the records")
	return nil
}

// countingScan counts the scans of the notifications table and keeps the last one's input.
type countingScan struct {
	auditreplay.ScanAPI
	n    int
	last *dynamodb.ScanInput
}

func (c *countingScan) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.n++
	c.last = in
	return c.ScanAPI.Scan(ctx, in, opts...)
}

// TestReplayRefusesBatchesNotOfTheStream sends the replay failure records that the stream
// cannot have produced, over a stream whose records are trimmed (so that a replay taking
// them at their word would write gap entries): each is an error that the queue's redrive
// takes to the DLQ; nothing is scanned or written.
func TestReplayRefusesBatchesNotOfTheStream(t *testing.T) {
	env, _, _ := lostBatch(t)
	good := *mustFailure(t, env)
	before := len(env.ScanAudit(t))
	cases := map[string]func(b *auditreplay.StreamBatchInfo){
		"unknown shard": func(b *auditreplay.StreamBatchInfo) { b.ShardID = "shardId-00000001700000000000-deadbeef" },
		"no shard":      func(b *auditreplay.StreamBatchInfo) { b.ShardID = "" },
		"another table": func(b *auditreplay.StreamBatchInfo) {
			b.StreamARN = strings.Replace(b.StreamARN, env.Names.Notifications, "other", 1)
		},
		"not an arn": func(b *auditreplay.StreamBatchInfo) { b.StreamARN = "stream" },
		"end before start": func(b *auditreplay.StreamBatchInfo) {
			b.StartSequenceNumber, b.EndSequenceNumber = b.EndSequenceNumber, b.StartSequenceNumber
		},
		"not a number":       func(b *auditreplay.StreamBatchInfo) { b.StartSequenceNumber = "1e9" },
		"before the shard":   func(b *auditreplay.StreamBatchInfo) { b.StartSequenceNumber = "1" },
		"empty sequence nos": func(b *auditreplay.StreamBatchInfo) { b.StartSequenceNumber, b.EndSequenceNumber = "", "" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := good
			mutate(&b)
			scan := &countingScan{ScanAPI: env.DB}
			r := replayer(env, trimmedStream{env.Streams})
			r.Scan = scan
			body, err := json.Marshal(auditreplay.FailureRecord{Version: "1.0", BatchInfo: &b})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := r.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body)}}})
			if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m1" {
				t.Errorf("Handle = %+v, %v; want m1 reported failed (redriven to the DLQ)", resp, err)
			}
			if _, err := r.Replay(context.Background(), b); !errors.Is(err, auditreplay.ErrNotOurBatch) {
				t.Errorf("Replay = %v, want ErrNotOurBatch", err)
			}
			if scan.n != 0 {
				t.Errorf("the notifications table was scanned %d times", scan.n)
			}
			if n := len(env.ScanAudit(t)); n != before {
				t.Errorf("the audit table went from %d to %d items", before, n)
			}
		})
	}
	// The same batch as the stream has it goes through (here: records gone, a gap entry).
	r := replayer(env, trimmedStream{env.Streams})
	if res, err := r.Replay(context.Background(), good); err != nil || !res.RecordsGone {
		t.Errorf("the genuine batch: %+v, %v; want records gone", res, err)
	}
}

// TestReplayScanIsBounded gives the replay a genuine batch with no arrival time: the scan for
// the notifications it touched starts MaxBatchAge ago, not at the beginning of time.
func TestReplayScanIsBounded(t *testing.T) {
	env, _, _ := lostBatch(t)
	b := *mustFailure(t, env)
	b.ApproximateArrivalOfFirstRecord = time.Time{}
	scan := &countingScan{ScanAPI: env.DB}
	r := replayer(env, trimmedStream{env.Streams})
	r.Scan = scan
	if _, err := r.Replay(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if scan.n == 0 || scan.last.FilterExpression == nil {
		t.Fatalf("scans %d, last %+v; want a filtered scan", scan.n, scan.last)
	}
	want := tables.FormatTime(env.WriteClock.Now().Add(-auditreplay.MaxBatchAge))
	found := false
	for _, v := range scan.last.ExpressionAttributeValues {
		if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok && s.Value == want {
			found = true
		}
	}
	if !found {
		t.Errorf("scan filter values %v, want updated_at >= %s", scan.last.ExpressionAttributeValues, want)
	}
}
