package auditlog

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// A ledger item lists the keys of the entries one writer batch stores, all stamped with one
// written_at, and is written before any of them (see the package documentation).
// It is what the period reads (WrittenIn, Range, EarliestWrittenIn) query instead of an index
// copy of every entry: one item of about 100 bytes an entry for a whole stream batch, where
// the by_write_shard index took a write unit per entry.
//
// Its key: event_id "#ledger#<write_day>#<n>" (n in [0, WriteShards), from the stamp, so the
// ledgers of one instant share a partition and a day's ledgers spread over WriteShards key
// values), seq "<written_at>#<16 hex digits, random>"; written_at the stamp; entries a list
// of "<len(event_id)>:<event_id><seq>"; drop_after the stamp plus the hot window, as its
// entries'.
type ledger struct {
	EventID, Seq string
	Stamp        time.Time
	Keys         []entryKey
	DropAfter    int64
}

// entryKey is an entry's table key.
type entryKey struct{ EventID, Seq string }

// MaxLedgerKeys bounds the keys of one ledger item (about 100 bytes each, at most about 340
// with a 128-character event ID and a 200-character key: under DynamoDB's 400 KB item size
// either way); a larger batch writes several. A stream batch holds at most 100.
const MaxLedgerKeys = 500

// ledgerPartition returns the event_id of the ledgers stamped at.
func ledgerPartition(at time.Time) string {
	s := tables.FormatTime(at)
	h := sha256.Sum256([]byte(s))
	n := binary.BigEndian.Uint32(h[:4]) % WriteShards
	return tables.LedgerEventIDPrefix + at.UTC().Format(DayLayout) + "#" + strconv.Itoa(int(n))
}

// ledgerPartitions returns the ledger partitions of day, one per shard.
func ledgerPartitions(day string) []string {
	out := make([]string, WriteShards)
	for n := range out {
		out[n] = tables.LedgerEventIDPrefix + day + "#" + strconv.Itoa(n)
	}
	return out
}

func (l ledger) item() map[string]ddbtypes.AttributeValue {
	keys := make([]ddbtypes.AttributeValue, len(l.Keys))
	for i, k := range l.Keys {
		keys[i] = &ddbtypes.AttributeValueMemberS{Value: strconv.Itoa(len(k.EventID)) + ":" + k.EventID + k.Seq}
	}
	return map[string]ddbtypes.AttributeValue{
		tables.AuditEventID:   &ddbtypes.AttributeValueMemberS{Value: l.EventID},
		tables.AuditSeq:       &ddbtypes.AttributeValueMemberS{Value: l.Seq},
		tables.AuditWrittenAt: &ddbtypes.AttributeValueMemberS{Value: tables.FormatTime(l.Stamp)},
		tables.LedgerEntries:  &ddbtypes.AttributeValueMemberL{Value: keys},
		tables.AuditDropAfter: &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(l.DropAfter, 10)},
	}
}

func ledgerFromItem(item map[string]ddbtypes.AttributeValue) (ledger, error) {
	var l ledger
	s := func(name string) string {
		v, _ := item[name].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	l.EventID, l.Seq = s(tables.AuditEventID), s(tables.AuditSeq)
	stamp, err := tables.ParseTime(s(tables.AuditWrittenAt))
	if err != nil || stamp.IsZero() {
		return l, fmt.Errorf("ledger %s %s: no written_at", l.EventID, l.Seq)
	}
	l.Stamp = stamp
	if n, ok := item[tables.AuditDropAfter].(*ddbtypes.AttributeValueMemberN); ok {
		l.DropAfter, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	list, _ := item[tables.LedgerEntries].(*ddbtypes.AttributeValueMemberL)
	if list == nil {
		return l, fmt.Errorf("ledger %s %s: no entries", l.EventID, l.Seq)
	}
	for _, av := range list.Value {
		v, _ := av.(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return l, fmt.Errorf("ledger %s %s: an entry key is not a string", l.EventID, l.Seq)
		}
		n, rest, ok := strings.Cut(v.Value, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || size < 0 || size > len(rest) {
			return l, fmt.Errorf("ledger %s %s: malformed entry key", l.EventID, l.Seq)
		}
		l.Keys = append(l.Keys, entryKey{EventID: rest[:size], Seq: rest[size:]})
	}
	return l, nil
}

// Batch is one invocation's writes (Writer.Begin): every entry it writes is stamped with the
// batch's written_at, and its key is listed in a ledger item before its put. The first write
// lists every key the batch plans; a key not planned (a disambiguated seq) gets a ledger of
// its own before its put. A Batch is used by one goroutine.
type Batch struct {
	w       *Writer
	stamp   time.Time
	listed  map[entryKey]bool
	planned []entryKey
}

// Begin starts a batch stamped now, planning the keys of entries (built by Build, in order).
func (w *Writer) Begin(entries []Entry) *Batch {
	b := &Batch{w: w, stamp: w.now(), listed: map[entryKey]bool{}}
	for _, e := range entries {
		b.planned = append(b.planned, entryKey{e.EventID, seqFor(e.IdempotencyKey(), e.Version, suffixOf(e), e.NotificationID, false)})
	}
	return b
}

// list makes sure k is in a ledger of the batch: if not, it writes one listing k and every
// planned key not yet listed.
func (b *Batch) list(ctx context.Context, k entryKey) error {
	if b.listed[k] {
		return nil
	}
	keys := []entryKey{k}
	b.listed[k] = true
	for _, p := range b.planned {
		if !b.listed[p] {
			keys = append(keys, p)
			b.listed[p] = true
		}
	}
	b.planned = nil
	for len(keys) > 0 {
		n := min(len(keys), MaxLedgerKeys)
		if err := b.put(ctx, keys[:n]); err != nil {
			for _, k := range keys {
				delete(b.listed, k)
			}
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func (b *Batch) put(ctx context.Context, keys []entryKey) error {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("ledger id: %w", err)
	}
	l := ledger{
		EventID: ledgerPartition(b.stamp), Seq: tables.FormatTime(b.stamp) + "#" + hex.EncodeToString(id[:]),
		Stamp: b.stamp, Keys: keys, DropAfter: b.stamp.Add(b.w.Hot).Unix(),
	}
	if b.w.Hot <= 0 {
		// No hot window: the ledger stays as long as the entries it lists can.
		l.DropAfter = b.stamp.Add(b.w.ledgerRetention()).Unix()
	}
	cond, err := expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(expression.Name(tables.AuditSeq))).Build()
	if err != nil {
		return fmt.Errorf("ledger: build condition: %w", err)
	}
	_, err = b.w.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(b.w.Table), Item: l.item(),
		ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names(),
	})
	var held *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &held) {
		// The seq carries 8 random bytes: the item that holds it is this very ledger, put by an
		// attempt the SDK retried after the answer was lost (committed, yet unknown).
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger %s: %w", l.Seq, err)
	}
	return nil
}

// ledgerRetention is how long a ledger is kept when the writer has no hot window: the
// retention of the entries it lists.
func (w *Writer) ledgerRetention() time.Duration {
	if w.Retention > 0 {
		return w.Retention
	}
	return DefaultRetention
}

// ledgersIn yields the ledger items stamped in [start, end), partition by partition; within
// one partition in stamp order.
func ledgersIn(ctx context.Context, db QueryAPI, table string, start, end time.Time, limit int32) iter.Seq2[ledger, error] {
	return func(yield func(ledger, error) bool) {
		lo, hi := tables.FormatTime(start), tables.FormatTime(end.Add(-time.Nanosecond))+"#~"
		for _, day := range Days(start, end) {
			for _, part := range ledgerPartitions(day) {
				expr, err := expression.NewBuilder().WithKeyCondition(
					expression.Key(tables.AuditEventID).Equal(expression.Value(part)).And(
						expression.Key(tables.AuditSeq).Between(expression.Value(lo), expression.Value(hi)))).Build()
				if err != nil {
					yield(ledger{}, fmt.Errorf("ledgers %s: %w", part, err))
					return
				}
				in := &dynamodb.QueryInput{
					TableName: aws.String(table), KeyConditionExpression: expr.KeyCondition(),
					ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
				}
				if limit > 0 {
					in.Limit = aws.Int32(limit)
				}
				p := dynamodb.NewQueryPaginator(db, in)
				for p.HasMorePages() {
					page, err := p.NextPage(ctx)
					if err != nil {
						yield(ledger{}, fmt.Errorf("ledgers %s: %w", part, err))
						return
					}
					for _, item := range page.Items {
						l, err := ledgerFromItem(item)
						if !yield(l, err) || err != nil {
							return
						}
					}
					if limit > 0 {
						break
					}
				}
			}
		}
	}
}

// batchGetKeys is how many keys one BatchGetItem takes.
const batchGetKeys = 100

// ledgerEntries yields the entries l lists that the table holds with l's written_at: an entry
// listed but never stored (its batch failed before the put, or a retried batch found it
// stored by an earlier attempt, under that attempt's stamp and ledger) is skipped. seen
// drops a key already yielded under the same stamp (two ledgers of one instant).
func ledgerEntries(ctx context.Context, db QueryAPI, table string, l ledger, seen map[entryKey]bool) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		stamp := tables.FormatTime(l.Stamp)
		for start := 0; start < len(l.Keys); start += batchGetKeys {
			chunk := l.Keys[start:min(start+batchGetKeys, len(l.Keys))]
			keys := make([]map[string]ddbtypes.AttributeValue, 0, len(chunk))
			dedup := map[entryKey]bool{}
			for _, k := range chunk {
				if !dedup[k] {
					dedup[k] = true
					keys = append(keys, ItemKey(k.EventID, k.Seq))
				}
			}
			req := map[string]ddbtypes.KeysAndAttributes{table: {Keys: keys}}
			for attempt := 0; len(req) > 0; attempt++ {
				if attempt > 0 {
					select {
					case <-ctx.Done():
						yield(Entry{}, ctx.Err())
						return
					case <-time.After(time.Duration(min(attempt, 6)) * 50 * time.Millisecond):
					}
				}
				out, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
				if err != nil {
					yield(Entry{}, fmt.Errorf("ledger %s: entries: %w", l.Seq, err))
					return
				}
				for _, item := range out.Responses[table] {
					e, err := FromItem(item)
					if err != nil {
						yield(Entry{}, fmt.Errorf("ledger %s: %w", l.Seq, err))
						return
					}
					k := entryKey{e.EventID, e.Seq}
					if tables.FormatTime(e.WrittenAt) != stamp || seen[k] {
						continue
					}
					seen[k] = true
					if !yield(e, nil) {
						return
					}
				}
				req = out.UnprocessedKeys
			}
		}
	}
}

// LedgerItem is a ledger item's key and TTL, for the archive step, which pushes out the
// ledgers' drop_after with their entries' while their period is not archived (an entry kept
// is found through its ledger).
type LedgerItem struct {
	EventID, Seq string
	DropAfter    int64
}

// LedgersIn yields the key and drop_after of every ledger item stamped in [start, end).
func LedgersIn(ctx context.Context, db QueryAPI, table string, start, end time.Time) iter.Seq2[LedgerItem, error] {
	return func(yield func(LedgerItem, error) bool) {
		for l, err := range ledgersIn(ctx, db, table, start, end, 0) {
			if err != nil {
				err = fmt.Errorf("audit.ledgers in: %w", err)
			}
			if !yield(LedgerItem{EventID: l.EventID, Seq: l.Seq, DropAfter: l.DropAfter}, err) || err != nil {
				return
			}
		}
	}
}

// IsLedgerItem reports whether item is a ledger item (not an entry, a digest or an archive
// item).
func IsLedgerItem(item map[string]ddbtypes.AttributeValue) bool {
	v, ok := item[tables.AuditEventID].(*ddbtypes.AttributeValueMemberS)
	return ok && strings.HasPrefix(v.Value, tables.LedgerEventIDPrefix)
}

// LedgerItems returns the ledger items that list entries (which must share one written_at,
// stamp) as the writer writes them, MaxLedgerKeys keys an item, each with drop_after: for
// tools that store entries in bulk (a benchmark, a test), never for the functions, which write
// through Writer.
func LedgerItems(stamp time.Time, entries []Entry, dropAfter int64) ([]map[string]ddbtypes.AttributeValue, error) {
	var out []map[string]ddbtypes.AttributeValue
	for start := 0; start < len(entries); start += MaxLedgerKeys {
		var id [8]byte
		if _, err := rand.Read(id[:]); err != nil {
			return nil, fmt.Errorf("ledger id: %w", err)
		}
		l := ledger{EventID: ledgerPartition(stamp), Seq: tables.FormatTime(stamp) + "#" + hex.EncodeToString(id[:]),
			Stamp: stamp, DropAfter: dropAfter}
		for _, e := range entries[start:min(start+MaxLedgerKeys, len(entries))] {
			if !e.WrittenAt.Equal(stamp) {
				return nil, fmt.Errorf("ledger: entry %s %s written at %s, not %s", e.EventID, e.Seq, tables.FormatTime(e.WrittenAt), tables.FormatTime(stamp))
			}
			l.Keys = append(l.Keys, entryKey{e.EventID, e.Seq})
		}
		out = append(out, l.item())
	}
	return out, nil
}
