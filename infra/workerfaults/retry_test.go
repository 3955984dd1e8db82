package workerfaults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// TestCommittedWritesRetriedBySDK reports every conditional write to DynamoDB Local as a
// dropped connection after it committed, so the SDK's retryer repeats it and the repeat fails
// its condition: the admission's put, the lease, the sent transition and the receipt's
// delivered transition. Each is recognised as the caller's own committed write (its token in
// the item the failed condition returns), so the notification is sent exactly once and ends
// delivered, instead of the lease being taken for a rival's and the record left to expire.
func TestCommittedWritesRetriedBySDK(t *testing.T) {
	ops := []awscount.Op{{Service: "DynamoDB", Operation: "PutItem"}, {Service: "DynamoDB", Operation: "UpdateItem"}}
	fault := &stacktest.CommitThenFail{Ops: ops}
	st := stacktest.NewStack(t, stacktest.StackOptions{
		APIOptions: []func(*middleware.Stack) error{fault.Add},
		Sim:        smssim.Config{DeliveryDelay: time.Hour},
	})
	const key, to = "retried", "+491555000321"
	ctx := context.Background()
	out, err := st.Intake.Submit(ctx, liveRequest(key, to))
	if err != nil || out.Replayed {
		t.Fatalf("submit: %+v %v; a retried admission is still a first admission", out, err)
	}
	st.RunUntil(t, 30*time.Second, false, func() bool { return st.Get(t, key).State == notify.StateSent })
	rec := st.Get(t, key)
	res, err := st.Recorder.Record(ctx, providerevents.Receipt{
		AttemptRef: sms.AttemptRef(rec.NotificationID, rec.Attempt), MessageID: rec.ProviderMessageID,
		Status: sms.ReceiptDelivered, At: time.Now().UTC(), Provider: "simulator",
	})
	if err != nil || res.Outcome != providerevents.OutcomeTransitioned {
		t.Fatalf("receipt: %+v %v", res, err)
	}

	rec = st.Get(t, key)
	if rec.State != notify.StateDelivered || rec.Attempt != 1 || rec.Version != 4 {
		t.Errorf("record %s/%s attempt %d v%d, want delivered at attempt 1, v4", rec.State, rec.Reason, rec.Attempt, rec.Version)
	}
	if n := len(st.Sim.Accepted(to)); n != 1 {
		t.Errorf("simulator accepted %d messages, want exactly 1", n)
	}
	if diff := cmp.Diff(steps("dispatching/LEASE_ACQUIRED", "sent/PROVIDER_ACCEPTED"), st.Transitions(key)); diff != "" {
		t.Errorf("worker path (-want +got):\n%s", diff)
	}
	// The test proves nothing unless the faults happened: the put, and the lease, sent and
	// delivered updates.
	if fault.Injected(ops[0]) < 1 || fault.Injected(ops[1]) < 3 {
		t.Errorf("injected %d put and %d update faults, want at least 1 and 3", fault.Injected(ops[0]), fault.Injected(ops[1]))
	}
}

// TestSweeperBacklogOneMessagePerRecord keeps a backlog of accepted records whose dispatch
// messages were lost overdue through several sweeps, against DynamoDB Local and moto: each
// sweep that re-enqueues a record moves its next_action_at forward in the same conditional
// write, so the dispatch queue ends up with one message per record, not one per sweep.
func TestSweeperBacklogOneMessagePerRecord(t *testing.T) {
	st := stacktest.NewStack(t, stacktest.StackOptions{})
	st.Sweeper.Settings.RequeueAfter = 10 * time.Minute
	ctx := context.Background()
	const n = 5
	policy := st.Intake.Policy
	for i := range n {
		req := liveRequest(fmt.Sprintf("backlog-%d", i), fmt.Sprintf("+49155500%04d", i))
		rec := notify.NewRecord(req, notify.Admission{NotificationID: ulid.Make().String(), Sealed: []byte("x"), DestinationFP: "fp"}, time.Now().UTC(), policy)
		if _, created, err := st.Store.Admit(ctx, rec); err != nil || !created {
			t.Fatalf("admit: %v %v", created, err)
		}
	}
	// The records fall due SweepAfter (1 s) after admission; sweep until all are re-enqueued,
	// then three sweeps more while the backlog lasts.
	dispatched := 0
	deadline := time.Now().Add(30 * time.Second)
	for dispatched < n && time.Now().Before(deadline) {
		rep, err := st.Sweeper.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dispatched += rep.Dispatched
		if rep.Dispatched == 0 {
			time.Sleep(100 * time.Millisecond) // not due yet: poll again shortly
		}
	}
	for range 3 {
		rep, err := st.Sweeper.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dispatched += rep.Dispatched
	}
	if dispatched != n {
		t.Errorf("sweeps re-enqueued %d times, want %d (once per record)", dispatched, n)
	}
	perKey := map[string]int{}
	for _, b := range receiveAll(t, st, 2*n) {
		var m notify.Message
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatal(err)
		}
		perKey[m.IdempotencyKey]++
	}
	if len(perKey) != n {
		t.Errorf("messages for %d records, want %d: %v", len(perKey), n, perKey)
	}
	for k, c := range perKey {
		if c != 1 {
			t.Errorf("%s: %d messages on the dispatch queue, want 1", k, c)
		}
	}
}

// receiveAll receives from the stack's dispatch queue until max messages arrived or a long
// poll comes back empty, and returns their bodies.
func receiveAll(t *testing.T, st *stacktest.Stack, max int) []string {
	t.Helper()
	var bodies []string
	for len(bodies) < max {
		out, err := st.SQS.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(st.DispatchURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 300,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
	}
	return bodies
}

// TestReconcileReadsReceiptsFirst sends with "accept then time out", so the attempt is
// dispatch_unknown, and makes the simulator's lookup answer 500. With a delivered receipt
// stored for the attempt (as provider-events stores it), reconciliation settles the record as
// delivered from the receipt, without asking the provider; without one, the failing lookup is
// inconclusive as before. Either way the provider was called once.
func TestReconcileReadsReceiptsFirst(t *testing.T) {
	cases := []struct {
		name    string
		receipt bool
		want    stacktest.Step
	}{
		{"delivered receipt stored", true, stacktest.Step{State: notify.StateDelivered, Reason: notify.ReasonReconciledByReceipt}},
		{"no receipt", false, stacktest.Step{State: notify.StateDispatchUnknown, Reason: notify.ReasonReconcileInconclusive}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := stacktest.NewStack(t, stacktest.StackOptions{SMSTimeout: 500 * time.Millisecond, Sim: smssim.Config{DeliveryDelay: time.Hour}})
			const key, to = "unknown-outcome", "+491555000777"
			st.Sim.SetFault(to, smssim.ModeAcceptThenTimeout)
			st.Sim.SetLookupMode(smssim.LookupError)
			ctx := context.Background()
			st.Submit(t, liveRequest(key, to))
			// Dispatch only: the record stops at dispatch_unknown.
			deadline := time.Now().Add(30 * time.Second)
			for st.Get(t, key).State != notify.StateDispatchUnknown {
				if time.Now().After(deadline) {
					t.Fatalf("record %s, want dispatch_unknown", st.Get(t, key).State)
				}
				if _, err := pump.Once(ctx, st.SQS, st.DispatchURL, st.Dispatcher.Handle, pump.Options{Region: emulator.Region, WaitTime: time.Second}); err != nil {
					t.Fatal(err)
				}
			}
			rec := st.Get(t, key)
			if tc.receipt {
				accepted := st.Sim.Accepted(to)
				if len(accepted) != 1 {
					t.Fatalf("simulator accepted %d messages, want 1", len(accepted))
				}
				if _, _, err := st.Receipts.Put(ctx, providerevents.Receipt{
					AttemptRef: sms.AttemptRef(rec.NotificationID, rec.Attempt), MessageID: accepted[0].MessageID,
					Status: sms.ReceiptDelivered, At: time.Now().UTC(), Provider: "simulator",
				}); err != nil {
					t.Fatal(err)
				}
			}
			// One reconciliation, called directly at the time the record is due.
			if err := st.Reconciler.Reconcile(ctx, notify.MessageOf(rec)); err != nil {
				t.Fatal(err)
			}
			got := st.Get(t, key)
			if diff := cmp.Diff(tc.want, stacktest.Step{State: got.State, Reason: got.Reason}); diff != "" {
				t.Errorf("after reconciliation (-want +got):\n%s", diff)
			}
			if n := len(requestsTo(st.Sim.Requests(), to)); n != 1 {
				t.Errorf("provider called %d times, want 1", n)
			}
			if tc.receipt && got.ProviderMessageID == "" {
				t.Error("the receipt's message ID was not recorded")
			}
		})
	}
}

// TestAuditActorsInOrder admits a notification, dispatches it and records its delivered
// receipt, each in an invocation with its own request ID, then runs the audit function over
// the notifications stream: each entry names the function that made the transition (copied
// from the record, written in the same update), in order intake, dispatch, dispatch,
// provider-events, and the audit function's own identity separately.
func TestAuditActorsInOrder(t *testing.T) {
	st := stacktest.NewStack(t, stacktest.StackOptions{Sim: smssim.Config{DeliveryDelay: time.Hour}})
	env := audittest.Attach(t, st.Names)
	invocation := func(id string) context.Context {
		return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
	}
	const key, to = "audited", "+491555000888"
	if _, err := st.Intake.Submit(invocation("req-intake"), liveRequest(key, to)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for st.Get(t, key).State != notify.StateSent {
		if time.Now().After(deadline) {
			t.Fatalf("record %s, want sent", st.Get(t, key).State)
		}
		if _, err := pump.Once(invocation("req-dispatch"), st.SQS, st.DispatchURL, st.Dispatcher.Handle, pump.Options{Region: emulator.Region, WaitTime: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	rec := st.Get(t, key)
	if _, err := st.Recorder.Record(invocation("req-events"), providerevents.Receipt{
		AttemptRef: sms.AttemptRef(rec.NotificationID, rec.Attempt), MessageID: rec.ProviderMessageID,
		Status: sms.ReceiptDelivered, At: time.Now().UTC(), Provider: "simulator",
	}); err != nil {
		t.Fatal(err)
	}

	resp, err := env.Handler.Handle(invocation("req-audit"), events.DynamoDBEvent{Records: env.ReadStream(t, 4)})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("audit: %+v %v", resp, err)
	}
	entries, err := env.Reader.Timeline(context.Background(), "evt-"+key)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, string(e.ToState)+" by "+e.Actor)
		if e.WrittenBy != "resetnotify-audit:$LATEST/req-audit" {
			t.Errorf("%s: written_by %q, want the audit function's own invocation", e.Seq, e.WrittenBy)
		}
	}
	want := []string{
		"accepted by intake:/req-intake",
		"dispatching by dispatch:/req-dispatch",
		"sent by dispatch:/req-dispatch",
		"delivered by provider-events:/req-events",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}

// TestReceiptWhileDispatchingIsHeld has the provider's delivered receipt recorded while the
// dispatch worker is still inside the provider call, against DynamoDB Local: provider-events
// holds it on the dispatching record (no redelivery needed, so none can run out), and the
// dispatch worker's own transition applies it: sent, then delivered.
func TestReceiptWhileDispatchingIsHeld(t *testing.T) {
	st := stacktest.NewStack(t, stacktest.StackOptions{})
	ctx := context.Background()
	var early providerevents.Result
	sender := &workercoretest.Sender{OnSend: func(ctx context.Context, _ int, req sms.SendRequest) sms.Outcome {
		var err error
		early, err = st.Recorder.Record(ctx, providerevents.Receipt{
			AttemptRef: req.AttemptRef, MessageID: "m-early", Status: sms.ReceiptDelivered, At: time.Now().UTC(), Provider: "simulator",
		})
		if err != nil {
			t.Errorf("receipt: %v", err)
		}
		return sms.Accepted("m-early")
	}}
	base := st.Dispatcher
	d := &dispatch.Dispatcher{
		Store: base.Store, Opener: base.Opener, Renderer: base.Renderer, Sender: sender, Provider: base.Provider,
		Base: workercore.Base{Queue: base.Queue, Clock: base.Clock, Settings: base.Settings, Log: base.Log, Metrics: base.Metrics},
	}
	const key = "early-receipt"
	rec := st.Submit(t, liveRequest(key, "+491555000999"))
	if err := d.Dispatch(ctx, notify.MessageOf(rec)); err != nil {
		t.Fatal(err)
	}
	if early.Outcome != providerevents.OutcomeEarly || early.State != notify.StateDispatching {
		t.Errorf("receipt during the call: %s with the record %s, want early while dispatching", early.Outcome, early.State)
	}
	got := st.Get(t, key)
	if got.State != notify.StateDelivered || got.Reason != notify.ReasonReceiptDelivered || got.EarlyReceipt.Held() {
		t.Errorf("record %s/%s holding %+v, want delivered/RECEIPT_DELIVERED with nothing held", got.State, got.Reason, got.EarlyReceipt)
	}
	if diff := cmp.Diff(steps("dispatching/LEASE_ACQUIRED", "sent/PROVIDER_ACCEPTED", "delivered/RECEIPT_DELIVERED"), st.Transitions(key)); diff != "" {
		t.Errorf("worker path (-want +got):\n%s", diff)
	}
	if sender.Calls() != 1 {
		t.Errorf("%d sends, want 1", sender.Calls())
	}
}
