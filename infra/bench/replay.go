package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// duplicates is how many copies of one request replayBench submits at once.
const duplicates = 64

// replayBench measures what duplicates cost, through the intake service against DynamoDB Local
// and moto with every AWS call counted (awscount.Counter), on a pipeline without the abuse
// guard, so its figures are named guard_off_ (the admission benchmark measures them with the
// guard on, as deployed: requests_per_replay, requests_per_64_duplicates):
//   - guard_off_requests_per_replay: the AWS requests of one sequential replay of a request
//     admitted a moment ago (goal 1: the conditional PutItem, which returns the stored record);
//   - guard_off_dispatch_messages_per_64_duplicates: the messages on the dispatch queue after
//     64 submissions of one new request at once (goal at most 2: the admission's, and at most
//     one re-send by a replay that found the first presumed lost).
func replayBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, replays int, out io.Writer) error {
	p, err := newPipeline(ctx, ddbEndpoint, sqsEndpoint, smssim.Config{}, "replay")
	if err != nil {
		return err
	}
	defer p.close()
	if ctx, err = benchCaller(ctx); err != nil {
		return err
	}
	request := func(key string) notify.Request {
		return notify.Request{
			IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
			To: "+12015550123", Locale: "en", Params: map[string]string{notify.ParamCode: "123456"},
			ExpiresAt: time.Now().UTC().Add(10 * time.Minute),
		}
	}

	first := request(p.name + "-replayed")
	if _, err := p.intake.Submit(ctx, first); err != nil {
		return fmt.Errorf("replay bench: admit: %w", err)
	}
	p.counter.Reset()
	for range replays {
		if out, err := p.intake.Submit(ctx, first); err != nil || !out.Replayed {
			return fmt.Errorf("replay bench: replay: %+v %w", out, err)
		}
	}
	perReplay := float64(total(p.counter.Counts())) / float64(replays)

	dup := request(p.name + "-duplicated")
	var wg sync.WaitGroup
	errs := make([]error, duplicates)
	start := make(chan struct{})
	for i := range duplicates {
		wg.Go(func() {
			<-start
			_, errs[i] = p.intake.Submit(ctx, dup)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("replay bench: duplicate: %w", err)
		}
	}
	messages, err := p.countDispatchMessages(ctx, dup.IdempotencyKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "replays=%d\nguard_off_requests_per_replay=%.2f\n", replays, perReplay)
	fmt.Fprintf(out, "guard_off_dispatch_messages_per_64_duplicates=%d\n", messages)
	return nil
}

// countDispatchMessages receives the dispatch queue until a long poll comes back empty and
// counts the messages for key.
func (p *pipeline) countDispatchMessages(ctx context.Context, key string) (int, error) {
	n := 0
	for {
		out, err := p.queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(p.dispatchURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 300,
		})
		if err != nil {
			return 0, fmt.Errorf("replay bench: receive: %w", err)
		}
		if len(out.Messages) == 0 {
			return n, nil
		}
		for _, m := range out.Messages {
			var msg notify.Message
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &msg) == nil && msg.IdempotencyKey == key {
				n++
			}
		}
	}
}
