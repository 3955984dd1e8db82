package auditor

import (
	"context"
	"fmt"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// Bundle is everything verify needs for the range [From, To): the digests whose periods
// overlap it, with the digest before the first of them (to check its link), and every entry
// of every notification that has an entry written in those digests' periods, written in the
// range, or whose transition (at) lies in the range. `auditctl export` writes a bundle and
// `auditctl verify --input` reads it back, so offline verification sees what online
// verification sees.
type Bundle struct {
	From, To time.Time
	// Digests are in period order.
	Digests []auditlog.Digest
	// Entries are in timeline order.
	Entries []auditlog.Entry
}

// Collect reads the bundle of [from, to) from the audit table r reads.
func Collect(ctx context.Context, r *auditlog.Reader, from, to time.Time) (Bundle, error) {
	return CollectTrail(ctx, &Trail{Reader: r}, from, to)
}

// CollectTrail reads the bundle of [from, to) from t: the table, and the archive for the cold
// periods (the whole chains of the notifications touched are searched for within
// TimelineSpan of the cover span). The archived periods read are checked against the digests
// (Trail.CheckChain); what is wrong is in t.Problems.
func CollectTrail(ctx context.Context, t *Trail, from, to time.Time) (Bundle, error) {
	r := t.Reader
	from, to = from.UTC(), to.UTC()
	b := Bundle{From: from, To: to}
	var err error
	if b.Digests, err = DigestsCovering(ctx, r.DB, r.Table, from, to); err != nil {
		return Bundle{}, fmt.Errorf("auditor.collect: %w", err)
	}
	coverFrom, coverTo := b.CoverSpan()
	want := map[string]map[string]bool{} // event ID → notification IDs
	var events []string
	note := func(e auditlog.Entry) {
		if want[e.EventID] == nil {
			want[e.EventID] = map[string]bool{}
			events = append(events, e.EventID)
		}
		want[e.EventID][e.NotificationID] = true
	}
	for e, err := range t.WrittenIn(ctx, coverFrom, coverTo) {
		if err != nil {
			return Bundle{}, fmt.Errorf("auditor.collect: %w", err)
		}
		note(e)
	}
	for e, err := range t.Range(ctx, from, to) {
		if err != nil {
			return Bundle{}, fmt.Errorf("auditor.collect: %w", err)
		}
		note(e)
	}
	for _, ev := range events {
		es, err := t.Timeline(ctx, ev, coverFrom.Add(-TimelineSpan), coverTo.Add(TimelineSpan))
		if err != nil {
			return Bundle{}, fmt.Errorf("auditor.collect: %w", err)
		}
		for _, e := range es {
			if want[ev][e.NotificationID] {
				b.Entries = append(b.Entries, e)
			}
		}
	}
	b.Entries = auditlog.Sorted(b.Entries)
	t.CheckChain(b.Digests)
	return b, nil
}

// CoverSpan returns the span whose entries the bundle's digests are checked against: the
// range, widened to the whole periods of the digests that overlap it.
func (b Bundle) CoverSpan() (from, to time.Time) {
	from, to = b.From, b.To
	for _, d := range b.Digests {
		if b.overlaps(d) {
			from, to = minTime(from, d.PeriodStart), maxTime(to, d.PeriodEnd)
		}
	}
	return from, to
}

func (b Bundle) overlaps(d auditlog.Digest) bool {
	return d.PeriodEnd.After(b.From) && d.PeriodStart.Before(b.To)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
