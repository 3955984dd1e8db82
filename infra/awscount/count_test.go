package awscount_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
)

// TestCounterCountsCallsPerOperation points a DynamoDB and an SQS client at a server that
// answers every JSON-protocol call with an empty object (once with a retryable 500 first),
// and checks the counts: one per call, per service and operation, retries not counted twice.
func TestCounterCountsCallsPerOperation(t *testing.T) {
	var hits, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.PutItem" && failed.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"retry me"}`))
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()

	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	c := awscount.NewCounter()
	c.Instrument(&cfg)
	db := awsclient.DynamoDB(cfg, srv.URL)
	q := awsclient.SQS(cfg, srv.URL)
	ctx := context.Background()
	key := map[string]ddbtypes.AttributeValue{"k": &ddbtypes.AttributeValueMemberS{Value: "v"}}
	for range 2 {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/1/q")}); err != nil {
		t.Fatal(err)
	}

	want := map[awscount.Op]int64{
		{Service: "DynamoDB", Operation: "GetItem"}:   2,
		{Service: "DynamoDB", Operation: "PutItem"}:   1,
		{Service: "SQS", Operation: "ReceiveMessage"}: 1,
	}
	if diff := cmp.Diff(want, c.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if c.Total() != 4 || hits.Load() != 5 {
		t.Errorf("total %d calls over %d HTTP requests, want 4 over 5 (one retry)", c.Total(), hits.Load())
	}
	if got, want := awscount.FormatCounts(c.Counts(), 2), "DynamoDB.GetItem:1.00,DynamoDB.PutItem:0.50,SQS.ReceiveMessage:0.50"; got != want {
		t.Errorf("FormatCounts = %q, want %q", got, want)
	}
	c.Reset()
	if c.Total() != 0 {
		t.Errorf("after Reset: %v", c.Counts())
	}

	// A config instrumented later does not change clients built before.
	plain := awsclient.DynamoDB(aws.Config{Region: "us-east-1", Credentials: cfg.Credentials}, srv.URL)
	if _, err := plain.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key}); err != nil {
		t.Fatal(err)
	}
	if c.Total() != 0 {
		t.Errorf("an uninstrumented client was counted: %v", c.Counts())
	}
}
