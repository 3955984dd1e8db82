package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/resetnotify/resetnotify/shared/config"
)

// queueURLs are the local queues, named and redriven as template.yaml declares them.
type queueURLs struct {
	Dispatch, DispatchDLQ, Reconcile, ReconcileDLQ, AuditFailure, AuditReplayDLQ string
}

func (q queueURLs) env() map[string]string {
	return map[string]string{
		config.EnvDispatchQueueURL:  q.Dispatch,
		config.EnvReconcileQueueURL: q.Reconcile,
	}
}

// maxReceiveCount matches the RedrivePolicy of the template's queues.
const maxReceiveCount = 5

func createQueues(ctx context.Context, client *sqs.Client) (queueURLs, error) {
	var q queueURLs
	var err error
	if q.DispatchDLQ, err = createQueue(ctx, client, "resetnotify-dispatch-dlq", ""); err != nil {
		return q, err
	}
	if q.Dispatch, err = createQueue(ctx, client, "resetnotify-dispatch", q.DispatchDLQ); err != nil {
		return q, err
	}
	if q.ReconcileDLQ, err = createQueue(ctx, client, "resetnotify-reconcile-dlq", ""); err != nil {
		return q, err
	}
	if q.Reconcile, err = createQueue(ctx, client, "resetnotify-reconcile", q.ReconcileDLQ); err != nil {
		return q, err
	}
	if q.AuditReplayDLQ, err = createQueue(ctx, client, "resetnotify-audit-replay-dlq", ""); err != nil {
		return q, err
	}
	if q.AuditFailure, err = createQueue(ctx, client, "resetnotify-audit-failures", q.AuditReplayDLQ); err != nil {
		return q, err
	}
	return q, nil
}

func createQueue(ctx context.Context, client *sqs.Client, name, dlqURL string) (string, error) {
	attrs := map[string]string{"VisibilityTimeout": "180"}
	if dlqURL != "" {
		arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(dlqURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			return "", fmt.Errorf("queue %s: dead-letter ARN: %w", name, err)
		}
		attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"` + arn.Attributes[string(sqstypes.QueueAttributeNameQueueArn)] +
			`","maxReceiveCount":"` + strconv.Itoa(maxReceiveCount) + `"}`
	}
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}
