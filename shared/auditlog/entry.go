package auditlog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// StatePurged is the to_state of an entry recording that the notification's record was
// removed from the notifications table. It is not a state of the domain: no record is ever in
// it.
const StatePurged notify.State = "purged"

// The reasons of purged entries. They complete notify's closed list for the audit trail only.
const (
	// ReasonPurgedTTL means DynamoDB's TTL process removed the record after its status grace.
	ReasonPurgedTTL notify.Reason = "PURGED_TTL"
	// ReasonPurgedManual means something other than TTL removed the record; purged_by names
	// the principal when the stream record does.
	ReasonPurgedManual notify.Reason = "PURGED_MANUAL"
)

// StateGap is the to_state of a gap entry: the transitions it stands for were lost with a
// stream batch that the stream no longer held when it was replayed. Like StatePurged, no
// record is ever in it.
const StateGap notify.State = "gap"

// ReasonRecordsLost is the reason of a gap entry.
const ReasonRecordsLost notify.Reason = "STREAM_RECORDS_LOST"

// GenesisHash is the prev_hash of the first entry of every chain: 32 zero bytes in hex.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// DayLayout is the layout of an entry's day.
const DayLayout = "2006-01-02"

// purgedSuffix ends the seq of a purged entry, gapSuffix that of a gap entry.
const (
	purgedSuffix = "#purged"
	gapSuffix    = "#gap"
)

// Entry is one audit item: one transition of one notification, redacted. It holds only the
// allow-listed fields of docs/design.md; there is no field that could carry a phone number, a
// param, a message body or a credential.
type Entry struct {
	EventID           string
	Seq               string
	NotificationID    string
	Version           int64
	At                time.Time
	Day               string
	FromState         notify.State
	ToState           notify.State
	Reason            notify.Reason
	Attempt           int64
	Provider          string
	ProviderMessageID string
	DestinationFP     string
	PolicyVersion     string
	SafetyMarginMS    int64
	// Actor is the function invocation that made the transition, copied from the record's
	// actor: "<function>:<version>/<request ID>". Empty on purged entries (PurgedBy names who
	// removed the record) and on records written before actors were recorded.
	Actor string
	// WrittenBy is the audit function invocation that wrote the entry, in the same form.
	WrittenBy string
	// PurgedBy is the principal that removed the record, on purged entries when known.
	PurgedBy string
	// PrevMissing is true when the previous entry was absent at writing time and the entry was
	// chained from GenesisHash instead.
	PrevMissing bool
	// RetainUntil is the audit table TTL, in epoch seconds.
	RetainUntil int64
	// WrittenAt is when the writer stored the entry, by its own clock, and WriteDay its UTC
	// date. The signed digest of the period holding WrittenAt covers the entry, however late
	// after At it was written.
	WrittenAt time.Time
	WriteDay  string
	// Replayed is true when the entry was written by the replay of a lost stream batch.
	Replayed bool
	// Reconstructed is true on a gap entry (ToState StateGap): the transitions of versions
	// GapFrom to Version were lost; the entry's other fields come from the notification's
	// record as it was when the gap was found.
	Reconstructed bool
	GapFrom       int64
	PrevHash      string
	Hash          string
	// DropAfter is the stored item's TTL (drop_after, epoch seconds; 0 when the item has
	// none, as entries written before the hot window existed). Not a field: neither hashed
	// nor exported; FromItem reads it, nothing else sets it.
	DropAfter int64
	// Unexpected names the attributes of a stored item that are outside the allow-list. Their
	// values are never read, so a stray secret cannot leak through a reader.
	Unexpected []string
}

// IdempotencyKey returns the notification's idempotency key, the part of the seq before the
// first "#".
func (e Entry) IdempotencyKey() string {
	k, _, _ := strings.Cut(e.Seq, "#")
	return k
}

// Purged reports whether e records the removal of the record.
func (e Entry) Purged() bool { return e.ToState == StatePurged }

// Gap reports whether e is a reconstructed gap entry.
func (e Entry) Gap() bool { return e.ToState == StateGap }

// Seq returns the seq of version of the notification with idempotency key key.
func Seq(key string, version int64) string { return fmt.Sprintf("%s#%010d", key, version) }

// seqFor returns the seq of an entry: plain, or disambiguated by the notification ID when the
// plain one belongs to an earlier notification of the same key, then suffix ("" for a
// transition, purgedSuffix or gapSuffix).
func seqFor(key string, version int64, suffix string, notificationID string, disambiguate bool) string {
	s := Seq(key, version)
	if disambiguate {
		s += "#" + notificationID
	}
	return s + suffix
}

// suffixOf returns the seq suffix of e's kind of entry.
func suffixOf(e Entry) string {
	switch {
	case e.Purged():
		return purgedSuffix
	case e.Gap():
		return gapSuffix
	}
	return ""
}

// kind is how a field is stored in DynamoDB.
type kind int

const (
	kindString kind = iota
	kindNumber
	kindBool
)

// field is one allow-listed attribute: its stored name and type, and how it maps to Entry.
// The list below is the single source of the item encoding, the canonical hash encoding and
// the CLI's JSON and CSV columns.
type field struct {
	name string
	kind kind
	// key fields and the hash fields are always stored; others are omitted when empty.
	always bool
	get    func(*Entry) string
	set    func(*Entry, string) error
}

func str(p func(*Entry) *string) (func(*Entry) string, func(*Entry, string) error) {
	return func(e *Entry) string { return *p(e) },
		func(e *Entry, v string) error { *p(e) = v; return nil }
}

func num(p func(*Entry) *int64) (func(*Entry) string, func(*Entry, string) error) {
	return func(e *Entry) string { return strconv.FormatInt(*p(e), 10) },
		func(e *Entry, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return errors.New("not an integer")
			}
			*p(e) = n
			return nil
		}
}

func mk(name string, k kind, always bool, get func(*Entry) string, set func(*Entry, string) error) field {
	return field{name: name, kind: k, always: always, get: get, set: set}
}

// fields lists the allow-listed attributes in canonical order; prev_hash and hash come last
// and are not part of the canonical encoding.
var fields = func() []field {
	f := func(name string, always bool, p func(*Entry) *string) field {
		g, s := str(p)
		return mk(name, kindString, always, g, s)
	}
	n := func(name string, p func(*Entry) *int64) field {
		g, s := num(p)
		return mk(name, kindNumber, true, g, s)
	}
	b := func(name string, p func(*Entry) *bool) field {
		return mk(name, kindBool, false,
			func(e *Entry) string { return strconv.FormatBool(*p(e)) },
			func(e *Entry, v string) error {
				x, err := strconv.ParseBool(v)
				if err != nil {
					return errors.New("not a boolean")
				}
				*p(e) = x
				return nil
			})
	}
	return []field{
		f(tables.AuditEventID, true, func(e *Entry) *string { return &e.EventID }),
		f(tables.AuditSeq, true, func(e *Entry) *string { return &e.Seq }),
		f(tables.AuditNotificationID, true, func(e *Entry) *string { return &e.NotificationID }),
		n(tables.AuditVersion, func(e *Entry) *int64 { return &e.Version }),
		mk(tables.AuditAt, kindString, true,
			func(e *Entry) string { return tables.FormatTime(e.At) },
			func(e *Entry, v string) error {
				t, err := tables.ParseTime(v)
				if err != nil {
					return errors.New("not an RFC 3339 time")
				}
				e.At = t
				return nil
			}),
		f(tables.AuditDay, true, func(e *Entry) *string { return &e.Day }),
		mk(tables.AuditFromState, kindString, false,
			func(e *Entry) string { return string(e.FromState) },
			func(e *Entry, v string) error { e.FromState = notify.State(v); return nil }),
		mk(tables.AuditToState, kindString, true,
			func(e *Entry) string { return string(e.ToState) },
			func(e *Entry, v string) error { e.ToState = notify.State(v); return nil }),
		mk(tables.AuditReason, kindString, true,
			func(e *Entry) string { return string(e.Reason) },
			func(e *Entry, v string) error { e.Reason = notify.Reason(v); return nil }),
		n(tables.AuditAttempt, func(e *Entry) *int64 { return &e.Attempt }),
		f(tables.AuditProvider, false, func(e *Entry) *string { return &e.Provider }),
		f(tables.AuditProviderMessageID, false, func(e *Entry) *string { return &e.ProviderMessageID }),
		f(tables.AuditDestinationFP, false, func(e *Entry) *string { return &e.DestinationFP }),
		f(tables.AuditPolicyVersion, false, func(e *Entry) *string { return &e.PolicyVersion }),
		n(tables.AuditSafetyMarginMS, func(e *Entry) *int64 { return &e.SafetyMarginMS }),
		f(tables.AuditActor, false, func(e *Entry) *string { return &e.Actor }),
		f(tables.AuditWrittenBy, false, func(e *Entry) *string { return &e.WrittenBy }),
		f(tables.AuditPurgedBy, false, func(e *Entry) *string { return &e.PurgedBy }),
		b(tables.AuditPrevMissing, func(e *Entry) *bool { return &e.PrevMissing }),
		n(tables.AuditRetainUntil, func(e *Entry) *int64 { return &e.RetainUntil }),
		mk(tables.AuditWrittenAt, kindString, false,
			func(e *Entry) string { return tables.FormatTime(e.WrittenAt) },
			func(e *Entry, v string) error {
				t, err := tables.ParseTime(v)
				if err != nil {
					return errors.New("not an RFC 3339 time")
				}
				e.WrittenAt = t
				return nil
			}),
		f(tables.AuditWriteDay, false, func(e *Entry) *string { return &e.WriteDay }),
		b(tables.AuditReplayed, func(e *Entry) *bool { return &e.Replayed }),
		b(tables.AuditReconstructed, func(e *Entry) *bool { return &e.Reconstructed }),
		func() field {
			g, s := num(func(e *Entry) *int64 { return &e.GapFrom })
			return mk(tables.AuditGapFrom, kindNumber, false, g, s)
		}(),
		f(tables.AuditPrevHash, true, func(e *Entry) *string { return &e.PrevHash }),
		f(tables.AuditHash, true, func(e *Entry) *string { return &e.Hash }),
	}
}()

// canonicalFields is the number of leading fields in the canonical encoding: all but
// prev_hash and hash.
var canonicalFields = len(fields) - 2

// Column is one named value of an entry as the CLI prints it.
type Column struct {
	Name string
	// Value is the canonical text of the value.
	Value string
	// Number and Bool tell JSON writers to print Value unquoted.
	Number, Bool bool
}

// ColumnNames returns the names of an entry's columns in canonical order, prev_hash and hash
// last. They are the audit table's attribute names.
func ColumnNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

// Columns returns e's values in the order of ColumnNames.
func (e Entry) Columns() []Column {
	out := make([]Column, len(fields))
	for i, f := range fields {
		out[i] = Column{Name: f.name, Value: f.get(&e), Number: f.kind == kindNumber, Bool: f.kind == kindBool}
	}
	return out
}

// SeqMatches reports whether e's seq names e's version and its kind of entry (a purge, a gap
// or a transition): an entry moved under another seq does not.
func SeqMatches(e Entry) bool {
	v, suffix, ok := parseSeq(e.Seq)
	return ok && v == e.Version && suffix == suffixOf(e)
}

// parseSeq returns the version a seq names and its suffix (purgedSuffix, gapSuffix or "").
func parseSeq(seq string) (version int64, suffix string, ok bool) {
	parts := strings.Split(seq, "#")
	if len(parts) < 2 || len(parts) > 4 || len(parts[1]) != 10 {
		return 0, "", false
	}
	v, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return 0, "", false
	}
	if last := "#" + parts[len(parts)-1]; len(parts) > 2 && (last == purgedSuffix || last == gapSuffix) {
		suffix = last
	}
	return v, suffix, true
}
