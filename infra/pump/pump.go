// Package pump drives an SQS-triggered handler in-process, as Lambda's event source mapping
// does: tests and the local stack (infra/local) call it; no Lambda links it.
package pump

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/resetnotify/resetnotify/shared/workercore"
)

// API is the part of the SQS client Once uses; *sqs.Client satisfies it.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Options shape one Once call. The zero value receives up to 10 messages without waiting.
type Options struct {
	// MaxMessages is how many messages to receive, 1 to 10; 0 means 10 (the template's batch
	// size).
	MaxMessages int32
	// WaitTime long-polls the queue for up to this long (whole seconds, at most 20).
	WaitTime time.Duration
	// VisibilityTimeout hides received messages for this long (whole seconds); 0 keeps the
	// queue's setting.
	VisibilityTimeout time.Duration
	// Region is copied into each record's AWSRegion and EventSourceARN.
	Region string
}

// Result counts what one Once call did.
type Result struct {
	// Received counts the messages handed to the handler.
	Received int
	// Deleted counts the acknowledged messages removed from the queue.
	Deleted int
	// Failed counts the messages the handler reported as failed; they reappear after the
	// visibility timeout, as they would under Lambda.
	Failed int
}

// Once does in-process what Lambda's SQS event source mapping does once: it receives up to
// MaxMessages from queueURL, hands them to h as one events.SQSEvent, and deletes the messages
// that h did not report in BatchItemFailures. When h returns an error, nothing is deleted and
// the error is returned. Tests and the local stack call it in a loop.
func Once(ctx context.Context, client API, queueURL string, h workercore.BatchHandler, o Options) (Result, error) {
	msgs, err := receive(ctx, client, queueURL, o)
	if err != nil || len(msgs) == 0 {
		return Result{}, err
	}
	ev := sqsEvent(msgs, queueARN(queueURL, o.Region), o.Region)
	res := Result{Received: len(ev.Records)}
	resp, err := h(ctx, ev)
	if err != nil {
		res.Failed = res.Received
		return res, fmt.Errorf("pump.handle %s: %w", queueURL, err)
	}
	failed := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, r := range ev.Records {
		if failed[r.MessageId] {
			res.Failed++
			continue
		}
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
	}
	res.Deleted, err = deleteBatch(ctx, client, queueURL, entries)
	return res, err
}

// receive receives up to o.MaxMessages (10 when out of range) from queueURL.
func receive(ctx context.Context, client API, queueURL string, o Options) ([]sqstypes.Message, error) {
	maxMessages := o.MaxMessages
	if maxMessages <= 0 || maxMessages > 10 {
		maxMessages = 10
	}
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queueURL),
		MaxNumberOfMessages:         maxMessages,
		WaitTimeSeconds:             int32(min(o.WaitTime, 20*time.Second) / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	}
	if o.VisibilityTimeout > 0 {
		in.VisibilityTimeout = int32((o.VisibilityTimeout + time.Second - 1) / time.Second)
	}
	out, err := client.ReceiveMessage(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("pump.receive %s: %w", queueURL, err)
	}
	return out.Messages, nil
}

// sqsEvent is msgs as Lambda hands them to a function, from the queue arn in region.
func sqsEvent(msgs []sqstypes.Message, arn, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             m.Attributes,
			EventSourceARN:         arn,
			EventSource:            "aws:sqs",
			AWSRegion:              region,
		})
	}
	return ev
}

// deleteBatch deletes entries from queueURL and returns how many were deleted; none is no
// call.
func deleteBatch(ctx context.Context, client API, queueURL string, entries []sqstypes.DeleteMessageBatchRequestEntry) (int, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	del, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return 0, fmt.Errorf("pump.delete %s: %w", queueURL, err)
	}
	if len(del.Failed) > 0 {
		return len(del.Successful), fmt.Errorf("pump.delete %s: %d of %d deletes failed: %w", queueURL, len(del.Failed), len(entries), errors.New(aws.ToString(del.Failed[0].Code)))
	}
	return len(del.Successful), nil
}

// AttributesAPI is the part of the SQS client Empty uses; *sqs.Client satisfies it.
type AttributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ AttributesAPI = (*sqs.Client)(nil)

// Empty reports whether the queue at queueURL holds no message: none visible, in flight or
// delayed (by SQS's approximate counts, so a caller that needs it settled asks again).
func Empty(ctx context.Context, client AttributesAPI, queueURL string) (bool, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return false, err
	}
	for _, v := range out.Attributes {
		if v != "0" {
			return false, nil
		}
	}
	return true, nil
}

// queueARN derives a queue's ARN from its URL (https://host/<account>/<name>), as Lambda puts
// it in EventSourceARN; "" when the URL has another shape.
func queueARN(queueURL, region string) string {
	u, err := url.Parse(queueURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 {
		return ""
	}
	return "arn:aws:sqs:" + region + ":" + parts[0] + ":" + parts[1]
}
