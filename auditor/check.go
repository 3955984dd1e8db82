package auditor

import (
	"crypto/ecdsa"
	"fmt"
	"sort"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
)

// CheckOptions are what Check needs besides the bundle.
type CheckOptions struct {
	// PublicKey verifies the digests' signatures. Without it every digest counts as forged.
	PublicKey *ecdsa.PublicKey
	// Now and Grace tell which periods must be closed by now: those that ended at least
	// Grace ago.
	Now   time.Time
	Grace time.Duration
	// Period is the digest period length, used only when the bundle holds no digest to
	// learn it from.
	Period time.Duration
	// LagBound is how far the digest step may be behind: a period with no digest yet that
	// ended less than Grace + config.DigestSchedule + LagBound ago is late (a warning), not
	// missing. Strict turns the allowance off: an export file must hold the digests of every
	// period of the range that ended Grace ago.
	LagBound time.Duration
	Strict   bool
}

// Report is what Check found.
type Report struct {
	Digests       int `json:"digests"`
	Entries       int `json:"entries"`
	Notifications int `json:"notifications"`
	// Covered counts the entries that a valid signed digest covers and still matches, and
	// whose content still hashes to their hash.
	Covered int `json:"covered"`
	// Open counts the entries written in periods that have not closed yet: not an error.
	Open      int       `json:"open"`
	OpenSince time.Time `json:"open_since,omitzero"`
	// Problems are every finding that makes verification fail, digests first, then entries
	// against the digests, then the hash chains.
	Problems  []Problem  `json:"problems"`
	KnownGaps []KnownGap `json:"known_gaps"`
	// Late are the periods whose digest is not written yet although their grace has passed,
	// while the digest step is still within its lag bound: warnings, not problems.
	Late []Problem `json:"late"`
}

// OK reports whether nothing is wrong (known gaps and open periods are not wrong).
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Check verifies a bundle: every digest's signature and manifest, the chain of digests (each
// names the one before; none missing, none out of order), that every period of the range
// that has ended Grace ago is closed by a digest (or is only late), each digest against the
// entries written in its period (a version 1 digest names entries added, changed or deleted,
// and whole chains deleted or rewritten; a version 2 digest's tree says how many were
// deleted or added, or that some changed), and then each notification's hash chain (Verify).
func Check(b Bundle, o CheckOptions) Report {
	ds := append([]auditlog.Digest(nil), b.Digests...)
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].PeriodStart.Before(ds[j].PeriodStart) })
	r := Report{Digests: len(ds), Entries: len(b.Entries), Notifications: len(auditlog.Chains(b.Entries))}
	valid, problems := checkDigests(ds, b.From, o.PublicKey)
	r.Problems = append(r.Problems, problems...)
	r.Problems = append(r.Problems, checkCoverage(b, ds, o, &r)...)
	r.Problems = append(r.Problems, checkManifests(b, ds, valid, &r)...)
	r.Problems = append(r.Problems, inPeriods(Verify(b.Entries), b.Entries, ds)...)
	r.KnownGaps = KnownGaps(b.Entries)
	return r
}

// inPeriods names, on each chain problem, the digest period its entry was written in, so a
// finding in an exported or archived period says which period to look at.
func inPeriods(ps []Problem, entries []auditlog.Entry, ds []auditlog.Digest) []Problem {
	written := map[[2]string]time.Time{}
	for _, e := range entries {
		written[[2]string{e.NotificationID, e.Seq}] = e.WrittenAt
	}
	for i, p := range ps {
		if d := digestOf(ds, written[[2]string{p.NotificationID, p.Seq}]); d != nil && p.Seq != "" && p.Period == "" {
			ps[i].Period = d.Period()
		}
	}
	return ps
}

// digestProblem is a finding about a period rather than an entry.
func digestProblem(period, format string, args ...any) Problem {
	return Problem{Period: period, What: fmt.Sprintf(format, args...)}
}

// checkDigests checks each digest's signature and manifest and the links between digests.
// It returns which digests can be trusted.
func checkDigests(ds []auditlog.Digest, from time.Time, pub *ecdsa.PublicKey) ([]bool, []Problem) {
	var out []Problem
	valid := make([]bool, len(ds))
	for i, d := range ds {
		switch {
		case !VerifySignature(pub, d):
			out = append(out, digestProblem(d.Period(), "digest forged or altered: its signature does not verify with the public key"))
		case !ManifestIntact(d):
			out = append(out, digestProblem(d.Period(), "digest altered: the entries it lists are not the ones its signed entries hash and count name"))
		default:
			valid[i] = true
		}
	}
	for i, d := range ds {
		if i == 0 {
			if d.PrevSignature != "" && d.PeriodStart.After(from) {
				out = append(out, digestProblem(auditlog.PeriodName(d.PrevPeriodStart, d.PeriodStart),
					"digest missing: the digest of the period starting %s, which the digest of %s names as its predecessor, is gone",
					d.PrevPeriodStart.Format(time.RFC3339), d.Period()))
			}
			continue
		}
		p := ds[i-1]
		switch {
		case d.PeriodStart.After(p.PeriodEnd):
			out = append(out, digestProblem(auditlog.PeriodName(p.PeriodEnd, d.PeriodStart), "digest missing: no digest covers this span between two signed digests"))
		case d.PeriodStart.Before(p.PeriodEnd):
			out = append(out, digestProblem(d.Period(), "digest out of order: its period overlaps that of the digest of %s", p.Period()))
		case !d.PrevPeriodStart.Equal(p.PeriodStart) || d.PrevSignature != p.Signature:
			out = append(out, digestProblem(d.Period(), "digest out of order: it does not name the digest of %s, the one before it, as its predecessor (it was replaced, or one was removed and the chain re-signed)", p.Period()))
		}
	}
	return valid, out
}

// checkCoverage finds the periods of the range that have ended Grace ago but that no digest
// closes, and counts the entries of periods still open.
func checkCoverage(b Bundle, ds []auditlog.Digest, o CheckOptions, r *Report) []Problem {
	period := digestPeriod(ds, o)
	closedUntil := o.Now.Add(-o.Grace).Truncate(period)
	coverFrom, _ := b.CoverSpan()
	uncovered, legacy := classifyEntries(b, ds, period, closedUntil, r)
	var out []Problem
	if legacy > 0 {
		out = append(out, digestProblem("", "%d entries have no written_at: they were written before digests existed and no digest covers them", legacy))
	}
	// Every closed period of the range after the last digest is missing its digest, with or
	// without entries: the digest step closes empty periods too.
	last := coverFrom.Truncate(period)
	if n := len(ds); n > 0 {
		last = maxTime(last, ds[n-1].PeriodEnd)
	}
	if end := minTime(b.To, closedUntil); last.Before(end) {
		missingUntil := closedUntil
		if !o.Strict {
			missingUntil = o.Now.Add(-o.Grace - config.DigestSchedule - o.LagBound).Truncate(period)
		}
		mid := maxTime(last, minTime(end, missingUntil))
		if last.Before(mid) {
			out = append(out, digestProblem(auditlog.PeriodName(last, mid), missingSentence(o), o.Grace, takeUncovered(uncovered, last, mid)))
		}
		if mid.Before(end) {
			r.Late = append(r.Late, digestProblem(auditlog.PeriodName(mid, end), "digest late: no signed digest closes these periods yet, but they ended less than the grace (%s) plus the digest schedule (%s) plus the lag bound (%s) ago: the digest step is behind, which is not a tamper finding (%d entries written in them are not covered yet)",
				o.Grace, config.DigestSchedule, o.LagBound, takeUncovered(uncovered, mid, end)))
		}
	}
	starts := make([]time.Time, 0, len(uncovered))
	for t := range uncovered {
		starts = append(starts, t)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for _, t := range starts {
		out = append(out, digestProblem(auditlog.PeriodName(t, t.Add(period)), "entries not covered: %d entries were written in this closed period, which no signed digest covers", uncovered[t]))
	}
	return out
}

// missingSentence says that periods lack their digest; the offline (Strict) form says the
// file does not cover the range.
func missingSentence(o CheckOptions) string {
	if o.Strict {
		return "digest missing: the file holds no signed digest for these periods, which ended more than %s ago, so it does not cover the range asked for (cut short, or exported before their digests were written) (%d entries written in them are not covered)"
	}
	return "digest missing: these periods ended more than %s ago but no signed digest closes them (%d entries written in them are not covered)"
}

// takeUncovered removes from uncovered the periods starting in [from, to) and returns how
// many entries they held.
func takeUncovered(uncovered map[time.Time]int, from, to time.Time) int {
	n := 0
	for t, c := range uncovered {
		if !t.Before(from) && t.Before(to) {
			n += c
			delete(uncovered, t)
		}
	}
	return n
}

// digestPeriod is the length of a digest's period: the last digest's, else the option's, else
// config.DefaultDigestPeriod.
func digestPeriod(ds []auditlog.Digest, o CheckOptions) time.Duration {
	period := o.Period
	if n := len(ds); n > 0 {
		period = ds[n-1].PeriodEnd.Sub(ds[n-1].PeriodStart)
	}
	if period <= 0 {
		period = config.DefaultDigestPeriod
	}
	return period
}

// classifyEntries sorts the bundle's entries by coverage. It returns the entries of closed
// periods no digest covers, counted by period start, and the entries in the range that have
// no written_at (from before digests); entries of periods still open are counted in r.
func classifyEntries(b Bundle, ds []auditlog.Digest, period time.Duration, closedUntil time.Time, r *Report) (map[time.Time]int, int) {
	coverFrom, coverTo := b.CoverSpan()
	covers := func(t time.Time) bool {
		for _, d := range ds {
			if !t.Before(d.PeriodStart) && t.Before(d.PeriodEnd) {
				return true
			}
		}
		return false
	}
	uncovered := map[time.Time]int{}
	legacy := 0
	for _, e := range b.Entries {
		switch {
		case e.WrittenAt.IsZero():
			if !e.At.Before(b.From) && e.At.Before(b.To) {
				legacy++
			}
		case e.WrittenAt.Before(coverFrom) || !e.WrittenAt.Before(coverTo) || covers(e.WrittenAt):
		case !e.WrittenAt.Before(closedUntil):
			r.Open++
			if r.OpenSince.IsZero() || e.WrittenAt.Before(r.OpenSince) {
				r.OpenSince = e.WrittenAt
			}
		default:
			uncovered[e.WrittenAt.Truncate(period)]++
		}
	}
	return uncovered, legacy
}

// tally counts, per notification, what the digests signed and what became of it.
type tally struct {
	eventID, key             string
	signed, deleted, changed int
	problems                 []Problem
}

// checkManifests recomputes every valid digest that overlaps the range from the entries
// written in its period and names the differences: tree digests' first, then manifest
// digests' by notification.
func checkManifests(b Bundle, ds []auditlog.Digest, valid []bool, r *Report) []Problem {
	ts := &tallies{by: map[string]*tally{}}
	var out []Problem
	for i, d := range ds {
		switch {
		case !valid[i] || !b.overlaps(d):
		case d.Version == auditlog.DigestVersionManifest:
			compareManifest(b, d, ts, r)
		default:
			out = append(out, compareTree(b, d, r)...)
		}
	}
	present := map[string]bool{}
	for _, e := range b.Entries {
		present[e.NotificationID] = true
	}
	return append(out, ts.problems(present)...)
}

// compareTree rebuilds the Merkle tree of the entries written in a version 2 digest's period
// and compares its size and root with the signed ones. The tree cannot name the entry that
// differs; the hash chains (Verify) name an edited, removed or reordered entry, and the
// counts tell deletions (a whole chain deleted shows only here) from additions.
func compareTree(b Bundle, d auditlog.Digest, r *Report) []Problem {
	var tree auditlog.PeriodTree
	var in []auditlog.Entry
	for _, e := range b.Entries {
		if !e.WrittenAt.Before(d.PeriodStart) && e.WrittenAt.Before(d.PeriodEnd) {
			tree.Add(auditlog.LineOf(e))
			in = append(in, e)
		}
	}
	n := tree.Size()
	switch {
	case n == d.Count && tree.Root() == d.Root:
		for _, e := range in {
			if contentIntact(e) {
				r.Covered++
			}
		}
		return nil
	case n < d.Count:
		return []Problem{digestProblem(d.Period(), "entries deleted: the signed digest of this period covers %d entries, only %d written in it are left (%d deleted)", d.Count, n, d.Count-n)}
	case n > d.Count:
		return []Problem{digestProblem(d.Period(), "entries added: %d entries are written in this period, its signed digest covers %d (%d added after it was signed)", n, d.Count, n-d.Count)}
	}
	return []Problem{digestProblem(d.Period(), "entries changed: the %d entries written in this period are not the ones its signed digest covers (the Merkle root differs): an entry was edited, replaced or moved", n)}
}

// tallies keeps a tally per notification, in the order they were first seen.
type tallies struct {
	by    map[string]*tally
	order []string
}

func (ts *tallies) of(nid, eventID, seq string) *tally {
	if ts.by[nid] == nil {
		ts.by[nid] = &tally{eventID: eventID, key: auditlog.Entry{Seq: seq}.IdempotencyKey()}
		ts.order = append(ts.order, nid)
	}
	return ts.by[nid]
}

// compareManifest compares d's manifest with the entries written in d's period: a line with
// no entry was deleted, one with another hash was changed, and an entry no line lists was
// added. Intact entries are counted in r.Covered.
func compareManifest(b Bundle, d auditlog.Digest, ts *tallies, r *Report) {
	current := map[string]auditlog.Entry{}
	for _, e := range b.Entries {
		if !e.WrittenAt.Before(d.PeriodStart) && e.WrittenAt.Before(d.PeriodEnd) {
			current[auditlog.LineOf(e).Key()] = e
		}
	}
	for _, l := range d.Manifest {
		c := ts.of(l.NotificationID, l.EventID, l.Seq)
		c.signed++
		e, ok := current[l.Key()]
		delete(current, l.Key())
		switch {
		case !ok:
			c.deleted++
			c.problems = append(c.problems, Problem{NotificationID: l.NotificationID, Seq: l.Seq, Period: d.Period(),
				What: fmt.Sprintf("entry deleted: the signed digest of %s lists it (hash %s) but the audit table no longer holds it", d.Period(), shortHash(l.Hash))})
		case e.Hash != l.Hash:
			c.changed++
			c.problems = append(c.problems, Problem{NotificationID: l.NotificationID, Seq: l.Seq, Period: d.Period(),
				What: fmt.Sprintf("entry changed: its hash is %s, the signed digest of %s has %s", shortHash(e.Hash), d.Period(), shortHash(l.Hash))})
		case contentIntact(e):
			r.Covered++
		}
	}
	for _, e := range auditlog.Sorted(mapValues(current)) {
		c := ts.of(e.NotificationID, e.EventID, e.Seq)
		c.problems = append(c.problems, Problem{NotificationID: e.NotificationID, Seq: e.Seq, Period: d.Period(),
			What: fmt.Sprintf("entry added: its written_at lies in %s, but the signed digest of that period does not list it", d.Period())})
	}
}

// problems reports each notification's problems, folded into one when its whole signed chain
// was deleted (and none of it is present) or rewritten.
func (ts *tallies) problems(present map[string]bool) []Problem {
	var out []Problem
	for _, nid := range ts.order {
		c := ts.by[nid]
		switch {
		case c.signed > 0 && c.deleted == c.signed && !present[nid]:
			out = append(out, Problem{NotificationID: nid, What: fmt.Sprintf("whole chain deleted: the %d entries of this notification (event %s, idempotency key %s) that signed digests list are all gone from the audit table", c.signed, c.eventID, c.key)})
		case c.signed > 0 && c.changed == c.signed:
			out = append(out, Problem{NotificationID: nid, What: fmt.Sprintf("whole chain rewritten: all %d entries of this notification (event %s) that signed digests cover differ from what was signed", c.signed, c.eventID)})
		default:
			out = append(out, c.problems...)
		}
	}
	return out
}

func mapValues(m map[string]auditlog.Entry) []auditlog.Entry {
	out := make([]auditlog.Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	return out
}
