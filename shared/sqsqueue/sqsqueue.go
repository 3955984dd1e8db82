// Package sqsqueue hands notification messages to SQS queues. A message body is the JSON of
// notify.Message and nothing else: {idempotency_key, notification_id, version}. No phone
// number, param or other secret can reach a queue, because there is no field to carry one,
// and no message attributes are sent.
package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// MaxDelay is the longest delivery delay SQS supports. Longer delays are shortened to it.
const MaxDelay = 15 * time.Minute

// API is the part of the SQS client the queue uses; *sqs.Client satisfies it.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Queue sends messages to the dispatch queue (EnqueueDispatch) or to any other queue (Send).
// It is safe for concurrent use.
type Queue struct {
	client      API
	dispatchURL string
}

var _ notify.Enqueuer = (*Queue)(nil)

// New returns a Queue whose EnqueueDispatch sends to dispatchURL.
func New(client API, dispatchURL string) *Queue {
	return &Queue{client: client, dispatchURL: dispatchURL}
}

// EnqueueDispatch sends m to the dispatch queue for immediate delivery.
func (q *Queue) EnqueueDispatch(ctx context.Context, m notify.Message) error {
	return q.Send(ctx, q.dispatchURL, m, 0)
}

// Send sends m to the queue at queueURL, to be delivered no sooner than delay from now. The
// delay is rounded up to whole seconds and capped at MaxDelay: a consumer must check the
// record's state and next_action_at anyway, since delivery is at least once.
func (q *Queue) Send(ctx context.Context, queueURL string, m notify.Message, delay time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("sqsqueue.send %s: encode: %w", m.IdempotencyKey, err)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:    aws.String(queueURL),
		MessageBody: aws.String(string(body)),
	}
	if s := delaySeconds(delay); s > 0 {
		in.DelaySeconds = s
	}
	if _, err := q.client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("sqsqueue.send %s v%d to %s: %w", m.IdempotencyKey, m.Version, queueURL, err)
	}
	return nil
}

// delaySeconds converts a delay to SQS's DelaySeconds: whole seconds, rounded up, within
// [0, MaxDelay].
func delaySeconds(d time.Duration) int32 {
	switch {
	case d <= 0:
		return 0
	case d >= MaxDelay:
		return int32(MaxDelay / time.Second)
	}
	return int32((d + time.Second - 1) / time.Second)
}
