package auditlog

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/resetnotify/resetnotify/infra/auditfixture"
	"github.com/resetnotify/resetnotify/shared/tables"
)

func TestBuild(t *testing.T) {
	rs := auditfixture.Lifecycle("evt-9:sms:password_reset", "evt-9", "01JTEST")
	meta := Meta{Actor: Actor{Function: "audit", Version: "7", RequestID: "req-1"}, Now: auditfixture.T0.Add(2 * time.Hour)}
	common := Entry{
		EventID: "evt-9", NotificationID: "01JTEST", DestinationFP: "fp0123456789abcd",
		PolicyVersion: "policy-7", SafetyMarginMS: 60000, WrittenBy: "audit:7/req-1", Day: "2026-11-01",
	}
	with := func(f func(*Entry)) Entry {
		e := common
		f(&e)
		e.RetainUntil = e.At.Add(DefaultRetention).Unix()
		return e
	}
	sameVersion := rs[1]
	sameVersion.Updated = sameVersion.Updated.Add(time.Second)

	tests := []struct {
		name   string
		rec    events.DynamoDBEventRecord
		want   Entry
		wantOK bool
	}{
		{
			name: "insert is a transition from nothing", rec: auditfixture.Insert(rs[0]), wantOK: true,
			want: with(func(e *Entry) {
				e.Seq, e.Version, e.At = "evt-9:sms:password_reset#0000000001", 1, auditfixture.T0
				e.ToState, e.Reason = "accepted", "ADMITTED"
				e.Actor = "fn-accepted:1/req-1"
			}),
		},
		{
			name: "modify with a new version", rec: auditfixture.Modify(rs[1], rs[2]), wantOK: true,
			want: with(func(e *Entry) {
				e.Seq, e.Version, e.At = "evt-9:sms:password_reset#0000000003", 3, auditfixture.T0.Add(3*time.Second)
				e.FromState, e.ToState, e.Reason, e.Attempt = "dispatching", "sent", "PROVIDER_ACCEPTED", 1
				e.Provider, e.ProviderMessageID = "simulator", "sim-1"
				e.Actor = "fn-sent:1/req-3"
			}),
		},
		{name: "modify without a new version is no transition", rec: auditfixture.Modify(rs[1], sameVersion)},
		{
			name: "TTL removal", rec: auditfixture.Remove(rs[3], auditfixture.TTLIdentity), wantOK: true,
			want: with(func(e *Entry) {
				e.Seq, e.Version, e.At = "evt-9:sms:password_reset#0000000004#purged", 4, auditfixture.T0.Add(time.Hour)
				e.FromState, e.ToState, e.Reason, e.Attempt = "delivered", StatePurged, ReasonPurgedTTL, 1
				e.Provider, e.ProviderMessageID, e.PurgedBy = "simulator", "sim-1", "dynamodb.amazonaws.com"
			}),
		},
		{
			name: "manual removal by a named principal",
			rec:  auditfixture.Remove(rs[3], &events.DynamoDBUserIdentity{Type: "AssumedRole", PrincipalID: "AROAEXAMPLE:ops"}), wantOK: true,
			want: with(func(e *Entry) {
				e.Seq, e.Version, e.At = "evt-9:sms:password_reset#0000000004#purged", 4, auditfixture.T0.Add(time.Hour)
				e.FromState, e.ToState, e.Reason, e.Attempt = "delivered", StatePurged, ReasonPurgedManual, 1
				e.Provider, e.ProviderMessageID, e.PurgedBy = "simulator", "sim-1", "AROAEXAMPLE:ops"
			}),
		},
		{
			name: "manual removal without identity and without a creation time",
			rec: func() events.DynamoDBEventRecord {
				r := auditfixture.Remove(rs[0], nil)
				r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{}
				return r
			}(), wantOK: true,
			want: with(func(e *Entry) {
				e.Seq, e.Version, e.At = "evt-9:sms:password_reset#0000000001#purged", 1, auditfixture.T0.Add(2*time.Hour)
				e.FromState, e.ToState, e.Reason = "accepted", StatePurged, ReasonPurgedManual
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Build(tc.rec, meta)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Build (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildRetention(t *testing.T) {
	rs := auditfixture.Lifecycle("k", "e", "n")
	got, _, err := Build(auditfixture.Insert(rs[0]), Meta{Retention: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if want := auditfixture.T0.Add(30 * 24 * time.Hour).Unix(); got.RetainUntil != want {
		t.Errorf("RetainUntil = %d, want %d", got.RetainUntil, want)
	}
}

func TestBuildMalformed(t *testing.T) {
	rs := auditfixture.Lifecycle("k", "e", "n")
	tests := []struct {
		name string
		edit func(*events.DynamoDBEventRecord)
	}{
		{"unknown event name", func(r *events.DynamoDBEventRecord) { r.EventName = "TRUNCATE" }},
		{"keys only", func(r *events.DynamoDBEventRecord) { r.Change.NewImage = nil }},
		{"version is a string", func(r *events.DynamoDBEventRecord) {
			r.Change.NewImage[tables.AttrVersion] = events.NewStringAttribute("1")
		}},
		{"unknown state", func(r *events.DynamoDBEventRecord) {
			r.Change.NewImage[tables.AttrState] = events.NewStringAttribute("+447700900123")
		}},
		{"no notification ID", func(r *events.DynamoDBEventRecord) { delete(r.Change.NewImage, tables.AttrNotificationID) }},
		{"no updated_at", func(r *events.DynamoDBEventRecord) { delete(r.Change.NewImage, tables.AttrUpdatedAt) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := auditfixture.Insert(rs[0])
			tc.edit(&r)
			_, _, err := Build(r, Meta{})
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if got := err.Error(); containsSecret(got) {
				t.Errorf("error %q repeats an image value", got)
			}
		})
	}
	t.Run("version going back", func(t *testing.T) {
		if _, _, err := Build(auditfixture.Modify(rs[2], rs[1]), Meta{}); !errors.Is(err, ErrMalformed) {
			t.Fatalf("err = %v, want ErrMalformed", err)
		}
	})
}

// TestItemRoundTrip stores an entry and reads it back, including a stray attribute.
func TestItemRoundTrip(t *testing.T) {
	e, err := Link(knownEntry(), GenesisHash)
	if err != nil {
		t.Fatal(err)
	}
	e.PrevMissing = true
	item := Item(e)
	if _, ok := item[tables.AuditProvider]; ok {
		t.Errorf("empty provider stored")
	}
	got, err := FromItem(item)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	item["sealed"] = item[tables.AuditHash]
	got, err = FromItem(item)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sealed"}, got.Unexpected); diff != "" {
		t.Errorf("Unexpected (-want +got):\n%s", diff)
	}
}

var secretLike = regexp.MustCompile(`\+[1-9][0-9]{6,14}|https?://|SECRET`)

func containsSecret(s string) bool { return secretLike.MatchString(s) }
