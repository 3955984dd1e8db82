// Package sqsqueue is the notify.Queue over SQS: the dispatch and reconcile queues, for intake
// and the workers alike. A message body is the JSON of notify.Message and nothing else:
// {idempotency_key, notification_id, version}. No phone number, param or other secret can
// reach a queue, because there is no field to carry one, and no message attributes are sent.
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

// API is the part of the SQS client the queue uses; *sqs.Client satisfies it.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Queue sends messages to the worker queues. It is safe for concurrent use.
type Queue struct {
	client API
	urls   map[notify.QueueName]string
}

var _ notify.Queue = (*Queue)(nil)

// New returns a Queue that sends to the queues at dispatchURL and reconcileURL. A function
// that only ever sends to one of them (intake) leaves the other empty; a message for a queue
// without a URL is an error.
func New(client API, dispatchURL, reconcileURL string) *Queue {
	return &Queue{client: client, urls: map[notify.QueueName]string{
		notify.DispatchQueue: dispatchURL, notify.ReconcileQueue: reconcileURL,
	}}
}

// Enqueue sends m to queue, to be delivered no sooner than delay from now. The delay becomes
// DelaySeconds rounded up to whole seconds (a message never arrives before the record is due)
// and capped at notify.MaxQueueDelay: a consumer must check the record's state and
// next_action_at anyway, since delivery is at least once.
func (q *Queue) Enqueue(ctx context.Context, queue notify.QueueName, m notify.Message, delay time.Duration) error {
	url := q.urls[queue]
	if url == "" {
		return fmt.Errorf("schedule %s %s: no queue URL configured", queue, m.IdempotencyKey)
	}
	if err := q.send(ctx, url, m, delay); err != nil {
		return fmt.Errorf("schedule %s: %w", queue, err)
	}
	return nil
}

func (q *Queue) send(ctx context.Context, queueURL string, m notify.Message, delay time.Duration) error {
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
// [0, notify.MaxQueueDelay].
func delaySeconds(d time.Duration) int32 {
	switch {
	case d <= 0:
		return 0
	case d >= notify.MaxQueueDelay:
		return int32(notify.MaxQueueDelay / time.Second)
	}
	return int32((d + time.Second - 1) / time.Second)
}
