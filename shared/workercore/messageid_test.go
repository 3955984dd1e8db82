package workercore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// TestSettleByReceiptKeepsMessageID takes an attempt whose send timed out after the provider
// accepted it to the end by each path that settles it (a receipt held on the record while it
// was dispatching, a receipt in the receipts table, the provider's lookup; and a receipt held
// while the send succeeded) and checks that the provider's message ID is on the record, in
// its status and in the audit entry of its last transition. A receipt that names another
// message or provider than the attempt's settles nothing.
func TestSettleByReceiptKeepsMessageID(t *testing.T) {
	const id = "pm-77"
	held := notify.Receipt{State: notify.StateDelivered, Provider: providerSim, MessageID: id, At: t0}
	timeout := sms.Unknown(sms.DetailTimeout, context.DeadlineExceeded)
	tests := []struct {
		name    string
		outcome sms.Outcome     // the send's
		hold    *notify.Receipt // held on the record during the send
		stored  *sms.Receipt    // in the receipts table
		lookup  sms.LookupResult
		want    state
		wantID  string
	}{
		{name: "early receipt, then timeout", outcome: timeout, hold: &held,
			want: state{notify.StateDelivered, notify.ReasonReconciledByReceipt}, wantID: id},
		{name: "early undelivered receipt, then timeout", outcome: timeout,
			hold: &notify.Receipt{State: notify.StateUndelivered, Provider: providerSim, MessageID: id, At: t0},
			want: state{notify.StateUndelivered, notify.ReasonReconciledByReceipt}, wantID: id},
		{name: "early receipt, then accepted", outcome: sms.Accepted(id), hold: &held,
			want: state{notify.StateDelivered, notify.ReasonReceiptDelivered}, wantID: id},
		{name: "stored receipt", outcome: timeout, stored: &sms.Receipt{Provider: providerSim, MessageID: id, Status: sms.ReceiptDelivered, At: t0},
			want: state{notify.StateDelivered, notify.ReasonReconciledByReceipt}, wantID: id},
		{name: "lookup", outcome: timeout, lookup: sms.Found(id, sms.ReceiptDelivered, t0),
			want: state{notify.StateDelivered, notify.ReasonReceiptDelivered}, wantID: id},
		{name: "early receipt of another provider: a mismatch", outcome: timeout,
			hold:   &notify.Receipt{State: notify.StateDelivered, Provider: "other-provider", MessageID: id},
			lookup: sms.Inconclusive("provider_error"),
			want:   state{notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive}},
		{name: "early receipt of another message, then accepted: a mismatch", outcome: sms.Accepted(id),
			hold: &notify.Receipt{State: notify.StateDelivered, Provider: providerSim, MessageID: "pm-other"},
			want: state{notify.StateSent, notify.ReasonProviderAccepted}, wantID: id},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sender.Outcomes = []sms.Outcome{tc.outcome}
			if tc.hold != nil {
				// provider-events holds the receipt while the worker is still calling.
				f.sender.OnSend = func(ctx context.Context, _ int, req sms.SendRequest) sms.Outcome {
					cur := f.get(t, "k")
					if err := f.store.HoldReceipt(ctx, cur, *tc.hold); err != nil {
						t.Errorf("hold receipt: %v", err)
					}
					return tc.outcome
				}
			}
			rec := f.admit(t, request("k", 10*time.Minute))
			f.dispatch(t, notify.MessageOf(rec))
			reader := &workercoretest.Receipts{ByRef: map[string]sms.Receipt{}}
			if tc.stored != nil {
				rc := *tc.stored
				rc.AttemptRef = sms.AttemptRef(rec.NotificationID, 1)
				reader.ByRef[rc.AttemptRef] = rc
			}
			f.r.Receipts = reader
			f.lookup.Answers = []workercoretest.Answer{{Result: tc.lookup}}
			before := f.get(t, "k")
			if before.State == notify.StateDispatchUnknown {
				f.clock.Set(before.NextActionAt)
				f.reconcile(t, notify.MessageOf(before))
			}
			got := f.get(t, "k")
			if stateOf(got) != tc.want {
				t.Fatalf("ended %+v, want %+v", stateOf(got), tc.want)
			}
			if tc.wantID == "" {
				if !strings.Contains(f.metrics.String(), `"ReceiptMismatches":1`) {
					t.Errorf("no ReceiptMismatches metric:\n%s", f.metrics.String())
				}
				return
			}
			if got.State == notify.StateSent && tc.hold != nil && !strings.Contains(f.metrics.String(), `"ReceiptMismatches":1`) {
				t.Errorf("no ReceiptMismatches metric for the held receipt of another message:\n%s", f.metrics.String())
			}
			if got.ProviderMessageID != tc.wantID {
				t.Errorf("record: provider_message_id %q, want %q", got.ProviderMessageID, tc.wantID)
			}
			if v := intake.NewStatusView(got); v.ProviderMessageID != tc.wantID {
				t.Errorf("status: provider_message_id %q, want %q", v.ProviderMessageID, tc.wantID)
			}
			if e := auditEntry(t, before, got); e.ProviderMessageID != tc.wantID {
				t.Errorf("audit entry %s -> %s: provider_message_id %q, want %q", e.FromState, e.ToState, e.ProviderMessageID, tc.wantID)
			}
		})
	}
}

// auditEntry returns the audit entry the audit function builds from the stream record of the
// notifications table's change from prev to next, as stored by dynamostore. When the test did
// not see the record just before next (the worker made two transitions in one call), prev
// stands in for it at the version before next's: the entry reads its fields from the new
// image, and the old image gives only its from-state and version.
func auditEntry(t *testing.T, prev, next notify.Record) auditlog.Entry {
	t.Helper()
	if prev.Version >= next.Version {
		prev.Version = next.Version - 1
	}
	img := func(r notify.Record) map[string]events.DynamoDBAttributeValue {
		av, err := dynamostore.ItemFromRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]events.DynamoDBAttributeValue{}
		for k, v := range av {
			out[k] = streamValue(t, v)
		}
		return out
	}
	rec := events.DynamoDBEventRecord{EventName: string(events.DynamoDBOperationTypeModify), Change: events.DynamoDBStreamRecord{
		OldImage: img(prev), NewImage: img(next), SequenceNumber: "1",
	}}
	e, ok, err := auditlog.Build(rec, auditlog.Meta{Actor: auditlog.Actor{Function: "audit"}})
	if err != nil || !ok {
		t.Fatalf("audit.Build: %v (a transition: %v)", err, ok)
	}
	return e
}

// streamValue converts an SDK attribute value to the stream event's.
func streamValue(t *testing.T, v ddbtypes.AttributeValue) events.DynamoDBAttributeValue {
	t.Helper()
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value)
	case *ddbtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value)
	case *ddbtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value)
	case *ddbtypes.AttributeValueMemberL:
		var l []events.DynamoDBAttributeValue
		for _, e := range x.Value {
			l = append(l, streamValue(t, e))
		}
		return events.NewListAttribute(l)
	}
	t.Fatal(errors.New("unexpected attribute type"))
	return events.DynamoDBAttributeValue{}
}
