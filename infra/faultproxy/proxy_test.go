package faultproxy

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// upstream is a fake emulator: it records what reached it and answers each operation with a
// minimal success the SDK accepts.
type upstream struct {
	mu     sync.Mutex
	got    []recorded
	server *httptest.Server
}

type recorded struct {
	target, host string
	body         []byte
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		target := r.Header.Get("X-Amz-Target")
		if target == "" {
			v, _ := url.ParseQuery(string(body))
			target = v.Get("Action")
		}
		u.mu.Lock()
		u.got = append(u.got, recorded{target: target, host: r.Host, body: body})
		u.mu.Unlock()
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		var in map[string]any
		_ = json.Unmarshal(body, &in)
		switch target {
		case "AmazonSQS.SendMessage":
			writeJSONBody(w, map[string]any{"MessageId": "m-1", "MD5OfMessageBody": md5hex(in["MessageBody"].(string))})
		case "AmazonSQS.SendMessageBatch":
			var ok []map[string]any
			for _, e := range in["Entries"].([]any) {
				e := e.(map[string]any)
				ok = append(ok, map[string]any{"Id": e["Id"], "MessageId": "m-" + e["Id"].(string), "MD5OfMessageBody": md5hex(e["MessageBody"].(string))})
			}
			writeJSONBody(w, map[string]any{"Successful": ok, "Failed": []any{}})
		case "AmazonSSM.GetParameter":
			writeJSONBody(w, map[string]any{"Parameter": map[string]any{"Name": "p", "Value": "v", "Type": "String"}})
		case "TrentService.ListKeys":
			writeJSONBody(w, map[string]any{"Keys": []any{}})
		default:
			writeJSONBody(w, map[string]any{})
		}
	}))
	t.Cleanup(u.server.Close)
	return u
}

func writeJSONBody(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func (u *upstream) count(target string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, g := range u.got {
		if g.target == target {
			n++
		}
	}
	return n
}

func (u *upstream) last(target string) recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := len(u.got) - 1; i >= 0; i-- {
		if u.got[i].target == target {
			return u.got[i]
		}
	}
	return recorded{}
}

// fixture is a proxy in front of a fake upstream, served as infra/faultproxy/cmd serves it.
type fixture struct {
	up     *upstream
	proxy  *Proxy
	url    string
	client *Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	up := newUpstream(t)
	p, err := New(up.server.URL, Options{Seed: 7, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := p.Server()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + l.Addr().String()
	return &fixture{up: up, proxy: p, url: base, client: NewClient(base)}
}

func (f *fixture) set(t *testing.T, rules ...Rule) {
	t.Helper()
	if err := f.client.Set(context.Background(), rules...); err != nil {
		t.Fatal(err)
	}
}

// sdkConfig is the functions' client setup: static credentials, the proxy as endpoint, the
// SDK's standard retryer with attempts as given (1: retries off) and no backoff, so the tests
// do not sleep.
func (f *fixture) sdkConfig(attempts int) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(f.url),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
}

func (f *fixture) dynamo(attempts int) *dynamodb.Client {
	return dynamodb.NewFromConfig(f.sdkConfig(attempts))
}

func (f *fixture) sqs(attempts int) *sqs.Client {
	return sqs.NewFromConfig(f.sdkConfig(attempts))
}

func putItem(c *dynamodb.Client) error {
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String("notifications"),
		Item:      map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}},
	})
	return err
}

func sendMessage(c *sqs.Client) error {
	_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String("http://q/000000000000/dispatch"), MessageBody: aws.String("{}")})
	return err
}

func (f *fixture) faults(t *testing.T, kind Kind) int64 {
	t.Helper()
	c, err := f.client.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c.ByKind()[kind]
}

func isThrottle(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

func isRetryable(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// TestThrottleShapesAreSDKThrottles throttles every request of four services in their own
// protocols and checks that the SDK's own clients see the service's throttling error, classify
// it as a throttle, retry it up to their attempts, and that nothing reached the emulator.
func TestThrottleShapesAreSDKThrottles(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Kind: KindThrottle})
	cfg := f.sdkConfig(3)
	calls := []struct {
		name, code, target string
		call               func() error
	}{
		{"dynamodb", "ProvisionedThroughputExceededException", "DynamoDB_20120810.PutItem", func() error { return putItem(f.dynamo(3)) }},
		{"sqs", "ThrottlingException", "AmazonSQS.SendMessage", func() error { return sendMessage(f.sqs(3)) }},
		{"kms", "ThrottlingException", "TrentService.ListKeys", func() error {
			_, err := kms.NewFromConfig(cfg).ListKeys(context.Background(), &kms.ListKeysInput{})
			return err
		}},
		{"ssm", "ThrottlingException", "AmazonSSM.GetParameter", func() error {
			_, err := ssm.NewFromConfig(cfg).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/p")})
			return err
		}},
	}
	for _, c := range calls {
		before := f.faults(t, KindThrottle)
		err := c.call()
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != c.code {
			t.Errorf("%s: %v, want API error %s", c.name, err, c.code)
			continue
		}
		if !isThrottle(err) || !isRetryable(err) {
			t.Errorf("%s: %s is not a retryable throttle to the SDK", c.name, c.code)
		}
		if n := f.faults(t, KindThrottle) - before; n != 3 {
			t.Errorf("%s: %d throttles injected, want 3 (the SDK's three attempts)", c.name, n)
		}
		if n := f.up.count(c.target); n != 0 {
			t.Errorf("%s: %d requests reached the emulator", c.name, n)
		}
	}
	var pte *ddbtypes.ProvisionedThroughputExceededException
	if err := putItem(f.dynamo(1)); !errors.As(err, &pte) {
		t.Errorf("dynamodb: %v is not the modeled ProvisionedThroughputExceededException", err)
	}
}

// TestError500IsRetriedAndThenSucceeds fails the first two attempts with a 500 (Limit 2) and
// checks that the SDK retried through them to the emulator's answer; with retries off the
// caller gets InternalServerError, retryable.
func TestError500IsRetriedAndThenSucceeds(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Service: "dynamodb", Operations: []string{"PutItem"}, Kind: KindError500, Limit: 2})
	if err := putItem(f.dynamo(3)); err != nil {
		t.Fatalf("put through two 500s: %v", err)
	}
	if n := f.up.count("DynamoDB_20120810.PutItem"); n != 1 {
		t.Errorf("%d puts reached the emulator, want 1", n)
	}
	if n := f.faults(t, KindError500); n != 2 {
		t.Errorf("%d 500s injected, want 2", n)
	}
	f.set(t, Rule{Kind: KindError500})
	for name, err := range map[string]error{"dynamodb": putItem(f.dynamo(1)), "sqs": sendMessage(f.sqs(1))} {
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "InternalServerError" || !isRetryable(err) || isThrottle(err) {
			t.Errorf("%s: %v, want a retryable InternalServerError", name, err)
		}
	}
}

// TestRateAndPeriod checks that a rule's rate is honoured over many requests, that Operations
// and Service confine it, and that it ends after For.
func TestRateAndPeriod(t *testing.T) {
	f := newFixture(t)
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	f.proxy.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f.set(t, Rule{Service: "dynamodb", Operations: []string{"PutItem"}, Kind: KindThrottle, Rate: 0.25, For: time.Minute})
	ddb := f.dynamo(1)
	const n = 400
	failed := 0
	for range n {
		if putItem(ddb) != nil {
			failed++
		}
	}
	// 25 % of 400 is 100; with seed 7 the count is fixed, and any fair roll lies in 70..130.
	if failed < 70 || failed > 130 {
		t.Errorf("%d of %d puts throttled at rate 0.25", failed, n)
	}
	if got := f.faults(t, KindThrottle); got != int64(failed) {
		t.Errorf("counts say %d throttles, the caller saw %d", got, failed)
	}
	if _, err := ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Errorf("GetItem is no PutItem and was faulted: %v", err)
	}
	if err := sendMessage(f.sqs(1)); err != nil {
		t.Errorf("SQS is not dynamodb and was faulted: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	for range 50 {
		if err := putItem(ddb); err != nil {
			t.Fatalf("throttled after the rule's minute: %v", err)
		}
	}
	c, err := f.client.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.RequestsOf("dynamodb", "PutItem"); got != n+50 {
		t.Errorf("%d PutItem requests counted, want %d", got, n+50)
	}
	if got := c.ForwardedOf("dynamodb", "PutItem"); got != int64(n+50-failed) {
		t.Errorf("%d PutItem forwarded, want %d", got, n+50-failed)
	}
}

// TestLatency delays a request by at least the rule's latency, before or after forwarding.
func TestLatency(t *testing.T) {
	f := newFixture(t)
	for _, after := range []bool{false, true} {
		f.set(t, Rule{Service: "sqs", Kind: KindLatency, Latency: 300 * time.Millisecond, After: after})
		start := time.Now()
		if err := sendMessage(f.sqs(1)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("after=%v: answered in %v, before the added 300ms", after, d)
		}
	}
	if n := f.faults(t, KindLatency); n != 2 {
		t.Errorf("%d latencies counted, want 2", n)
	}
}

// TestDropResponseCommitsButTheCallerDoesNotKnow forwards every put and drops its answer: each
// attempt reaches the emulator, the caller gets a connection error the SDK retries, and with
// retries off the caller fails on a write that committed.
func TestDropResponseCommitsButTheCallerDoesNotKnow(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Service: "dynamodb", Kind: KindDropResponse})
	err := putItem(f.dynamo(1))
	if err == nil || !isRetryable(err) {
		t.Fatalf("dropped answer: %v, want a retryable connection error", err)
	}
	if n := f.up.count("DynamoDB_20120810.PutItem"); n != 1 {
		t.Fatalf("%d puts committed, want 1", n)
	}
	if err := putItem(f.dynamo(3)); err == nil {
		t.Fatal("every answer dropped, and yet a success")
	}
	if n := f.up.count("DynamoDB_20120810.PutItem"); n != 4 {
		t.Errorf("%d puts committed, want 4 (1, then the SDK's 3 attempts)", n)
	}
	if n := f.faults(t, KindDropResponse); n != 4 {
		t.Errorf("%d drops counted, want 4", n)
	}
}

// TestReset resets the connection before forwarding (nothing committed) or after (committed).
func TestReset(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Service: "dynamodb", Kind: KindReset})
	err := putItem(f.dynamo(1))
	if err == nil || !isRetryable(err) || !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reset: %v, want a retryable connection reset", err)
	}
	if n := f.up.count("DynamoDB_20120810.PutItem"); n != 0 {
		t.Fatalf("%d puts reached the emulator through a reset before forwarding", n)
	}
	f.set(t, Rule{Service: "dynamodb", Kind: KindReset, After: true})
	if err := putItem(f.dynamo(1)); err == nil || !isRetryable(err) {
		t.Fatalf("reset after: %v, want a retryable connection error", err)
	}
	if n := f.up.count("DynamoDB_20120810.PutItem"); n != 1 {
		t.Fatalf("%d puts reached the emulator through a reset after forwarding, want 1", n)
	}
}

// TestSQSDuplicate delivers every message of SendMessage and SendMessageBatch twice, and
// leaves other SQS operations alone.
func TestSQSDuplicate(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Service: "sqs", Kind: KindSQSDuplicate})
	q := f.sqs(1)
	if err := sendMessage(q); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String("http://q/000000000000/dispatch"),
		Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("1")}, {Id: aws.String("b"), MessageBody: aws.String("2")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("dispatch")}); err != nil {
		t.Fatal(err)
	}
	if s, b, g := f.up.count("AmazonSQS.SendMessage"), f.up.count("AmazonSQS.SendMessageBatch"), f.up.count("AmazonSQS.GetQueueUrl"); s != 2 || b != 2 || g != 1 {
		t.Errorf("emulator got SendMessage %d, SendMessageBatch %d, GetQueueUrl %d; want 2, 2, 1", s, b, g)
	}
	if n := f.faults(t, KindSQSDuplicate); n != 2 {
		t.Errorf("%d duplicates counted, want 2", n)
	}
}

// TestSQSDelay adds DelaySeconds to a message and to every entry of a batch, capped at 900.
func TestSQSDelay(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Service: "sqs", Kind: KindSQSDelay, Latency: 30 * time.Second})
	q := f.sqs(1)
	if _, err := q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String("http://q/000000000000/d"), MessageBody: aws.String("x"), DelaySeconds: 5}); err != nil {
		t.Fatal(err)
	}
	var one struct{ DelaySeconds int }
	_ = json.Unmarshal(f.up.last("AmazonSQS.SendMessage").body, &one)
	if one.DelaySeconds != 35 {
		t.Errorf("SendMessage reached the emulator with DelaySeconds %d, want 35", one.DelaySeconds)
	}
	if _, err := q.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String("http://q/000000000000/d"),
		Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("1")}, {Id: aws.String("b"), MessageBody: aws.String("2"), DelaySeconds: 890}}}); err != nil {
		t.Fatal(err)
	}
	var batch struct{ Entries []struct{ DelaySeconds int } }
	_ = json.Unmarshal(f.up.last("AmazonSQS.SendMessageBatch").body, &batch)
	if len(batch.Entries) != 2 || batch.Entries[0].DelaySeconds != 30 || batch.Entries[1].DelaySeconds != 900 {
		t.Errorf("batch reached the emulator as %+v, want delays 30 and 900", batch.Entries)
	}
	// The query protocol, as older SDKs speak it.
	form := url.Values{"Action": {"SendMessage"}, "QueueUrl": {"http://q/000000000000/d"}, "MessageBody": {"x"}}
	req, _ := http.NewRequest(http.MethodPost, f.url+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20261204/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	v, _ := url.ParseQuery(string(f.up.last("SendMessage").body))
	if v.Get("DelaySeconds") != "30" {
		t.Errorf("query SendMessage reached the emulator with DelaySeconds %q, want 30", v.Get("DelaySeconds"))
	}
}

// TestNoConditionMakesTheConditionAlwaysTrue checks the negative control's rewrite: the
// original condition kept, OR-ed with one no item satisfies the negation of.
func TestNoConditionMakesTheConditionAlwaysTrue(t *testing.T) {
	f := newFixture(t)
	f.set(t, Rule{Service: "dynamodb", Kind: KindNoCondition})
	_, err := f.dynamo(1).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}},
		UpdateExpression: aws.String("SET #v = :n"), ConditionExpression: aws.String("#v = :o"),
		ExpressionAttributeNames:  map[string]string{"#v": "version"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":n": &ddbtypes.AttributeValueMemberN{Value: "2"}, ":o": &ddbtypes.AttributeValueMemberN{Value: "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ConditionExpression      string
		ExpressionAttributeNames map[string]string
	}
	_ = json.Unmarshal(f.up.last("DynamoDB_20120810.UpdateItem").body, &got)
	if got.ConditionExpression != "(#v = :o) OR attribute_not_exists(#faultproxyNone)" || got.ExpressionAttributeNames["#faultproxyNone"] != noConditionName || got.ExpressionAttributeNames["#v"] != "version" {
		t.Errorf("rewritten to %+v", got)
	}
	// A write without a condition is not one the rule applies to.
	if err := putItem(f.dynamo(1)); err != nil {
		t.Fatal(err)
	}
	if n := f.faults(t, KindNoCondition); n != 1 {
		t.Errorf("%d rewrites counted, want 1", n)
	}
}

// TestIdentify names service and operation from the SigV4 scope, X-Amz-Target, Action and S3's
// path, and keeps the caller's Host header for the emulator.
func TestIdentify(t *testing.T) {
	f := newFixture(t)
	cfg := f.sdkConfig(1)
	_ = putItem(f.dynamo(1))
	_ = sendMessage(f.sqs(1))
	_, _ = kms.NewFromConfig(cfg).ListKeys(context.Background(), &kms.ListKeysInput{})
	_, _ = ssm.NewFromConfig(cfg).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/p")})
	for _, r := range []struct{ method, path, auth string }{
		{http.MethodPut, "/archive-bucket/period/part-1.jsonl.gz", "s3"},
		{http.MethodGet, "/archive-bucket?list-type=2", "s3"},
	} {
		req, _ := http.NewRequest(r.method, f.url+r.path, strings.NewReader("x"))
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20261204/us-east-1/"+r.auth+"/aws4_request, SignedHeaders=host, Signature=0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	c, err := f.client.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []OpCount{{"dynamodb", "PutItem", 1}, {"sqs", "SendMessage", 1}, {"kms", "ListKeys", 1}, {"ssm", "GetParameter", 1}, {"s3", "PutObject", 1}, {"s3", "ListObjectsV2", 1}} {
		if got := c.RequestsOf(want.Service, want.Operation); got != want.Count {
			t.Errorf("%s %s: %d requests counted, want %d (all: %+v)", want.Service, want.Operation, got, want.Count, c.Requests)
		}
	}
	if h := f.up.last("DynamoDB_20120810.PutItem").host; h != strings.TrimPrefix(f.url, "http://") {
		t.Errorf("emulator saw Host %q, want the caller's %q", h, strings.TrimPrefix(f.url, "http://"))
	}
}

// TestControlAPI checks Set, Add, Rules, Clear and ResetCounts, and that a bad rule is refused.
func TestControlAPI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r1 := Rule{Service: "dynamodb", Operations: []string{"PutItem", "UpdateItem"}, Kind: KindThrottle, Rate: 0.2, For: 2 * time.Minute}
	r2 := Rule{Service: "sqs", Kind: KindSQSDelay, Latency: 10 * time.Second}
	f.set(t, r1)
	if err := f.client.Add(ctx, r2); err != nil {
		t.Fatal(err)
	}
	rules, err := f.client.Rules(ctx)
	if err != nil || len(rules) != 2 || rules[0].For != 2*time.Minute || rules[0].Rate != 0.2 || rules[1].Latency != 10*time.Second || len(rules[0].Operations) != 2 {
		t.Fatalf("rules %+v, %v", rules, err)
	}
	for _, bad := range []Rule{{Kind: "melt"}, {Kind: KindKill}, {Kind: KindLatency}, {Kind: KindThrottle, Rate: 2}, {Service: "dynamodb", Kind: KindSQSDuplicate}} {
		if err := f.client.Set(ctx, bad); err == nil {
			t.Errorf("rule %+v accepted", bad)
		}
	}
	if rules, _ := f.client.Rules(ctx); len(rules) != 2 {
		t.Errorf("a refused Set changed the rules: %+v", rules)
	}
	_ = putItem(f.dynamo(1))
	if err := f.client.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if rules, _ := f.client.Rules(ctx); len(rules) != 0 {
		t.Errorf("rules after Clear: %+v", rules)
	}
	if err := f.client.ResetCounts(ctx); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.client.Counts(ctx); len(c.Requests) != 0 || len(c.Faults) != 0 {
		t.Errorf("counts after reset: %+v", c)
	}
}

// TestModifiersCombineAndOneOutcomeWins sets two outcomes and two modifiers on one operation:
// both modifiers apply (the latency, and the condition dropped) and only the first outcome.
func TestModifiersCombineAndOneOutcomeWins(t *testing.T) {
	f := newFixture(t)
	f.set(t,
		Rule{Service: "sqs", Kind: KindSQSDuplicate},
		Rule{Service: "sqs", Kind: KindThrottle},
		Rule{Service: "sqs", Kind: KindLatency, Latency: 200 * time.Millisecond},
		Rule{Service: "sqs", Kind: KindSQSDelay, Latency: 3 * time.Second},
	)
	start := time.Now()
	if err := sendMessage(f.sqs(1)); err != nil {
		t.Fatalf("throttled although the duplicate came first: %v", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("answered in %v, before the added latency", d)
	}
	var got struct{ DelaySeconds int }
	_ = json.Unmarshal(f.up.last("AmazonSQS.SendMessage").body, &got)
	if n := f.up.count("AmazonSQS.SendMessage"); n != 2 || got.DelaySeconds != 3 {
		t.Errorf("emulator got %d sends with DelaySeconds %d, want 2 with 3", n, got.DelaySeconds)
	}
	c, err := f.client.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if k := c.ByKind(); k[KindSQSDuplicate] != 1 || k[KindLatency] != 1 || k[KindSQSDelay] != 1 || k[KindThrottle] != 0 || c.TotalFaults() != 3 {
		t.Errorf("faults %v", k)
	}
}

// TestHeadKeepsContentLength: a HEAD answer (S3 HeadObject) carries the object's size in
// Content-Length with no body, and the proxy passes it on.
func TestHeadKeepsContentLength(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "12345")
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	p, err := New(up.URL, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	resp, err := http.Head(srv.URL + "/archive-bucket/part-1.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != 12345 {
		t.Errorf("Content-Length %d through the proxy, want 12345", resp.ContentLength)
	}
}
