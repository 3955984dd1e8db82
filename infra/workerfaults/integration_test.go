package workerfaults_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// liveRequest returns a request for key to the number to, expiring ten minutes from now on
// the wall clock (DynamoDB Local really runs TTL, so records must not be born expired).
func liveRequest(key, to string) notify.Request {
	return notify.Request{
		IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS,
		Purpose: notify.PurposePasswordReset, To: to, Locale: "de",
		Params:    map[string]string{notify.ParamCode: "K3Y9Z2"},
		ExpiresAt: time.Now().UTC().Add(10 * time.Minute).Truncate(time.Second),
	}
}

// TestProviderOutcomesEndToEnd runs every row of docs/design.md's provider-outcome table through the
// real handlers, DynamoDB Local, moto SQS and the simulator: intake admits, the dispatch and
// reconcile queues are pumped until every record is settled, and each record's path and the
// simulator's inbox are checked.
func TestProviderOutcomesEndToEnd(t *testing.T) {
	st := stacktest.NewStack(t, stacktest.StackOptions{SMSTimeout: 500 * time.Millisecond, Sim: smssim.Config{DeliveryDelay: time.Hour}})
	lease := "dispatching/LEASE_ACQUIRED"
	cases := []struct {
		name   string
		modes  []smssim.Mode
		path   []stacktest.Step
		inbox  int
		final  int // attempt whose reference the accepted message carries
		setup  func(t *testing.T, key string)
		ending notify.State
	}{
		{name: "accepted", modes: []smssim.Mode{smssim.ModeAccept},
			path: steps(lease, "sent/PROVIDER_ACCEPTED"), inbox: 1, final: 1},
		{name: "throttled then accepted", modes: []smssim.Mode{smssim.ModeThrottle, smssim.ModeAccept},
			path: steps(lease, "retry_scheduled/PROVIDER_THROTTLED", lease, "sent/PROVIDER_ACCEPTED"), inbox: 1, final: 2},
		{name: "503 not processed then accepted", modes: []smssim.Mode{smssim.ModeUnavailable, smssim.ModeAccept},
			path: steps(lease, "retry_scheduled/PROVIDER_UNAVAILABLE", lease, "sent/PROVIDER_ACCEPTED"), inbox: 1, final: 2},
		{name: "rejected", modes: []smssim.Mode{smssim.ModeReject},
			path: steps(lease, "failed/PROVIDER_REJECTED"), inbox: 0},
		{name: "accepted then timeout", modes: []smssim.Mode{smssim.ModeAcceptThenTimeout},
			path: steps(lease, "dispatch_unknown/PROVIDER_TIMEOUT", "sent/RECONCILED_ACCEPTED"), inbox: 1, final: 1},
		{name: "timeout before accepting", modes: []smssim.Mode{smssim.ModeTimeoutBeforeAccept, smssim.ModeAccept},
			path: steps(lease, "dispatch_unknown/PROVIDER_TIMEOUT", "retry_scheduled/RECONCILED_NOT_FOUND", lease, "sent/PROVIDER_ACCEPTED"), inbox: 1, final: 2},
		{name: "accepted then connection dropped", modes: []smssim.Mode{smssim.ModeAcceptThenDrop},
			path: steps(lease, "dispatch_unknown/CONNECTION_LOST", "sent/RECONCILED_ACCEPTED"), inbox: 1, final: 1},
		{name: "500 after accepting", modes: []smssim.Mode{smssim.ModeErrorAfterAccept},
			path: steps(lease, "dispatch_unknown/PROVIDER_AMBIGUOUS", "sent/RECONCILED_ACCEPTED"), inbox: 1, final: 1},
		{name: "worker died holding the lease", modes: []smssim.Mode{smssim.ModeAccept},
			setup: func(t *testing.T, key string) {
				// Take the lease as a worker would, then "die": no call, no outcome.
				rec := st.Get(t, key)
				now := time.Now().UTC()
				leased, err := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "test-lease",
					LeaseUntil: now.Add(time.Second), Provider: st.Dispatcher.Provider}, now)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Store.Transition(context.Background(), rec, leased); err != nil {
					t.Fatal(err)
				}
			},
			path: steps("dispatch_unknown/LEASE_EXPIRED", "retry_scheduled/RECONCILED_NOT_FOUND", lease, "sent/PROVIDER_ACCEPTED"), inbox: 1, final: 2},
	}
	keys := map[string]string{}
	for i, tc := range cases {
		to := fmt.Sprintf("+4915550%05d", i)
		key := fmt.Sprintf("row-%d", i)
		keys[tc.name] = key
		st.Sim.SetFault(to, tc.modes...)
		st.Submit(t, liveRequest(key, to))
		if tc.setup != nil {
			tc.setup(t, key)
		}
	}
	settled := func() bool {
		for _, key := range keys {
			rec, err := st.Store.Get(context.Background(), key)
			if err != nil || !rec.State.SendingDone() {
				return false
			}
		}
		return true
	}
	st.RunUntil(t, 60*time.Second, true, settled)

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := keys[tc.name]
			rec := st.Get(t, key)
			if diff := cmp.Diff(tc.path, st.Transitions(key)); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			to := fmt.Sprintf("+4915550%05d", i)
			inbox := st.Sim.Accepted(to)
			if len(inbox) != tc.inbox {
				t.Fatalf("simulator accepted %d messages, want %d", len(inbox), tc.inbox)
			}
			if tc.inbox == 0 {
				return
			}
			msg := inbox[0]
			if msg.ClientRef != sms.AttemptRef(rec.NotificationID, tc.final) || msg.MessageID != rec.ProviderMessageID {
				t.Errorf("accepted %s as %s; record holds %s, attempt %d", msg.ClientRef, msg.MessageID, rec.ProviderMessageID, rec.Attempt)
			}
			if !strings.Contains(msg.Body, "K3Y9Z2") || !strings.HasPrefix(msg.Body, "Ihr Code") {
				t.Errorf("body was not the German code template")
			}
			if !msg.AcceptedAt.Before(rec.DispatchDeadline) || msg.ValidUntil().After(rec.DispatchDeadline) {
				t.Errorf("accepted at %s valid until %s; deadline %s", msg.AcceptedAt, msg.ValidUntil(), rec.DispatchDeadline)
			}
			if len(rec.Sealed) != 0 {
				t.Error("sealed payload kept after sending")
			}
		})
	}
	if out := st.Logs.String(); strings.Contains(out, "K3Y9Z2") || strings.Contains(out, "+4915550") {
		t.Error("a secret reached the workers' logs")
	}
}

// TestNotWrittenEndToEnd is the row "failure before the request was written": the provider's
// port is closed, so the dial fails and the attempt is known not accepted.
func TestNotWrittenEndToEnd(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	st := stacktest.NewStack(t, stacktest.StackOptions{SMSURL: closed})
	st.Submit(t, liveRequest("k", "+491555000001"))
	st.RunUntil(t, 30*time.Second, false, func() bool { return st.Get(t, "k").State == notify.StateRetryScheduled })
	if diff := cmp.Diff(steps("dispatching/LEASE_ACQUIRED", "retry_scheduled/PROVIDER_UNAVAILABLE"), st.Transitions("k")); diff != "" {
		t.Errorf("path (-want +got):\n%s", diff)
	}
}

// TestSweeperFinishesARecordWhoseMessageWasLost admits a record, purges the dispatch queue so
// its message is gone, and checks that the sweeper and the workers still finish it.
func TestSweeperFinishesARecordWhoseMessageWasLost(t *testing.T) {
	st := stacktest.NewStack(t, stacktest.StackOptions{})
	to := "+491555000002"
	st.Submit(t, liveRequest("lost", to))
	if _, err := st.SQS.PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(st.DispatchURL)}); err != nil {
		t.Fatal(err)
	}
	// Nothing arrives on the queues: the record stays accepted until the sweeper finds it.
	if n, err := st.PumpOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("queues after the purge: %d messages, %v", n, err)
	}
	if got := st.Get(t, "lost").State; got != notify.StateAccepted {
		t.Fatalf("state %s", got)
	}
	st.RunUntil(t, 30*time.Second, true, func() bool { return st.Get(t, "lost").State == notify.StateSent })
	if n := len(st.Sim.Accepted(to)); n != 1 {
		t.Errorf("simulator accepted %d messages", n)
	}
}

// TestPumpReportsFailuresAndKeepsThem checks Pump against moto: acknowledged messages are
// deleted, failed ones stay on the queue for redelivery.
func TestPumpReportsFailuresAndKeepsThem(t *testing.T) {
	st := stacktest.NewStack(t, stacktest.StackOptions{})
	queue := sqsqueue.New(st.SQS, st.DispatchURL, st.ReconcileURL)
	ctx := context.Background()
	for i := range 3 {
		m := notify.Message{IdempotencyKey: fmt.Sprintf("k%d", i), NotificationID: "n", Version: 1}
		if err := queue.Enqueue(ctx, notify.DispatchQueue, m, 0); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	failK1 := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			seen = append(seen, r.Body)
			if strings.Contains(r.Body, `"k1"`) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
			if r.EventSource != "aws:sqs" || r.ReceiptHandle == "" || r.Attributes["ApproximateReceiveCount"] == "" {
				t.Errorf("record %+v lacks Lambda's fields", r)
			}
		}
		return resp, nil
	}
	got := pump.Result{}
	for got.Received < 3 {
		res, err := pump.Once(ctx, st.SQS, st.DispatchURL, failK1, pump.Options{VisibilityTimeout: 1 * time.Second, Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		got.Received += res.Received
		got.Deleted += res.Deleted
		got.Failed += res.Failed
	}
	if got != (pump.Result{Received: 3, Deleted: 2, Failed: 1}) {
		t.Errorf("pump %+v", got)
	}
	// The failed message comes back after its visibility timeout.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := pump.Once(ctx, st.SQS, st.DispatchURL, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, nil
		}, pump.Options{WaitTime: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Received == 1 && res.Deleted == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("failed message not redelivered")
		}
	}
	// A delay is honoured: the message is not visible at once.
	if err := queue.Enqueue(ctx, notify.ReconcileQueue, notify.Message{IdempotencyKey: "d", NotificationID: "n", Version: 2}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := pump.Once(ctx, st.SQS, st.ReconcileURL, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}, pump.Options{})
	if err != nil || res.Received != 0 {
		t.Errorf("delayed message visible at once: %+v %v", res, err)
	}
}
