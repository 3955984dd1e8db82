package audittest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// BatchWriter is the part of the DynamoDB API WriteBulk uses.
type BatchWriter interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Bulk shape: each event has BulkNotifications notifications of BulkVersions entries each.
const (
	BulkNotifications = 4
	BulkVersions      = 5
	bulkPerEvent      = BulkNotifications * BulkVersions
)

// BulkEntries returns n entries (rounded up to whole events of 20) of intact hash chains,
// written (written_at) evenly over [start, start+period): events "bulk-<i>", each with 4
// notifications of 5 versions. They stand for a busy period without running the pipeline.
func BulkEntries(n int, start time.Time, period time.Duration) []auditlog.Entry {
	return bulkEntries(n, start, period, 1)
}

// BulkBatchEntries is BulkEntries written as the audit function writes: in batches of
// perBatch entries, each batch's entries sharing one written_at (for WriteBulkLedgered).
func BulkBatchEntries(n int, start time.Time, period time.Duration, perBatch int) []auditlog.Entry {
	return bulkEntries(n, start, period, perBatch)
}

func bulkEntries(n int, start time.Time, period time.Duration, perBatch int) []auditlog.Entry {
	events := (n + bulkPerEvent - 1) / bulkPerEvent
	total := events * bulkPerEvent
	out := make([]auditlog.Entry, 0, total)
	states := []notify.State{notify.StateNone, notify.StateAccepted, notify.StateDispatching, notify.StateSent, notify.StateDelivered, notify.StateDelivered}
	for ev := range events {
		for nn := range BulkNotifications {
			key := fmt.Sprintf("bulk-%06d:sms:password_reset:%d", ev, nn)
			prev := auditlog.GenesisHash
			for v := int64(1); v <= BulkVersions; v++ {
				i := len(out)
				written := start.Add(time.Duration(int64(period) / int64(total) * int64(i/perBatch*perBatch))).UTC()
				at := written.Add(-time.Minute)
				e := auditlog.Entry{EventID: fmt.Sprintf("bulk-%06d", ev), Seq: auditlog.Seq(key, v), NotificationID: fmt.Sprintf("01BULK%06d%d", ev, nn),
					Version: v, At: at, Day: at.Format(auditlog.DayLayout), FromState: states[v-1], ToState: states[v],
					Reason: "BULK", WrittenAt: written, WriteDay: written.Format(auditlog.DayLayout),
					RetainUntil: written.Add(auditlog.DefaultRetention).Unix()}
				e, err := auditlog.Link(e, prev)
				if err != nil {
					panic(err) // prev is always 64 hex digits
				}
				prev = e.Hash
				out = append(out, e)
			}
		}
	}
	return out
}

// WriteBulkLedgered stores entries as the audit writer does: without write_shard (in no
// index), each group of entries that share a written_at listed in ledger items
// (audit.LedgerItems), written with them, each ledger's drop_after its entries' first
// DropAfter (none: a year).
func WriteBulkLedgered(ctx context.Context, db BatchWriter, table string, entries []auditlog.Entry, workers int) error {
	var ledgers []map[string]ddbtypes.AttributeValue
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].WrittenAt.Equal(entries[i].WrittenAt) {
			j++
		}
		drop := entries[i].DropAfter
		if drop == 0 {
			drop = entries[i].WrittenAt.Add(auditlog.DefaultRetention).Unix()
		}
		items, err := auditlog.LedgerItems(entries[i].WrittenAt, entries[i:j], drop)
		if err != nil {
			return fmt.Errorf("audittest.write bulk: %w", err)
		}
		ledgers = append(ledgers, items...)
		i = j
	}
	for i := 0; i < len(ledgers); i += 25 {
		if err := writeItems(ctx, db, table, ledgers[i:min(i+25, len(ledgers))]); err != nil {
			return err
		}
	}
	return writeBulk(ctx, db, table, entries, workers, false)
}

// WriteBulk stores entries in table with BatchWriteItem (with a drop_after when an entry's
// DropAfter is set; none, as before the hot window existed, when it is not), 25 items a request, workers requests
// at once, retrying unprocessed items.
func WriteBulk(ctx context.Context, db BatchWriter, table string, entries []auditlog.Entry, workers int) error {
	return writeBulk(ctx, db, table, entries, workers, true)
}

func writeBulk(ctx context.Context, db BatchWriter, table string, entries []auditlog.Entry, workers int, indexed bool) error {
	batches := make(chan []auditlog.Entry)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range batches {
				if err := writeBatch(ctx, db, table, b, indexed); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := 0; i < len(entries); i += 25 {
		select {
		case batches <- entries[i:min(i+25, len(entries))]:
		case err = <-errs:
			break feed
		}
	}
	close(batches)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

func writeBatch(ctx context.Context, db BatchWriter, table string, es []auditlog.Entry, indexed bool) error {
	items := make([]map[string]ddbtypes.AttributeValue, len(es))
	for i, e := range es {
		item := auditlog.Item(e)
		if !indexed {
			delete(item, tables.AuditWriteShard)
		}
		if e.DropAfter != 0 {
			item[tables.AuditDropAfter] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(e.DropAfter, 10)}
		}
		items[i] = item
	}
	return writeItems(ctx, db, table, items)
}

func writeItems(ctx context.Context, db BatchWriter, table string, items []map[string]ddbtypes.AttributeValue) error {
	reqs := make([]ddbtypes.WriteRequest, len(items))
	for i, item := range items {
		reqs[i] = ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: item}}
	}
	for try := 0; len(reqs) > 0; try++ {
		if try > 20 {
			return fmt.Errorf("audittest.write bulk: %d items still unprocessed", len(reqs))
		}
		out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{table: reqs}})
		if err != nil {
			return fmt.Errorf("audittest.write bulk: %w", err)
		}
		reqs = out.UnprocessedItems[table]
		if len(reqs) > 0 {
			time.Sleep(time.Duration(try+1) * 50 * time.Millisecond)
		}
	}
	return nil
}

var _ BatchWriter = (*dynamodb.Client)(nil)
