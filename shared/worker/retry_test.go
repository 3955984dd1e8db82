package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/receipts"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/smssim"
	"github.com/resetnotify/resetnotify/shared/worker/workertest"
)

// TestCommittedWritesRetriedBySDK reports every conditional write to DynamoDB Local as a
// dropped connection after it committed, so the SDK's retryer repeats it and the repeat fails
// its condition: the admission's put, the lease, the sent transition and the receipt's
// delivered transition. Each is recognised as the caller's own committed write (its token in
// the item the failed condition returns), so the notification is sent exactly once and ends
// delivered, instead of the lease being taken for a rival's and the record left to expire.
func TestCommittedWritesRetriedBySDK(t *testing.T) {
	ops := []awsclient.Op{{Service: "DynamoDB", Operation: "PutItem"}, {Service: "DynamoDB", Operation: "UpdateItem"}}
	fault := &workertest.CommitThenFail{Ops: ops}
	st := workertest.NewStack(t, workertest.StackOptions{
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
	res, err := st.Recorder.Record(ctx, receipts.Receipt{
		AttemptRef: sms.AttemptRef(rec.NotificationID, rec.Attempt), MessageID: rec.ProviderMessageID,
		Status: sms.ReceiptDelivered, At: time.Now().UTC(), Provider: "simulator",
	})
	if err != nil || res.Outcome != receipts.OutcomeTransitioned {
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
