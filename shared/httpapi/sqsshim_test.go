package httpapi_test

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// shimQueue sends dispatch messages to SQS until shared/sqsqueue is committed; the
// integration tests then use sqsqueue itself.
type shimQueue struct {
	c   *sqs.Client
	url string
}

func (q shimQueue) EnqueueDispatch(ctx context.Context, m notify.Message) error {
	b, _ := json.Marshal(m)
	_, err := q.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(string(b))})
	return err
}
