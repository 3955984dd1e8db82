package auditlog

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func knownEntry() Entry {
	return Entry{
		EventID:        "evt-1",
		Seq:            "evt-1:sms:password_reset#0000000002",
		NotificationID: "01J0000000000000000000000A",
		Version:        2,
		At:             time.Date(2026, 11, 1, 10, 0, 1, 500_000_000, time.UTC),
		Day:            "2026-11-01",
		FromState:      "accepted",
		ToState:        "dispatching",
		Reason:         "LEASE_ACQUIRED",
		Attempt:        1,
		DestinationFP:  "a1b2c3d4e5f60718",
		PolicyVersion:  "2026-11-01",
		SafetyMarginMS: 60000,
		Actor:          "resetnotify-dispatch:$LATEST/req-9",
		WrittenBy:      "resetnotify-audit:$LATEST/req-1",
		RetainUntil:    1797069601,
		WrittenAt:      time.Date(2026, 11, 1, 10, 0, 2, 250_000_000, time.UTC),
		WriteDay:       "2026-11-01",
	}
}

// TestComputeHashKnownAnswer pins the documented algorithm: the expected values were computed
// with the Python lines of docs/audit.md, not with this package.
func TestComputeHashKnownAnswer(t *testing.T) {
	tests := []struct {
		name, prev, want string
	}{
		{"genesis", GenesisHash, "b2838da6226cdbdc4ff4fe501492e0f17d2b8f306977c2096b88dc1673a5e079"},
		{"linked", strings.Repeat("ab", 32), "546bf9a46958c37a7da6e533b2a25ca8dae4682fc43fd1ad865d34019875362a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeHash(tc.prev, knownEntry())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ComputeHash = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	e := knownEntry()
	e.PrevHash, e.Hash = "ignored", "ignored"
	want := "resetnotify-audit-v1\n" +
		"event_id:5:evt-1\n" +
		"seq:35:evt-1:sms:password_reset#0000000002\n" +
		"notification_id:26:01J0000000000000000000000A\n" +
		"version:1:2\n" +
		"at:30:2026-11-01T10:00:01.500000000Z\n" +
		"day:10:2026-11-01\n" +
		"from_state:8:accepted\n" +
		"to_state:11:dispatching\n" +
		"reason:14:LEASE_ACQUIRED\n" +
		"attempt:1:1\n" +
		"provider:0:\n" +
		"provider_message_id:0:\n" +
		"destination_fp:16:a1b2c3d4e5f60718\n" +
		"policy_version:10:2026-11-01\n" +
		"safety_margin_ms:5:60000\n" +
		"actor:34:resetnotify-dispatch:$LATEST/req-9\n" +
		"written_by:31:resetnotify-audit:$LATEST/req-1\n" +
		"purged_by:0:\n" +
		"prev_missing:5:false\n" +
		"retain_until:10:1797069601\n" +
		"written_at:30:2026-11-01T10:00:02.250000000Z\n" +
		"write_day:10:2026-11-01\n" +
		"replayed:5:false\n" +
		"reconstructed:5:false\n" +
		"gap_from:1:0\n"
	if diff := cmp.Diff(want, string(Canonical(e))); diff != "" {
		t.Errorf("Canonical (-want +got):\n%s", diff)
	}
}

// TestHashCoversEveryField changes each field in turn and expects another hash.
func TestHashCoversEveryField(t *testing.T) {
	base, err := ComputeHash(GenesisHash, knownEntry())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields[:canonicalFields] {
		t.Run(f.name, func(t *testing.T) {
			e := knownEntry()
			v := "1"
			switch f.kind {
			case kindBool:
				v = "true"
			case kindString:
				v = f.get(&e) + "x"
				if f.name == "at" || f.name == "written_at" {
					v = "2027-01-01T00:00:00.000000000Z"
				}
			case kindNumber:
				v = f.get(&e) + "1"
			}
			if err := f.set(&e, v); err != nil {
				t.Fatal(err)
			}
			got, err := ComputeHash(GenesisHash, e)
			if err != nil {
				t.Fatal(err)
			}
			if got == base {
				t.Errorf("changing %s left the hash unchanged", f.name)
			}
		})
	}
}

func TestComputeHashRejectsBadPrev(t *testing.T) {
	for _, prev := range []string{"", "zz", strings.Repeat("0", 62)} {
		if _, err := ComputeHash(prev, knownEntry()); err == nil {
			t.Errorf("ComputeHash(%q) succeeded", prev)
		}
	}
}
