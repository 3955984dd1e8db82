package tables

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormatTimeSortsLikeTime(t *testing.T) {
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	times := []time.Time{
		base,
		base.Add(time.Nanosecond),
		base.Add(100 * time.Millisecond),
		base.Add(time.Second),
		base.Add(9 * time.Second),
		base.Add(10 * time.Second),
		base.In(time.FixedZone("CET", 3600)).Add(time.Hour), // same wall text, other zone
		base.Add(24 * time.Hour),
	}
	var formatted []string
	for _, tt := range times {
		s := FormatTime(tt)
		if len(s) != len(TimeLayout) {
			t.Errorf("FormatTime(%v) = %q: width %d, want %d", tt, s, len(s), len(TimeLayout))
		}
		back, err := ParseTime(s)
		if err != nil || !back.Equal(tt) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, back, err, tt)
		}
		formatted = append(formatted, s)
	}
	if !sort.StringsAreSorted(formatted) {
		t.Errorf("formatted times do not sort as times:\n%v", formatted)
	}
}

func TestFormatTimeZero(t *testing.T) {
	if s := FormatTime(time.Time{}); s != "" {
		t.Errorf("FormatTime(zero) = %q, want empty", s)
	}
	if tt, err := ParseTime(""); err != nil || !tt.IsZero() {
		t.Errorf("ParseTime(\"\") = %v, %v; want zero", tt, err)
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("ParseTime(yesterday) succeeded")
	}
}

func TestDueShard(t *testing.T) {
	seen := map[int]int{}
	for i := range 1000 {
		key := "evt-" + time.Duration(i).String()
		s := DueShard(key)
		if s < 0 || s >= DueShards {
			t.Fatalf("DueShard(%q) = %d, outside [0,%d)", key, s, DueShards)
		}
		if again := DueShard(key); again != s {
			t.Fatalf("DueShard(%q) not stable: %d then %d", key, s, again)
		}
		seen[s]++
	}
	if len(seen) != DueShards {
		t.Errorf("1000 keys used %d of %d shards: %v", len(seen), DueShards, seen)
	}
	// Pinned values: the shard of a key must never change across releases, or records would
	// move between index partitions.
	if diff := cmp.Diff([]int{DueShard("a"), DueShard("evt-1:sms:password_reset")}, []int{4, 6}); diff != "" {
		t.Errorf("DueShard changed (-got +want):\n%s", diff)
	}
}
