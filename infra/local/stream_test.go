package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/auditreplay"
)

// TestPollStreamGivesUp hands the stream to a function that always fails its first record:
// the poller retries it as often as the template's mapping says, then describes the batch to the on-failure
// destination and goes on with the next records, as the template's mapping does.
func TestPollStreamGivesUp(t *testing.T) {
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	s.Submit(t, "evt-poll", "", "+447700900501", map[string]string{"code": "P0LL01"}, 15*time.Minute)
	defer func(d time.Duration) { streamRetryDelay = d }(streamRetryDelay)
	streamRetryDelay = time.Millisecond

	st, err := loadSettings(templatePath, makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	if st.audit.MaxRetries < 0 {
		t.Fatalf("the audit stream mapping in template.yaml retries forever (MaxRetries %d)", st.audit.MaxRetries)
	}
	ctx, cancel := context.WithTimeout(context.Background(), audittest.Deadline)
	defer cancel()
	calls := 0
	failing := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		calls++
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
	}
	got := make(chan auditreplay.FailureRecord, 1)
	onFailure := func(_ context.Context, fr auditreplay.FailureRecord) error {
		got <- fr
		cancel()
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- pollStream(ctx, env.Streams, env.DB, env.Names.Notifications, st.audit, failing, onFailure, slog.New(slog.DiscardHandler))
	}()
	select {
	case fr := <-got:
		b := fr.BatchInfo
		if b == nil || b.BatchSize != 1 || b.StartSequenceNumber == "" || b.StartSequenceNumber != b.EndSequenceNumber ||
			b.StreamARN != env.StreamARN() || b.ShardID == "" || fr.RequestContext.Condition != "RetryAttemptsExhausted" {
			t.Errorf("failure record = %+v %+v", fr, b)
		}
	case <-ctx.Done():
		t.Fatal("the poller never gave up on the failing record")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := st.audit.MaxRetries + 1; calls != want {
		t.Errorf("the function was called %d times, want %d (one try and %d retries)", calls, want, st.audit.MaxRetries)
	}
}
