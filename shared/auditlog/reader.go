package auditlog

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// QueryAPI is the part of the DynamoDB API the reader uses; the auditor's read-only role
// allows it. BatchGetItem reads the entries a ledger lists.
type QueryAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ QueryAPI = (*dynamodb.Client)(nil)

// Reader reads entries back from the audit table. It never writes.
type Reader struct {
	DB    QueryAPI
	Table string
}

// Timeline returns every entry of every notification of eventID, in timeline order (see
// Sorted), with a consistent read.
func (r *Reader) Timeline(ctx context.Context, eventID string) ([]Entry, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(tables.AuditEventID).Equal(expression.Value(eventID))).Build()
	if err != nil {
		return nil, fmt.Errorf("audit.timeline %s: %w", eventID, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.Table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	}
	var out []Entry
	for e, err := range r.query(ctx, in) {
		if err != nil {
			return nil, fmt.Errorf("audit.timeline %s: %w", eventID, err)
		}
		out = append(out, e)
	}
	return Sorted(out), nil
}

// Range yields the entries whose at is in [from, to), one page at a time (nothing is held in
// memory beyond a page), in no particular order. It reads the ledgers (and the by_write_shard
// index, for entries written before them; see the package documentation): every
// shard of every write day that an entry of the range can have been written in, from
// ClockSkew before from to MaxLateness after to, keeping the entries whose at is in the
// range. So late entries (written by a replay, or long after their transition) are found with
// the rest; the price is reading the entries written in the MaxLateness after the range too
// (see the package documentation). The index is eventually consistent, so an entry written a
// moment ago may be missing.
func (r *Reader) Range(ctx context.Context, from, to time.Time) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		from, to = from.UTC(), to.UTC()
		if !from.Before(to) {
			yield(Entry{}, fmt.Errorf("audit.range: from %s is not before to %s", tables.FormatTime(from), tables.FormatTime(to)))
			return
		}
		filter := expression.Name(tables.AuditAt).Between(
			expression.Value(tables.FormatTime(from)), expression.Value(tables.FormatTime(to.Add(-time.Nanosecond))))
		keep := func(e Entry) bool { return !e.At.Before(from) && e.At.Before(to) }
		for e, err := range writtenIn(ctx, r.DB, r.Table, from.Add(-ClockSkew), to.Add(MaxLateness), &filter, keep) {
			if err != nil {
				err = fmt.Errorf("audit.range: %w", err)
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// writtenIn yields the entries whose written_at lies in [start, end), and that filter (on
// the index) and keep (on the ledgers' entries) keep when they are not nil: first those the
// ledgers stamped in the span list (every entry written since the ledgers exist), then those
// of the by_write_shard index (the entries written before, which carry write_shard), shard by
// shard. No entry is in both.
func writtenIn(ctx context.Context, db QueryAPI, table string, start, end time.Time, filter *expression.ConditionBuilder, keep func(Entry) bool) iter.Seq2[Entry, error] {
	r := &Reader{DB: db, Table: table}
	return func(yield func(Entry, error) bool) {
		var seen map[entryKey]bool
		var stamp time.Time
		for l, err := range ledgersIn(ctx, db, table, start, end, 0) {
			if err != nil {
				yield(Entry{}, err)
				return
			}
			if seen == nil || !l.Stamp.Equal(stamp) {
				seen, stamp = map[entryKey]bool{}, l.Stamp
			}
			for e, err := range ledgerEntries(ctx, db, table, l, seen) {
				if err != nil {
					yield(Entry{}, err)
					return
				}
				if keep != nil && !keep(e) {
					continue
				}
				if !yield(e, nil) {
					return
				}
			}
		}
		last := end.Add(-time.Nanosecond)
		for _, day := range Days(start, end) {
			for _, shard := range shardKeys(day) {
				b := expression.NewBuilder().WithKeyCondition(
					expression.Key(tables.AuditWriteShard).Equal(expression.Value(shard)).And(
						expression.Key(tables.AuditWrittenAt).Between(
							expression.Value(tables.FormatTime(start)), expression.Value(tables.FormatTime(last)))))
				if filter != nil {
					b = b.WithFilter(*filter)
				}
				expr, err := b.Build()
				if err != nil {
					yield(Entry{}, fmt.Errorf("written in %s: %w", shard, err))
					return
				}
				for e, err := range r.query(ctx, &dynamodb.QueryInput{
					TableName: aws.String(table), IndexName: aws.String(tables.IndexByWriteShard),
					KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
					ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
				}) {
					if err != nil {
						err = fmt.Errorf("written in %s: %w", shard, err)
					}
					if !yield(e, err) || err != nil {
						return
					}
				}
			}
		}
	}
}

// EarliestWrittenIn returns the entry written first in [start, end): the first ledger and
// the first index item of each shard (one item a query), day by day, stopping at the first
// day that has any. For a ledger it returns an entry holding only the ledger's written_at (its
// entries share it; one a failed batch never stored makes the first period start earlier,
// which costs an empty digest at most).
func EarliestWrittenIn(ctx context.Context, db QueryAPI, table string, start, end time.Time) (Entry, bool, error) {
	last := end.Add(-time.Nanosecond)
	for _, day := range Days(start, end) {
		var first Entry
		found := false
		dayStart, _ := time.Parse(DayLayout, day)
		for l, err := range ledgersIn(ctx, db, table, maxTime(start, dayStart), minTime(end, dayStart.AddDate(0, 0, 1)), 1) {
			if err != nil {
				return Entry{}, false, fmt.Errorf("earliest written: %w", err)
			}
			if !found || l.Stamp.Before(first.WrittenAt) {
				first, found = Entry{WrittenAt: l.Stamp, WriteDay: day}, true
			}
		}
		for _, shard := range shardKeys(day) {
			expr, err := expression.NewBuilder().WithKeyCondition(
				expression.Key(tables.AuditWriteShard).Equal(expression.Value(shard)).And(
					expression.Key(tables.AuditWrittenAt).Between(
						expression.Value(tables.FormatTime(start)), expression.Value(tables.FormatTime(last))))).Build()
			if err != nil {
				return Entry{}, false, fmt.Errorf("earliest written in %s: %w", shard, err)
			}
			out, err := db.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(table), IndexName: aws.String(tables.IndexByWriteShard), Limit: aws.Int32(1),
				KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(),
				ExpressionAttributeValues: expr.Values(),
			})
			if err != nil {
				return Entry{}, false, fmt.Errorf("earliest written in %s: %w", shard, err)
			}
			for _, item := range out.Items {
				e, err := FromItem(item)
				if err != nil {
					return Entry{}, false, fmt.Errorf("earliest written in %s: %w", shard, err)
				}
				if !found || e.WrittenAt.Before(first.WrittenAt) {
					first, found = e, true
				}
			}
		}
		if found {
			return first, true, nil
		}
	}
	return Entry{}, false, nil
}

// Days returns the UTC dates (DayLayout) that [from, to) touches, in order.
func Days(from, to time.Time) []string {
	from, to = from.UTC(), to.UTC()
	if !from.Before(to) {
		return nil
	}
	last := to.Add(-time.Nanosecond)
	d := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	var out []string
	for !d.After(last) {
		out = append(out, d.Format(DayLayout))
		d = d.AddDate(0, 0, 1)
	}
	return out
}

// query yields the entries of every page of in.
func (r *Reader) query(ctx context.Context, in *dynamodb.QueryInput) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		p := dynamodb.NewQueryPaginator(r.DB, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for _, item := range page.Items {
				e, err := FromItem(item)
				if err != nil {
					yield(Entry{}, err)
					return
				}
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// LatestDigest returns the digest of the latest period, with a consistent read.
func LatestDigest(ctx context.Context, db QueryAPI, table string) (Digest, bool, error) {
	for dg, err := range Digests(ctx, db, table, time.Time{}, time.Time{}, false) {
		return dg, err == nil, err
	}
	return Digest{}, false, nil
}

// Digests yields the digests whose period starts in [from, to) (a zero bound is open), in
// period order, or newest first when forward is false, with a consistent read.
func Digests(ctx context.Context, db QueryAPI, table string, from, to time.Time, forward bool) iter.Seq2[Digest, error] {
	return PeriodItems(ctx, db, table, tables.DigestEventID, from, to, forward, DigestFromItem, "audit.digests")
}

// WrittenIn yields the entries whose written_at lies in [start, end): those the ledgers
// stamped in it list, then those of the by_write_shard index (written before the ledgers), in
// no particular order.
func WrittenIn(ctx context.Context, db QueryAPI, table string, start, end time.Time) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for e, err := range writtenIn(ctx, db, table, start, end, nil, nil) {
			if err != nil {
				err = fmt.Errorf("audit.written in: %w", err)
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
