package archive

import (
	"context"
	"iter"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Items yields the archive items whose period starts in [from, to) (a zero bound is open), in
// period order, or newest first when forward is false, with a consistent read.
func Items(ctx context.Context, db auditlog.QueryAPI, table string, from, to time.Time, forward bool) iter.Seq2[Item, error] {
	return auditlog.PeriodItems(ctx, db, table, tables.ArchiveEventID, from, to, forward, ItemFromAttributes, "archive.items")
}
