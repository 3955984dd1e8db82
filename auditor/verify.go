// Package auditor is what an auditor runs over the audit trail, apart from what the Lambdas
// link: Verify checks hash chains, Check a bundle (digests, their signatures and coverage, and
// the chains), BuildProof and CheckProof an event's inclusion proofs; the bundle and proof
// files, an event's evidence, digest coverage and the safety margin's report. The formats it
// reads (entries, digests, the period's tree) are package audit's. auditor/auditctl is its
// command line; the benchmarks use it too. No function links it (layout_test.go).
package auditor

import (
	"fmt"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// Problem is one broken or missing link found by Verify.
type Problem struct {
	NotificationID string `json:"notification_id,omitempty"`
	// Seq is the entry where the problem shows: the edited entry, or the first entry after a
	// gap or a broken link.
	Seq string `json:"seq,omitempty"`
	// Period names the digest period of a problem found against the digests.
	Period string `json:"period,omitempty"`
	What   string `json:"what"`
}

// String names the notification and the seq (and the period the entry was written in, when
// known), or the period, and what is wrong.
func (p Problem) String() string {
	switch {
	case p.NotificationID != "" && p.Seq != "" && p.Period != "":
		return fmt.Sprintf("notification %s, seq %s: %s (written in period %s)", p.NotificationID, p.Seq, p.What, p.Period)
	case p.NotificationID != "" && p.Seq != "":
		return fmt.Sprintf("notification %s, seq %s: %s", p.NotificationID, p.Seq, p.What)
	case p.NotificationID != "":
		return fmt.Sprintf("notification %s: %s", p.NotificationID, p.What)
	case p.Period != "":
		return fmt.Sprintf("period %s: %s", p.Period, p.What)
	}
	return p.What
}

// Verify recomputes every chain in entries and checks it. It returns the problems in chain
// order, so the first one is the first broken or missing link; none means every chain is
// intact: each entry's hash matches its content, versions run from 1 without gaps or
// repeats, each prev_hash is the previous entry's hash (the genesis value for version 1),
// each from_state is the previous to_state, nothing follows a purge, and no item holds an
// attribute outside the allow-list. A chain must be complete: pass every entry of each
// notification (Reader.Timeline returns them). Times are not compared: transitions and purges
// are stamped by different clocks, and the hash already covers every at.
//
// Two kinds of late link are accepted. An entry that the writer chained from the genesis
// value because its predecessor was missing (prev_missing) is intact when that predecessor
// was later written by a replay (replayed) or stands as a gap entry, after it. A gap entry
// (reconstructed) stands for versions gap_from to version; it is not a problem, but it is a
// known gap that KnownGaps reports.
func Verify(entries []auditlog.Entry) []Problem {
	var out []Problem
	for _, c := range auditlog.Chains(entries) {
		out = append(out, VerifyChain(c)...)
	}
	return out
}

// KnownGap is a gap entry: versions whose transitions were lost with a stream batch that
// could no longer be replayed, recorded as such.
type KnownGap struct {
	NotificationID string    `json:"notification_id"`
	EventID        string    `json:"event_id"`
	Seq            string    `json:"seq"`
	FromVersion    int64     `json:"from_version"`
	ToVersion      int64     `json:"to_version"`
	WrittenAt      time.Time `json:"written_at"`
}

// String says which versions of which notification are lost.
func (g KnownGap) String() string {
	return fmt.Sprintf("notification %s, seq %s: known gap: the transitions of %s were lost with a stream batch and could not be replayed; recorded from the notification's record at %s",
		g.NotificationID, g.Seq, versions(g.FromVersion, g.ToVersion), g.WrittenAt.UTC().Format(time.RFC3339))
}

// KnownGaps returns the gap entries among entries, in timeline order.
func KnownGaps(entries []auditlog.Entry) []KnownGap {
	var out []KnownGap
	for _, e := range auditlog.Sorted(entries) {
		if e.Gap() {
			out = append(out, KnownGap{NotificationID: e.NotificationID, EventID: e.EventID, Seq: e.Seq,
				FromVersion: e.GapFrom, ToVersion: e.Version, WrittenAt: e.WrittenAt})
		}
	}
	return out
}

// VerifyChain checks one chain as Verify does.
func VerifyChain(c auditlog.Chain) []Problem {
	var out []Problem
	add := func(e auditlog.Entry, format string, args ...any) {
		out = append(out, Problem{NotificationID: c.NotificationID, Seq: e.Seq, What: fmt.Sprintf(format, args...)})
	}
	var prev *auditlog.Entry
	for i := range c.Entries {
		e := c.Entries[i]
		checkEntry(e, add)
		first := e.Version
		if e.Gap() {
			first = e.GapFrom
		}
		if prev == nil {
			switch {
			case first != 1 || e.Purged():
				what := fmt.Sprintf("chain starts at version %d: %s missing", first, versions(1, first-1))
				if e.Purged() {
					what = fmt.Sprintf("chain holds only a purge: %s missing", versions(1, e.Version))
				}
				if e.PrevMissing {
					what += " (the writer found no previous entry)"
				}
				add(e, "%s", what)
			case e.PrevHash != auditlog.GenesisHash:
				add(e, "first entry's prev_hash is not the genesis value")
			case e.FromState != "" && !e.Gap():
				add(e, "first entry starts from %s instead of ∅", e.FromState)
			}
			prev = &c.Entries[i]
			continue
		}
		checkLink(*prev, e, first, add)
		prev = &c.Entries[i]
	}
	return out
}

// checkEntry checks what one entry says about itself.
func checkEntry(e auditlog.Entry, add func(auditlog.Entry, string, ...any)) {
	if len(e.Unexpected) > 0 {
		add(e, "attributes outside the allow-list: %s", strings.Join(e.Unexpected, ", "))
	}
	if h, err := auditlog.ComputeHash(e.PrevHash, e); err != nil {
		add(e, "prev_hash is not 64 hex digits")
	} else if h != e.Hash {
		add(e, "hash does not match the entry's content: the entry was edited")
	}
	if !auditlog.SeqMatches(e) {
		kind := ""
		switch {
		case e.Purged():
			kind = " (purged)"
		case e.Gap():
			kind = " (gap)"
		}
		add(e, "seq does not name version %d%s: the entry was moved", e.Version, kind)
	}
	if e.Day != e.At.UTC().Format(auditlog.DayLayout) {
		add(e, "day %s is not the date of at", e.Day)
	}
	if e.Gap() && (!e.Reconstructed || e.GapFrom < 1 || e.GapFrom > e.Version) {
		add(e, "gap entry does not name the versions it stands for")
	}
}

// checkLink checks e against the entry before it in its chain; first is the first version e
// stands for.
func checkLink(prev, e auditlog.Entry, first int64, add func(auditlog.Entry, string, ...any)) {
	want := prev.Version + 1
	if e.Purged() {
		want = prev.Version
	}
	switch {
	case prev.Purged():
		add(e, "entry after the purge at seq %s", prev.Seq)
		return
	case e.Version == prev.Version && !e.Purged():
		add(e, "second entry for version %d", e.Version)
		return
	case first > want:
		last := first - 1
		if e.Purged() {
			last = e.Version
		}
		add(e, "%s missing after seq %s", versions(prev.Version+1, last), prev.Seq)
		return
	case first < want:
		add(e, "gap entry stands for %s, already recorded up to seq %s", versions(first, e.Version), prev.Seq)
		return
	}
	// A predecessor written after e, by a replay or as a gap entry, fills the hole that e's
	// writer found.
	filled := e.PrevMissing && e.PrevHash == auditlog.GenesisHash && (prev.Replayed || prev.Gap()) && prev.WrittenAt.After(e.WrittenAt)
	switch {
	case filled:
	case e.PrevMissing:
		add(e, "marked prev_missing: seq %s was written after it", prev.Seq)
		if e.PrevHash != prev.Hash {
			add(e, "prev_hash does not match the hash of seq %s: an entry was replaced, removed or reordered", prev.Seq)
		}
	case e.PrevHash != prev.Hash:
		add(e, "prev_hash does not match the hash of seq %s: an entry was replaced, removed or reordered", prev.Seq)
	}
	// A gap entry's own state is unknown, so nothing is compared across it.
	if e.FromState != prev.ToState && !prev.Gap() && !e.Gap() {
		add(e, "from_state %s does not follow to_state %s of seq %s", e.FromState, prev.ToState, prev.Seq)
	}
}

func versions(from, to int64) string {
	if from == to {
		return fmt.Sprintf("version %d", from)
	}
	return fmt.Sprintf("versions %d–%d", from, to)
}
