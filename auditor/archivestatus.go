package auditor

import (
	"context"
	"fmt"
	"time"

	"github.com/resetnotify/resetnotify/shared/archive"
	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// ArchivePeriod is one period as `auditctl archive status` lists it.
type ArchivePeriod struct {
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	// State is "archived" or "pending" (digested, not archived yet).
	State   string `json:"state"`
	Entries int64  `json:"entries"`
	Objects int    `json:"objects,omitempty"`
	// Location is the manifest's s3:// address, for an archived period.
	Location   string    `json:"location,omitempty"`
	ArchivedAt time.Time `json:"archived_at,omitzero"`
	// RetainUntil is when the period's archive item and digest may go (the objects' Object
	// Lock retention is counted from their creation, by the bucket's default retention).
	RetainUntil time.Time `json:"retain_until"`
	// Hot is true while the period's entries are still in the table (inside the hot window).
	Hot bool `json:"hot"`
}

// ArchiveStatus is the archive's state over a span.
type ArchiveStatus struct {
	Archived, Pending int
	// OldestPending is the start of the oldest pending period (zero when none is).
	OldestPending time.Time
	Periods       []ArchivePeriod
}

// ReadArchiveStatus lists the digested periods starting in [from, to) (zero: all) with their
// archive items: archived or pending.
func ReadArchiveStatus(ctx context.Context, r *auditlog.Reader, from, to time.Time, hot time.Duration, now time.Time) (ArchiveStatus, error) {
	items := map[time.Time]archive.Item{}
	for it, err := range archive.Items(ctx, r.DB, r.Table, from, to, true) {
		if err != nil {
			return ArchiveStatus{}, fmt.Errorf("auditor.archive status: %w", err)
		}
		items[it.PeriodStart.UTC()] = it
	}
	var st ArchiveStatus
	for d, err := range auditlog.Digests(ctx, r.DB, r.Table, from, to, true) {
		if err != nil {
			return ArchiveStatus{}, fmt.Errorf("auditor.archive status: %w", err)
		}
		p := ArchivePeriod{PeriodStart: d.PeriodStart.UTC(), PeriodEnd: d.PeriodEnd.UTC(), State: "pending", Entries: d.Count,
			RetainUntil: time.Unix(d.RetainUntil, 0).UTC(), Hot: hot <= 0 || now.Before(d.PeriodStart.Add(hot))}
		if it, ok := items[p.PeriodStart]; ok {
			p.State, p.Objects, p.ArchivedAt = "archived", it.Objects, it.ArchivedAt
			p.Location = "s3://" + it.Bucket + "/" + it.ManifestKey
			p.RetainUntil = time.Unix(it.RetainUntil, 0).UTC()
			st.Archived++
		} else {
			st.Pending++
			if st.OldestPending.IsZero() {
				st.OldestPending = p.PeriodStart
			}
		}
		st.Periods = append(st.Periods, p)
	}
	return st, nil
}
