package tables

import (
	"fmt"
	"hash/fnv"
	"time"
)

// TimeLayout is how every timestamp is stored: RFC 3339 in UTC with exactly nine fraction
// digits, so that the lexical order of the strings is their time order. The due index sorts
// on it and the sweeper and exports compare with it.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// FormatTime returns t in TimeLayout, converted to UTC. It returns "" for the zero time, which
// callers store as an absent attribute.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// ParseTime parses a timestamp stored with FormatTime. It also accepts any RFC 3339 time so
// that a hand-written item does not break a reader. It returns the zero time for "".
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("tables.parse time: %w", err)
	}
	return t.UTC(), nil
}

// DueShard returns the due-index partition of the record with idempotency key key: the
// FNV-1a 32-bit hash of the key modulo DueShards. It never changes for a key, so a record stays
// in one partition of the index for its whole life.
func DueShard(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // hash.Hash.Write never fails
	return int(h.Sum32() % DueShards)
}
