package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
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

// queueNames are the local names of the template's queues, by logical ID.
var queueNames = map[string]string{
	"DispatchQueue":     "resetnotify-dispatch",
	"DispatchDLQ":       "resetnotify-dispatch-dlq",
	"ReconcileQueue":    "resetnotify-reconcile",
	"ReconcileDLQ":      "resetnotify-reconcile-dlq",
	"AuditFailureQueue": "resetnotify-audit-failures",
	"AuditReplayDLQ":    "resetnotify-audit-replay-dlq",
}

// createQueues creates every queue of the template with its attributes and redrive policy,
// dead-letter queues first.
func createQueues(ctx context.Context, client *sqs.Client, queues []samtemplate.Queue) (queueURLs, error) {
	urls := map[string]string{}
	for _, withDLQ := range []bool{false, true} {
		for _, q := range queues {
			if (q.DeadLetterQueue != "") != withDLQ {
				continue
			}
			name, ok := queueNames[q.ID]
			if !ok {
				return queueURLs{}, fmt.Errorf("template queue %s has no local name (infra/local queueNames)", q.ID)
			}
			url, err := createQueue(ctx, client, name, q, urls[q.DeadLetterQueue])
			if err != nil {
				return queueURLs{}, err
			}
			urls[q.ID] = url
		}
	}
	return queueURLs{
		Dispatch: urls["DispatchQueue"], DispatchDLQ: urls["DispatchDLQ"],
		Reconcile: urls["ReconcileQueue"], ReconcileDLQ: urls["ReconcileDLQ"],
		AuditFailure: urls["AuditFailureQueue"], AuditReplayDLQ: urls["AuditReplayDLQ"],
	}, nil
}

// queueAttributes are the CreateQueue attributes of q; dlqURL is its dead-letter queue's URL.
func queueAttributes(ctx context.Context, client *sqs.Client, q samtemplate.Queue, dlqURL string) (map[string]string, error) {
	attrs := map[string]string{}
	for k, v := range q.Attributes {
		attrs[k] = v
	}
	if q.DeadLetterQueue == "" {
		return attrs, nil
	}
	if dlqURL == "" {
		return nil, fmt.Errorf("queue %s: dead-letter queue %s not created", q.ID, q.DeadLetterQueue)
	}
	arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlqURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("queue %s: dead-letter ARN: %w", q.ID, err)
	}
	attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"` + arn.Attributes[string(sqstypes.QueueAttributeNameQueueArn)] +
		`","maxReceiveCount":"` + strconv.Itoa(q.MaxReceiveCount) + `"}`
	return attrs, nil
}

func createQueue(ctx context.Context, client *sqs.Client, name string, q samtemplate.Queue, dlqURL string) (string, error) {
	attrs, err := queueAttributes(ctx, client, q, dlqURL)
	if err != nil {
		return "", err
	}
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}
