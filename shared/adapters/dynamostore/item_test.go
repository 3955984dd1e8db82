package dynamostore

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestItemTagsAreTableNames keeps the struct tags, which cannot use constants, equal to the
// names defined once in package tables.
func TestItemTagsAreTableNames(t *testing.T) {
	want := []string{
		tables.AttrIdempotencyKey, tables.AttrNotificationID, tables.AttrEventID, tables.AttrChannel,
		tables.AttrPurpose, tables.AttrState, tables.AttrReason, tables.AttrVersion, tables.AttrAttempt,
		tables.AttrCreatedAt, tables.AttrUpdatedAt, tables.AttrExpiresAt, tables.AttrDispatchDeadline,
		tables.AttrPolicyVersion, tables.AttrSafetyMarginMS, tables.AttrRequestFingerprint,
		tables.AttrSealed, tables.AttrDestinationFP, tables.AttrProvider, tables.AttrProviderMessageID,
		tables.AttrAttemptProviders, tables.AttrLeaseUntil, tables.AttrAttemptedAt, tables.AttrReconcileCount, tables.AttrNextActionAt, tables.AttrDueShard,
		tables.AttrTTL, tables.AttrLeaseToken, tables.AttrWriteToken, tables.AttrActor, tables.AttrEarlyReceipt,
		tables.AttrRequeuedAt, tables.AttrAttemptedNotificationID, tables.AttrDecideBy, tables.AttrDecidedAt, tables.AttrRetryAt,
		tables.AttrPrefixFP, tables.AttrCountry, tables.AttrConvertedAt, tables.AttrOwner, tables.AttrNotFoundAt,
	}
	var got []string
	typ := reflect.TypeFor[item]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("dynamodbav"), ",")
		got = append(got, name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("item tags differ from tables.Attr* (-tables +tags):\n%s", diff)
	}
}

func sampleRecord() notify.Record {
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)
	return notify.Record{
		IdempotencyKey:     "evt-1:sms:password_reset",
		NotificationID:     "01JBXAMPLE0000000000000000",
		EventID:            "evt-1",
		Channel:            notify.ChannelSMS,
		Purpose:            notify.PurposePasswordReset,
		State:              notify.StateDispatching,
		Reason:             notify.ReasonLeaseAcquired,
		Version:            2,
		Attempt:            1,
		CreatedAt:          at,
		UpdatedAt:          at.Add(time.Second),
		ExpiresAt:          at.Add(15 * time.Minute),
		DispatchDeadline:   at.Add(14 * time.Minute),
		PolicyVersion:      "p-1",
		SafetyMargin:       time.Minute,
		RequestFingerprint: "f00d",
		Owner:              "own3r-fp",
		Sealed:             []byte{1, 2, 3},
		DestinationFP:      "abcd",
		Provider:           "simulator",
		ProviderMessageID:  "",
		AttemptProviders:   []string{"simulator"},
		LeaseUntil:         at.Add(31 * time.Second),
		AttemptedAt:        at.Add(time.Second),
		ReconcileCount:     0,
		NextActionAt:       at.Add(31 * time.Second),
		PurgeAt:            time.Date(2026, 11, 2, 12, 15, 0, 0, time.UTC),
	}
}

func TestItemRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		change func(*notify.Record)
	}{
		{"dispatching", func(*notify.Record) {}},
		{"terminal, nothing due", func(r *notify.Record) {
			r.State, r.Reason = notify.StateExpired, notify.ReasonExpiredBeforeDispatch
			r.Sealed, r.LeaseUntil, r.NextActionAt = nil, time.Time{}, time.Time{}
		}},
		{"sent", func(r *notify.Record) {
			r.State, r.Reason, r.ProviderMessageID = notify.StateSent, notify.ReasonProviderAccepted, "pm-1"
			r.Sealed, r.LeaseUntil, r.NextActionAt = nil, time.Time{}, time.Time{}
		}},
		{"unknown, a not found awaiting its confirmation", func(r *notify.Record) {
			r.State, r.Reason = notify.StateDispatchUnknown, notify.ReasonReconcileInconclusive
			r.LeaseUntil, r.NotFoundAt = time.Time{}, r.UpdatedAt
		}},
		{"converted, with prefix and country", func(r *notify.Record) {
			r.State, r.Reason, r.ProviderMessageID = notify.StateSent, notify.ReasonConverted, "pm-1"
			r.Sealed, r.LeaseUntil, r.NextActionAt = nil, time.Time{}, time.Time{}
			r.PrefixFP, r.Country, r.ConvertedAt = "beef", "1", r.UpdatedAt
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := sampleRecord()
			tc.change(&rec)
			av, err := ItemFromRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			back, err := RecordFromItem(av)
			if err != nil {
				t.Fatal(err)
			}
			// The times kept in milliseconds (msTime) come back rounded, the safe way.
			ceil := func(t time.Time) time.Time {
				return t.Add(time.Millisecond - time.Nanosecond).Truncate(time.Millisecond)
			}
			rec.CreatedAt, rec.ExpiresAt = rec.CreatedAt.Truncate(time.Millisecond), rec.ExpiresAt.Truncate(time.Millisecond)
			rec.LeaseUntil, rec.AttemptedAt, rec.NotFoundAt = ceil(rec.LeaseUntil), ceil(rec.AttemptedAt), ceil(rec.NotFoundAt)
			if diff := cmp.Diff(rec, back); diff != "" {
				t.Errorf("round trip differs (-want +got):\n%s", diff)
			}
			_, hasShard := av[tables.AttrDueShard]
			_, hasNext := av[tables.AttrNextActionAt]
			if due := !rec.NextActionAt.IsZero(); hasShard != due || hasNext != due {
				t.Errorf("due_shard present %v, next_action_at present %v; want both %v", hasShard, hasNext, due)
			}
			if _, ok := av[tables.AttrSealed]; ok != (len(rec.Sealed) > 0) {
				t.Errorf("sealed present = %v with %d sealed bytes", ok, len(rec.Sealed))
			}
		})
	}
}

func TestStoredTimes(t *testing.T) {
	rec := sampleRecord()
	it := toItem(rec)
	if it.UpdatedAt != "2026-11-01T12:00:01.123456789Z" || it.DispatchDeadline != "2026-11-01T12:14:00.123456789Z" {
		t.Errorf("updated_at, dispatch_deadline stored as %q, %q", it.UpdatedAt, it.DispatchDeadline)
	}
	// Unix milliseconds, rounded down, or up where an earlier time would be unsafe.
	if it.CreatedAt != "1793534400123" || it.ExpiresAt != "1793535300123" {
		t.Errorf("created_at, expires_at stored as %q, %q", it.CreatedAt, it.ExpiresAt)
	}
	if it.AttemptedAt != "1793534401124" || it.LeaseUntil != "1793534431124" {
		t.Errorf("attempted_at, lease_until stored as %q, %q", it.AttemptedAt, it.LeaseUntil)
	}
	av, err := ItemFromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := av[tables.AttrLeaseUntil].(*ddbtypes.AttributeValueMemberN); !ok || n.Value != "1793534431124" {
		t.Errorf("lease_until stored as %#v, want the number", av[tables.AttrLeaseUntil])
	}
	// A record written before holds these times as strings, and still reads.
	for _, attr := range []string{tables.AttrCreatedAt, tables.AttrExpiresAt, tables.AttrLeaseUntil, tables.AttrAttemptedAt, tables.AttrRequeuedAt} {
		av[attr] = &ddbtypes.AttributeValueMemberS{Value: "2026-11-01T12:00:00.123456789Z"}
	}
	old, err := RecordFromItem(av)
	want := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)
	if err != nil || !old.CreatedAt.Equal(want) || !old.ExpiresAt.Equal(want) || !old.LeaseUntil.Equal(want) || !old.AttemptedAt.Equal(want) || !old.RequeuedAt.Equal(want) {
		t.Errorf("old-shape times read as %s %s %s %s %s, %v", old.CreatedAt, old.ExpiresAt, old.LeaseUntil, old.AttemptedAt, old.RequeuedAt, err)
	}
	if want := rec.PurgeAt.Unix(); it.TTL != want {
		t.Errorf("ttl = %d, want %d", it.TTL, want)
	}
	rec.PurgeAt = rec.PurgeAt.Add(time.Millisecond)
	if want := rec.PurgeAt.Unix() + 1; toItem(rec).TTL != want {
		t.Errorf("ttl of a fractional purge time = %d, want %d (rounded up)", toItem(rec).TTL, want)
	}
	if *it.DueShard != tables.DueShard(rec.IdempotencyKey) {
		t.Errorf("due_shard = %d, want %d", *it.DueShard, tables.DueShard(rec.IdempotencyKey))
	}
}

func TestRecordFromBadItem(t *testing.T) {
	av, err := ItemFromRecord(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	av[tables.AttrState] = &ddbtypes.AttributeValueMemberS{Value: "lost"}
	av[tables.AttrUpdatedAt] = &ddbtypes.AttributeValueMemberS{Value: "yesterday"}
	_, err = RecordFromItem(av)
	if err == nil || !strings.Contains(err.Error(), tables.AttrState) || !strings.Contains(err.Error(), tables.AttrUpdatedAt) {
		t.Errorf("RecordFromItem of a bad item: %v, want both problems named", err)
	}
}

func TestIsConditionFailed(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"other", errors.New("throttled"), false},
		{"conditional check", &ddbtypes.ConditionalCheckFailedException{}, true},
		{"wrapped conditional check", fmt.Errorf("op: %w", &ddbtypes.ConditionalCheckFailedException{}), true},
		{"transaction cancelled by a condition", &ddbtypes.TransactionCanceledException{
			CancellationReasons: []ddbtypes.CancellationReason{{Code: aws.String("None")}, {Code: aws.String("ConditionalCheckFailed")}},
		}, true},
		{"transaction cancelled otherwise", &ddbtypes.TransactionCanceledException{
			CancellationReasons: []ddbtypes.CancellationReason{{Code: aws.String("ThrottlingError")}},
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isConditionFailed(tc.err); got != tc.want {
				t.Errorf("isConditionFailed(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
