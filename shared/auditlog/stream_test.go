package auditlog_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

var update = flag.Bool("update", false, "rewrite events/audit-stream.json from a fresh capture")

// sampleEventPath is the captured batch that `sam local invoke -e` and TestSampleEvent use.
var sampleEventPath = filepath.Join("..", "..", "events", "audit-stream.json")

// TestStreamReplay captures real stream records from DynamoDB Local (an admission, three
// transitions, a TTL update that is no transition, and the TTL removal), replays them through
// the handler, checks the chain, and replays them again to prove nothing new is written.
func TestStreamReplay(t *testing.T) {
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	const key = "evt-stream:sms:password_reset"
	s.Submit(t, "evt-stream", "", "+447700900999", map[string]string{"reset_url": "https://shop.example/reset?token=tok-stream"}, 15*time.Minute)
	s.Step(t, key, time.Second, audittest.Lease)
	s.Step(t, key, time.Second, audittest.Accepted("sim-msg-9"))
	s.Step(t, key, 2*time.Second, audittest.Delivered)
	env.ExpireNow(t, key)

	recs := env.ReadStream(t, 6)
	var names []string
	for _, r := range recs {
		names = append(names, r.EventName)
	}
	if diff := cmp.Diff([]string{"INSERT", "MODIFY", "MODIFY", "MODIFY", "MODIFY", "REMOVE"}, names); diff != "" {
		t.Fatalf("stream records (-want +got):\n%s", diff)
	}
	if id := recs[5].UserIdentity; id == nil || id.Type != "Service" || id.PrincipalID != "dynamodb.amazonaws.com" {
		t.Fatalf("REMOVE userIdentity = %+v, want the DynamoDB service", id)
	}

	env.Replay(t, "req-1", recs)
	ctx := context.Background()
	got, err := env.Reader.Timeline(ctx, "evt-stream")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Seq      string
		From, To notify.State
		Reason   notify.Reason
		PurgedBy string
	}
	var rows []row
	for _, e := range got {
		rows = append(rows, row{e.Seq, e.FromState, e.ToState, e.Reason, e.PurgedBy})
	}
	want := []row{
		{key + "#0000000001", "", "accepted", "ADMITTED", ""},
		{key + "#0000000002", "accepted", "dispatching", "LEASE_ACQUIRED", ""},
		{key + "#0000000003", "dispatching", "sent", "PROVIDER_ACCEPTED", ""},
		{key + "#0000000004", "sent", "delivered", "RECEIPT_DELIVERED", ""},
		{key + "#0000000004#purged", "delivered", auditlog.StatePurged, auditlog.ReasonPurgedTTL, "dynamodb.amazonaws.com"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
	if p := auditor.Verify(got); len(p) != 0 {
		t.Errorf("Verify: %v", p)
	}
	if got[0].At != audittest.ScenarioStart.Add(250*time.Millisecond) || got[0].WrittenBy != "resetnotify-audit:$LATEST/req-1" {
		t.Errorf("first entry at %s written by %s", got[0].At, got[0].WrittenBy)
	}

	before := env.ScanAudit(t)
	env.Replay(t, "req-2", recs)
	if diff := cmp.Diff(audittest.Plain(t, before), audittest.Plain(t, env.ScanAudit(t))); diff != "" {
		t.Errorf("replaying the batch changed the audit table (-before +after):\n%s", diff)
	}
	for _, item := range before {
		if leaks := audittest.Leaks(audittest.ItemText(item), s.Submitted); len(leaks) > 0 {
			t.Errorf("audit item holds %v", leaks)
		}
	}

	if *update {
		writeSample(t, recs)
	}
}

// writeSample saves recs as the sample event, sanitized: the sealed payload (clear text under
// the test sealer) becomes an opaque blob, and the ARN names the template's table.
func writeSample(t *testing.T, recs []events.DynamoDBEventRecord) {
	t.Helper()
	blob := events.NewBinaryAttribute([]byte("AES-256-GCM envelope: ciphertext placeholder"))
	const arn = "arn:aws:dynamodb:us-east-1:123456789012:table/resetnotify-notifications/stream/2030-03-01T09:00:00.000"
	for i := range recs {
		r := &recs[i]
		r.EventSourceArn, r.AWSRegion = arn, "us-east-1"
		for _, img := range []map[string]events.DynamoDBAttributeValue{r.Change.NewImage, r.Change.OldImage} {
			if _, ok := img[tables.AttrSealed]; ok {
				img[tables.AttrSealed] = blob
			}
		}
	}
	b, err := json.MarshalIndent(events.DynamoDBEvent{Records: recs}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sampleEventPath, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSampleEvent decodes the captured sample event and runs it through the handler.
func TestSampleEvent(t *testing.T) {
	b, err := os.ReadFile(sampleEventPath)
	if err != nil {
		t.Fatal(err)
	}
	if leaks := audittest.Leaks(string(b), nil); len(leaks) > 0 {
		t.Fatalf("%s holds %v", sampleEventPath, leaks)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range ev.Records {
		kinds = append(kinds, r.EventName)
		for _, img := range []map[string]events.DynamoDBAttributeValue{r.Change.NewImage, r.Change.OldImage} {
			for name, v := range img {
				if v.DataType() == events.DataTypeBinary {
					if leaks := audittest.Leaks(string(v.Binary()), nil); len(leaks) > 0 {
						t.Errorf("binary attribute %s of the sample holds %v", name, leaks)
					}
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"INSERT", "MODIFY", "MODIFY", "MODIFY", "MODIFY", "REMOVE"}, kinds); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	var entries []auditlog.Entry
	for _, r := range ev.Records {
		e, ok, err := auditlog.Build(r, auditlog.Meta{Actor: auditlog.Actor{Function: "f", Version: "1", RequestID: "r"}})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		prev := auditlog.GenesisHash
		if len(entries) > 0 {
			prev = entries[len(entries)-1].Hash
		}
		if e, err = auditlog.Link(e, prev); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if len(entries) != 5 || !entries[4].Purged() || entries[4].Reason != auditlog.ReasonPurgedTTL {
		t.Fatalf("entries from the sample: %d, last %+v", len(entries), entries[len(entries)-1])
	}
	if p := auditor.Verify(entries); len(p) != 0 {
		t.Errorf("Verify: %v", p)
	}
}
