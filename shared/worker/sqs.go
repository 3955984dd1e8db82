package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/sqsqueue"
)

// SQSScheduler is the Scheduler over the two SQS queues, through sqsqueue: the body is the
// notify.Message and nothing else, and a delay becomes DelaySeconds rounded up to a whole
// second (a message never arrives before the record is due) and capped at MaxQueueDelay.
type SQSScheduler struct {
	queue        *sqsqueue.Queue
	dispatchURL  string
	reconcileURL string
}

var _ Scheduler = (*SQSScheduler)(nil)

// NewSQSScheduler returns a scheduler that sends to the queues at dispatchURL and
// reconcileURL.
func NewSQSScheduler(client sqsqueue.API, dispatchURL, reconcileURL string) *SQSScheduler {
	return &SQSScheduler{queue: sqsqueue.New(client, dispatchURL), dispatchURL: dispatchURL, reconcileURL: reconcileURL}
}

// ScheduleDispatch sends m to the dispatch queue, visible after delay.
func (s *SQSScheduler) ScheduleDispatch(ctx context.Context, m notify.Message, delay time.Duration) error {
	return s.send(ctx, "dispatch", s.dispatchURL, m, delay)
}

// ScheduleReconcile sends m to the reconcile queue, visible after delay.
func (s *SQSScheduler) ScheduleReconcile(ctx context.Context, m notify.Message, delay time.Duration) error {
	return s.send(ctx, "reconcile", s.reconcileURL, m, delay)
}

func (s *SQSScheduler) send(ctx context.Context, queue, queueURL string, m notify.Message, delay time.Duration) error {
	if queueURL == "" {
		return fmt.Errorf("schedule %s %s: no queue URL configured", queue, m.IdempotencyKey)
	}
	if err := s.queue.Send(ctx, queueURL, m, min(delay, MaxQueueDelay)); err != nil {
		return fmt.Errorf("schedule %s: %w", queue, err)
	}
	return nil
}

// BatchHandler is an SQS-triggered Lambda handler with partial batch failures, such as
// Dispatcher.Handle and Reconciler.Handle.
type BatchHandler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
