package sqsqueue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// recorder is a fake SQS that keeps what it was asked to send.
type recorder struct{ sent []*sqs.SendMessageInput }

func (r *recorder) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.sent = append(r.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("m-1")}, nil
}

var msg = notify.Message{IdempotencyKey: "evt-1:sms:password_reset", NotificationID: "01JBXAMPLE", Version: 3}

func TestSendDelay(t *testing.T) {
	cases := []struct {
		name  string
		delay time.Duration
		want  int32
	}{
		{"none", 0, 0},
		{"negative", -time.Second, 0},
		{"a millisecond rounds up", time.Millisecond, 1},
		{"whole seconds", 30 * time.Second, 30},
		{"fraction rounds up", 30*time.Second + time.Nanosecond, 31},
		{"the maximum", notify.MaxQueueDelay, 900},
		{"longer is capped", time.Hour, 900},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			if err := sqsqueue.New(r, "https://queue/dispatch", "https://queue/reconcile").Enqueue(context.Background(), notify.ReconcileQueue, msg, tc.delay); err != nil {
				t.Fatal(err)
			}
			in := r.sent[0]
			if in.DelaySeconds != tc.want || aws.ToString(in.QueueUrl) != "https://queue/reconcile" {
				t.Errorf("sent DelaySeconds %d to %s, want %d to the reconcile queue", in.DelaySeconds, aws.ToString(in.QueueUrl), tc.want)
			}
		})
	}
}

func TestEnqueueDispatchSendsOnlyTheMessage(t *testing.T) {
	r := &recorder{}
	if err := sqsqueue.New(r, "https://queue/dispatch", "https://queue/reconcile").Enqueue(context.Background(), notify.DispatchQueue, msg, 0); err != nil {
		t.Fatal(err)
	}
	in := r.sent[0]
	if aws.ToString(in.QueueUrl) != "https://queue/dispatch" || in.DelaySeconds != 0 || in.MessageAttributes != nil || in.MessageSystemAttributes != nil {
		t.Errorf("unexpected send input %+v", in)
	}
	checkBody(t, aws.ToString(in.MessageBody))
}

func TestEnqueueWithoutQueueURL(t *testing.T) {
	r := &recorder{}
	err := sqsqueue.New(r, "https://queue/dispatch", "").Enqueue(context.Background(), notify.ReconcileQueue, msg, 0)
	if err == nil || len(r.sent) != 0 {
		t.Errorf("enqueue to a queue without a URL: err %v, %d sent; want an error and nothing sent", err, len(r.sent))
	}
}

// checkBody asserts the body is exactly the three fields of msg.
func checkBody(t *testing.T, body string) {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	want := map[string]any{
		"idempotency_key": msg.IdempotencyKey,
		"notification_id": msg.NotificationID,
		"version":         float64(msg.Version),
	}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("message body differs (-want +got):\n%s", diff)
	}
}

func TestMoto(t *testing.T) {
	client := testenv.SQS(t)
	ctx := context.Background()
	dispatch := testenv.Queue(t, client, testenv.UniqueName(t, "dispatch"))
	later := testenv.Queue(t, client, testenv.UniqueName(t, "later"))
	q := sqsqueue.New(client, dispatch, later)

	if err := q.Enqueue(ctx, notify.DispatchQueue, msg, 0); err != nil {
		t.Fatal(err)
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(dispatch),
		WaitTimeSeconds:       5,
		MaxNumberOfMessages:   10,
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages, want 1", len(out.Messages))
	}
	checkBody(t, aws.ToString(out.Messages[0].Body))
	if len(out.Messages[0].MessageAttributes) != 0 {
		t.Errorf("message carries attributes %v", out.Messages[0].MessageAttributes)
	}

	// A delayed message is not visible before its delay.
	if err := q.Enqueue(ctx, notify.ReconcileQueue, msg, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	out, err = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(later), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 0 {
		t.Errorf("a message delayed by 10 minutes was received at once")
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(later),
		AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessagesDelayed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs.Attributes["ApproximateNumberOfMessagesDelayed"]; got != "1" {
		t.Errorf("ApproximateNumberOfMessagesDelayed = %q, want 1", got)
	}
}
