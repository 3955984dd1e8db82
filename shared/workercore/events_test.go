package workercore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// The sample events in events/ name this record: the one events/intake-post.json admits.
const (
	sampleKey = "order-4711-reset-1"
	sampleID  = "01JBXAMPLE0000000000000001"
)

// readEvent decodes a sample event into v and checks that nothing in the file was lost: the
// decoded value, encoded again, holds every field the file holds (and at most adds empty
// ones the file leaves out, as Lambda does for md5OfMessageAttributes).
func readEvent(t *testing.T, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &b); err != nil {
		t.Fatal(err)
	}
	dropAbsentEmpty(a, b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("%s does not round-trip through %T (-file +decoded):\n%s", name, v, diff)
	}
}

// sampleFixture holds the sample record, admitted a moment before the samples were sent.
func sampleFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	req := request(sampleKey, 15*time.Minute)
	req.EventID = "order-4711"
	sealed, err := notifytest.Sealer{}.Seal(context.Background(), req.IdempotencyKey, req.Secret())
	if err != nil {
		t.Fatal(err)
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: sampleID, Sealed: sealed, DestinationFP: "fp"}, t0, notify.DefaultPolicy())
	if _, _, err := f.store.Admit(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(t0.Add(500 * time.Millisecond))
	return f
}

func TestDispatchSampleEvents(t *testing.T) {
	tests := []struct {
		file   string
		poison int
	}{
		{"dispatch-message.json", 0},
		{"dispatch-batch.json", 3},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			var ev events.SQSEvent
			readEvent(t, tc.file, &ev)
			f := sampleFixture(t)
			resp, err := f.d.Handle(context.Background(), ev)
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle = %+v, %v", resp, err)
			}
			assertNoFailuresJSON(t, resp)
			if got := f.get(t, sampleKey); got.State != notify.StateSent || f.sender.Calls() != 1 {
				t.Errorf("record %s after %d sends, want sent after exactly one", got.State, f.sender.Calls())
			}
			if n := strings.Count(f.metrics.String(), `"Outcome":"poison_`); n != tc.poison {
				t.Errorf("%d poison messages counted, want %d", n, tc.poison)
			}
		})
	}
}

func TestReconcileSampleEvent(t *testing.T) {
	var ev events.SQSEvent
	readEvent(t, "reconcile-message.json", &ev)
	f := sampleFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.Unknown(sms.DetailTimeout, context.DeadlineExceeded)}
	f.dispatch(t, notify.MessageOf(f.get(t, sampleKey)))
	unknown := f.get(t, sampleKey)
	if m, _ := parseSample(ev.Records[0].Body); m != notify.MessageOf(unknown) {
		t.Fatalf("sample message %+v does not point at the dispatch_unknown record v%d", m, unknown.Version)
	}
	f.clock.Set(unknown.NextActionAt)
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.Found("pm-1", sms.ReceiptNone, time.Time{})}}
	resp, err := f.r.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v", resp, err)
	}
	assertNoFailuresJSON(t, resp)
	if got := f.get(t, sampleKey); got.State != notify.StateSent || got.Reason != notify.ReasonReconciledAccepted {
		t.Errorf("record %s/%s", got.State, got.Reason)
	}
}

func TestSweeperSampleEvent(t *testing.T) {
	var ev events.EventBridgeEvent
	readEvent(t, "sweeper-schedule.json", &ev)
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" {
		t.Errorf("not a scheduled event: %+v", ev)
	}
	f := sampleFixture(t)
	f.clock.Advance(5 * time.Minute)
	if err := f.s.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if s := f.sched.All(); len(s) != 1 || s[0].Message.IdempotencyKey != sampleKey {
		t.Errorf("scheduled %+v, want the sample record re-enqueued", s)
	}
}

// TestEmptyBatchResponseJSON checks that a batch with nothing to retry, an empty one included,
// answers an empty list: a LocalStack-compatible emulator's poller fails on
// {"batchItemFailures": null} and redelivers every message.
func TestEmptyBatchResponseJSON(t *testing.T) {
	f := newFixture(t)
	for name, h := range map[string]func(context.Context, events.SQSEvent) (events.SQSEventResponse, error){
		"dispatch": f.d.Handle, "reconcile": f.r.Handle,
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := h(context.Background(), events.SQSEvent{})
			if err != nil {
				t.Fatal(err)
			}
			assertNoFailuresJSON(t, resp)
		})
	}
}

// assertNoFailuresJSON checks the JSON Lambda would return for resp.
func assertNoFailuresJSON(t *testing.T, resp events.SQSEventResponse) {
	t.Helper()
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"batchItemFailures":[]}` {
		t.Errorf("batch response %s, want {\"batchItemFailures\":[]}", b)
	}
}

func parseSample(body string) (notify.Message, error) {
	var m notify.Message
	err := json.Unmarshal([]byte(body), &m)
	return m, err
}

// dropAbsentEmpty removes from b the empty strings and nulls that a does not have.
func dropAbsentEmpty(a, b any) {
	switch bv := b.(type) {
	case map[string]any:
		av, _ := a.(map[string]any)
		for k, v := range bv {
			if _, ok := av[k]; !ok && (v == nil || v == "") {
				delete(bv, k)
				continue
			}
			dropAbsentEmpty(av[k], v)
		}
	case []any:
		av, _ := a.([]any)
		for i := range bv {
			if i < len(av) {
				dropAbsentEmpty(av[i], bv[i])
			}
		}
	}
}
