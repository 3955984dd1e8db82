package intake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// realFixture is a handler wired to DynamoDB Local (dynamostore), real AES-GCM sealing with a
// local key, and an SQS queue on moto_server (sqsqueue), with a fake clock standing at the
// wall-clock time of the test so that TTL never removes what the test reads.
type realFixture struct {
	h        *intake.Handler
	ddb      *dynamodb.Client
	sqs      *sqs.Client
	table    string
	queueURL string
	clock    *notifytest.Clock
	logs     *syncBuffer
	// calls counts the AWS requests of the handler's clients.
	calls *awscount.Counter
	seq   int
	mu    sync.Mutex
}

func newRealFixture(t *testing.T) *realFixture {
	t.Helper()
	ddb := testenv.DynamoDB(t)
	sqsClient := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit")}
	if err := tablesetup.Create(ctx, ddb, names); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit} {
			_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	f := &realFixture{
		ddb: ddb, sqs: sqsClient, table: names.Notifications,
		queueURL: testenv.Queue(t, sqsClient, testenv.UniqueName(t, "dispatch")),
		clock:    notifytest.NewClock(time.Now().UTC().Truncate(time.Second)),
		logs:     &syncBuffer{},
		calls:    awscount.NewCounter(),
	}
	counted := testenv.Config()
	f.calls.Instrument(&counted)
	keys, err := seal.NewStaticKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := seal.NewFingerprinter([]byte("integration-test-pepper"))
	if err != nil {
		t.Fatal(err)
	}
	fingerprints, err := seal.NewRequestFingerprinter([]byte("integration-test-fingerprint-key-0123"))
	if err != nil {
		t.Fatal(err)
	}
	in := &notify.Service{
		Store:        dynamostore.New(awsclient.DynamoDB(counted, os.Getenv(emulator.EnvDynamoDBEndpoint)), f.table),
		Sealer:       seal.New(keys),
		Hasher:       hasher,
		Fingerprints: fingerprints,
		Queue:        sqsqueue.New(awsclient.SQS(counted, os.Getenv(emulator.EnvSQSEndpoint)), f.queueURL, ""),
		Clock:        f.clock,
		Policy:       notify.DefaultPolicy(),
		NewID:        func() string { return ulid.Make().String() },
	}
	f.h = intake.New(in, obs.NewLogger(f.logs, nil), nil)
	return f
}

func (f *realFixture) do(t *testing.T, ev eventT) eventResponse {
	t.Helper()
	f.mu.Lock()
	f.seq++
	ev.RequestContext.RequestID = fmt.Sprintf("it-%04d", f.seq)
	f.mu.Unlock()
	resp, err := f.h.Handle(t.Context(), ev)
	if err != nil {
		t.Errorf("Handle returned an error: %v", err)
	}
	checkCommon(t, ev, resp)
	return resp
}

// scan returns every item of the notifications table, decoded into plain Go values.
func (f *realFixture) scan(t *testing.T) []map[string]any {
	t.Helper()
	out, err := f.ddb.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(f.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	items := make([]map[string]any, 0, len(out.Items))
	for _, it := range out.Items {
		items = append(items, plain(t, it))
	}
	return items
}

// rawItem returns the stored item for key, decoded into plain Go values.
func (f *realFixture) rawItem(t *testing.T, key string) map[string]any {
	t.Helper()
	out, err := f.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(f.table),
		Key:            map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || out.Item == nil {
		t.Fatalf("get item %s: %v (found %v)", key, err, out != nil && out.Item != nil)
	}
	return plain(t, out.Item)
}

func plain(t *testing.T, item map[string]ddbtypes.AttributeValue) map[string]any {
	t.Helper()
	var m map[string]any
	if err := attributevalue.UnmarshalMap(item, &m); err != nil {
		t.Fatalf("unmarshal item: %v", err)
	}
	return m
}

// receiveAll receives until want messages arrived, or the queue has been empty for a whole
// long poll, or a deadline passed, and returns their bodies. SendMessage has returned before the
// handler answers, so an empty long poll means nothing more is coming.
func (f *realFixture) receiveAll(t *testing.T, want int) []string {
	t.Helper()
	var bodies []string
	deadline := time.Now().Add(20 * time.Second)
	for len(bodies) < want && time.Now().Before(deadline) {
		out, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(f.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 300,
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
	}
	return bodies
}

// TestIntegrationReplayCost counts the AWS requests of replays, sequentially, against DynamoDB
// Local and moto: inside the enqueue grace a replay is the one conditional PutItem (which
// returns the stored record); once the record has stayed accepted past the grace the first
// message is presumed lost, and one replay re-sends it (a conditional UpdateItem moving
// next_action_at on, and the SendMessage) while the next is a PutItem again.
func TestIntegrationReplayCost(t *testing.T) {
	f := newRealFixture(t)
	reqBody := bodyAt(f.clock.Now(), nil)
	if r := f.do(t, post(reqBody, "idempotency-key", "replay-cost")); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first: %d %s", r.StatusCode, r.Body)
	}
	put := awscount.Op{Service: "DynamoDB", Operation: "PutItem"}
	update := awscount.Op{Service: "DynamoDB", Operation: "UpdateItem"}
	send := awscount.Op{Service: "SQS", Operation: "SendMessage"}
	steps := []struct {
		name    string
		advance time.Duration
		want    map[awscount.Op]int64
	}{
		{"inside the grace", time.Second, map[awscount.Op]int64{put: 1}},
		{"inside the grace again", time.Second, map[awscount.Op]int64{put: 1}},
		{"past the grace: re-sent once", notify.DefaultPolicy().SweepAfter, map[awscount.Op]int64{put: 1, update: 1, send: 1}},
		{"right after the re-send", time.Second, map[awscount.Op]int64{put: 1}},
	}
	for _, s := range steps {
		f.clock.Advance(s.advance)
		f.calls.Reset()
		if r := f.do(t, post(reqBody, "idempotency-key", "replay-cost")); r.StatusCode != http.StatusOK {
			t.Fatalf("%s: replay %d %s", s.name, r.StatusCode, r.Body)
		}
		if diff := cmp.Diff(s.want, f.calls.Counts()); diff != "" {
			t.Errorf("%s: AWS requests (-want +got):\n%s", s.name, diff)
		}
	}
	if bodies := f.receiveAll(t, 3); len(bodies) != 2 {
		t.Errorf("queue delivered %d messages, want 2 (the admission's and one re-send)", len(bodies))
	}
}

func TestIntegrationConvergence(t *testing.T) {
	f := newRealFixture(t)
	const n = 64
	const key = "converge-1"
	reqBody := bodyAt(f.clock.Now(), nil)

	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		resps = make([]eventResponse, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resps[i] = f.do(t, post(reqBody, "idempotency-key", key))
		}()
	}
	close(start)
	wg.Wait()

	var accepted, replayed int
	ids := map[string]int{}
	for i, r := range resps {
		switch {
		case r.StatusCode == http.StatusAccepted && r.Headers[intake.HeaderIdempotentReplayed] == "":
			accepted++
		case r.StatusCode == http.StatusOK && r.Headers[intake.HeaderIdempotentReplayed] == "true":
			replayed++
		default:
			t.Errorf("response %d: status %d headers %v body %s", i, r.StatusCode, r.Headers, r.Body)
			continue
		}
		ids[decodeView(t, r).NotificationID]++
	}
	if accepted != 1 || replayed != n-1 {
		t.Errorf("%d answers of 202 and %d replays, want 1 and %d", accepted, replayed, n-1)
	}
	if len(ids) != 1 {
		t.Errorf("notification IDs %v, want one", ids)
	}
	items := f.scan(t)
	if len(items) != 1 {
		t.Fatalf("table holds %d items, want 1", len(items))
	}
	var id string
	for k := range ids {
		id = k
	}
	if items[0][tables.AttrNotificationID] != id || items[0][tables.AttrState] != string(notify.StateAccepted) {
		t.Errorf("stored item %v, want notification %s accepted", items[0], id)
	}

	// Only the admission queues the record: a replay inside the enqueue grace presumes its
	// message on the way (one more is allowed: a replay that finds the first one presumed lost).
	bodies := f.receiveAll(t, n)
	if len(bodies) < 1 || len(bodies) > 2 {
		t.Errorf("queue delivered %d messages for %d duplicates, want 1 or 2", len(bodies), n)
	}
	want := notify.Message{IdempotencyKey: key, NotificationID: id, Version: 1}
	for _, b := range bodies {
		var m notify.Message
		if err := json.Unmarshal([]byte(b), &m); err != nil || m != want {
			t.Errorf("queue message %s, want %+v", b, want)
		}
	}

	// The same key with another destination is refused and changes nothing.
	before := f.rawItem(t, key)
	reuse := f.do(t, post(bodyAt(f.clock.Now(), func(m map[string]any) { m["to"] = "+447700900999" }), "idempotency-key", key))
	wantProblem(t, reuse, http.StatusUnprocessableEntity, intake.ProblemKeyReused)
	if d := cmp.Diff(before, f.rawItem(t, key)); d != "" {
		t.Errorf("key reuse changed the stored item (-before +after):\n%s", d)
	}
	if extra := f.receiveAll(t, 1); len(extra) != 0 {
		t.Errorf("key reuse queued %d messages", len(extra))
	}

	// Nothing stored, logged or queued holds the phone number or the reset URL in clear.
	stored, err := json.Marshal(f.scan(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append([]string{string(stored), f.logs.String()}, bodies...) {
		for _, nd := range needles() {
			if strings.Contains(s, nd) {
				t.Errorf("found %q in %.200s", nd, s)
			}
		}
	}
}

func TestIntegrationBadInput(t *testing.T) {
	f := newRealFixture(t)
	f.do(t, post(bodyAt(f.clock.Now(), nil), "idempotency-key", "existing-1"))
	before := f.scan(t)
	queued := len(f.receiveAll(t, 1))
	if len(before) != 1 || queued != 1 {
		t.Fatalf("setup: %d items, %d messages", len(before), queued)
	}
	for _, tc := range badInputs(f.clock.Now()) {
		t.Run(tc.name, func(t *testing.T) {
			checkBadAnswer(t, tc, f.do(t, tc.ev))
		})
	}
	if d := cmp.Diff(before, f.scan(t)); d != "" {
		t.Errorf("bad input changed the table (-before +after):\n%s", d)
	}
	if extra := f.receiveAll(t, 1); len(extra) != 0 {
		t.Errorf("bad input queued %d messages", len(extra))
	}
}

func TestIntegrationLifecycle(t *testing.T) {
	f := newRealFixture(t)
	now := f.clock.Now()
	first := f.do(t, post(bodyAt(now, nil), "idempotency-key", "life-1"))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %d %s", first.StatusCode, first.Body)
	}
	if got := f.do(t, get("life-1")); got.StatusCode != http.StatusOK || !cmp.Equal(decodeView(t, got), decodeView(t, first)) {
		t.Errorf("get: %d %s", got.StatusCode, got.Body)
	}
	f.clock.Advance(time.Second)
	cancelled := f.do(t, del("life-1"))
	if cancelled.StatusCode != http.StatusOK || decodeView(t, cancelled).State != notify.StateCancelled {
		t.Errorf("delete: %d %s", cancelled.StatusCode, cancelled.Body)
	}
	p := wantProblem(t, f.do(t, del("life-1")), http.StatusConflict, intake.ProblemNotCancellable)
	if p.State != notify.StateCancelled {
		t.Errorf("409 state = %q", p.State)
	}
	wantProblem(t, f.do(t, get("life-404")), http.StatusNotFound, intake.ProblemNotificationNotFound)
	wantProblem(t, f.do(t, del("life-404")), http.StatusNotFound, intake.ProblemNotificationNotFound)

	expired := f.do(t, post(bodyAt(now, func(m map[string]any) {
		m["event_id"] = "evt-late"
		m["expires_at"] = now.Add(30 * time.Second).Format(time.RFC3339)
	})))
	if expired.StatusCode != http.StatusAccepted || decodeView(t, expired).State != notify.StateExpired {
		t.Errorf("late post: %d %s", expired.StatusCode, expired.Body)
	}
	if item := f.rawItem(t, "evt-late:sms:password_reset"); item[tables.AttrSealed] != nil {
		t.Errorf("expired admission kept a sealed payload")
	}
	if bodies := f.receiveAll(t, 2); len(bodies) != 1 {
		t.Errorf("queue delivered %d messages, want 1 (the first admission only)", len(bodies))
	}
}
