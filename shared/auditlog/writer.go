package auditlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// WriterAPI is the part of the DynamoDB API the writer uses: the audit function's IAM policy
// grants exactly these two actions on the audit table, nothing that updates or deletes.
type WriterAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ WriterAPI = (*dynamodb.Client)(nil)

// Outcome tells what Write did.
type Outcome int

// The outcomes of Write.
const (
	// Written means the entry was stored now.
	Written Outcome = iota + 1
	// Duplicate means the entry was already stored (a retried batch); nothing changed.
	Duplicate
)

// String names the outcome for logs and metrics.
func (o Outcome) String() string {
	switch o {
	case Written:
		return "written"
	case Duplicate:
		return "duplicate"
	}
	return "unknown"
}

// Writer appends entries to the audit table, chaining each to its notification's previous
// entry. It only ever creates items.
type Writer struct {
	DB    WriterAPI
	Table string
	// Clock stamps each entry's written_at; nil means the system clock.
	Clock notify.Clock
	// Hot is the hot window (AUDIT_HOT_DAYS): each entry's drop_after, the table's TTL, is
	// its written_at plus Hot, which the archive step pushes out while the entry's period is
	// not archived (package archive). Zero means no hot window: drop_after is retain_until.
	Hot time.Duration
	// Retention is how long a ledger item is kept when Hot is zero; zero means
	// DefaultRetention.
	Retention time.Duration
}

// DropAfter returns the TTL (drop_after, epoch seconds) of e written with the hot window hot:
// written_at + hot, never after retain_until; retain_until when hot is zero.
func DropAfter(e Entry, hot time.Duration) int64 {
	if hot <= 0 {
		return e.RetainUntil
	}
	return min(e.WrittenAt.Add(hot).Unix(), e.RetainUntil)
}

// Write chains e (built by Build, or a gap entry) to the previous entry of its notification
// and stores it once, conditioned on attribute_not_exists(seq). It stamps written_at from the
// writer's clock just before each put, so the entry belongs to the digest period in which it
// was stored. It returns the entry as stored by this call, or as e with its chain fields when
// it was already stored. See the package documentation for the previous-entry lookup and the
// disambiguated seq.
//
// Write is a batch of one (Begin): one ledger item and the entry. The audit function writes
// a stream batch as one Batch.
func (w *Writer) Write(ctx context.Context, e Entry) (Entry, Outcome, error) {
	return w.Begin([]Entry{e}).Write(ctx, e)
}

// Write chains e to the previous entry of its notification and stores it once, as
// Writer.Write does, stamped with the batch's written_at and listed in the batch's ledger
// before its put.
func (b *Batch) Write(ctx context.Context, e Entry) (Entry, Outcome, error) {
	w := b.w
	prev, found, err := w.previous(ctx, e)
	if err != nil {
		return Entry{}, 0, fmt.Errorf("audit.write %s %s: %w", e.EventID, e.Seq, err)
	}
	prevHash := GenesisHash
	e.PrevMissing = false
	disambiguate := false
	switch {
	case found:
		prevHash = prev.Hash
		// Keep a disambiguated chain disambiguated.
		disambiguate = prev.Seq != seqFor(e.IdempotencyKey(), prev.Version, suffixOf(prev), e.NotificationID, false)
	case e.Version > 1 || e.Purged() || (e.Gap() && e.GapFrom > 1):
		e.PrevMissing = true
	}
	for {
		e.Seq = seqFor(e.IdempotencyKey(), e.Version, suffixOf(e), e.NotificationID, disambiguate)
		e.WrittenAt = b.stamp
		e.WriteDay = e.WrittenAt.Format(DayLayout)
		linked, err := Link(e, prevHash)
		if err != nil {
			return Entry{}, 0, fmt.Errorf("audit.write %s %s: %w", e.EventID, e.Seq, err)
		}
		linked.DropAfter = DropAfter(linked, w.Hot)
		if err := b.list(ctx, entryKey{linked.EventID, linked.Seq}); err != nil {
			return Entry{}, 0, fmt.Errorf("audit.write %s %s: %w", e.EventID, e.Seq, err)
		}
		owner, err := w.put(ctx, linked)
		switch {
		case err != nil:
			return Entry{}, 0, fmt.Errorf("audit.write %s %s: %w", e.EventID, e.Seq, err)
		case owner == "":
			return linked, Written, nil
		case owner == e.NotificationID:
			return linked, Duplicate, nil
		case disambiguate:
			return Entry{}, 0, fmt.Errorf("audit.write %s %s: held by notification %s", e.EventID, e.Seq, owner)
		}
		// The key was admitted again after an earlier notification of it was purged.
		disambiguate = true
	}
}

// previous returns the entry e chains to: the same notification's entry for version−1 (a
// transition, or a gap entry ending there), or for the same version when e is a purge, or for
// GapFrom−1 when e is a gap entry. found is false for a first entry and when the previous
// entry is absent.
func (w *Writer) previous(ctx context.Context, e Entry) (Entry, bool, error) {
	version := e.Version - 1
	switch {
	case e.Purged():
		version = e.Version
	case e.Gap():
		version = e.GapFrom - 1
	}
	if version < 1 {
		return Entry{}, false, nil
	}
	key := e.IdempotencyKey()
	for _, suffix := range []string{"", gapSuffix} {
		for _, d := range []bool{false, true} {
			prev, ok, err := w.get(ctx, e.EventID, seqFor(key, version, suffix, e.NotificationID, d))
			if err != nil {
				return Entry{}, false, err
			}
			if ok && prev.NotificationID == e.NotificationID {
				return prev, true, nil
			}
		}
	}
	return Entry{}, false, nil
}

func (w *Writer) now() time.Time {
	if w.Clock == nil {
		return time.Now().UTC()
	}
	return w.Clock.Now().UTC()
}

// get reads one entry with a consistent read.
func (w *Writer) get(ctx context.Context, eventID, seq string) (Entry, bool, error) {
	out, err := w.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(w.Table),
		Key:            ItemKey(eventID, seq),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("get %s: %w", seq, err)
	}
	if len(out.Item) == 0 {
		return Entry{}, false, nil
	}
	prev, err := FromItem(out.Item)
	if err != nil {
		return Entry{}, false, fmt.Errorf("get %s: %w", seq, err)
	}
	return prev, true, nil
}

// put stores e unless its seq exists. It returns "" when it stored e, else the notification
// ID of the entry that holds the seq.
func (w *Writer) put(ctx context.Context, e Entry) (owner string, err error) {
	cond, err := expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(expression.Name(tables.AuditSeq))).Build()
	if err != nil {
		return "", fmt.Errorf("put %s: build condition: %w", e.Seq, err)
	}
	item := Item(e)
	// Listed in a ledger, not in the by_write_shard index (which holds the entries written
	// before the ledgers): no index copy, no index write unit.
	delete(item, tables.AuditWriteShard)
	item[tables.AuditDropAfter] = &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(e.DropAfter, 10)}
	_, err = w.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(w.Table),
		Item:                                item,
		ConditionExpression:                 cond.Condition(),
		ExpressionAttributeNames:            cond.Names(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		if err != nil {
			return "", fmt.Errorf("put %s: %w", e.Seq, err)
		}
		return "", nil
	}
	item = failed.Item
	if len(item) == 0 {
		// Not every emulator returns the old item; read it.
		existing, ok, err := w.get(ctx, e.EventID, e.Seq)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("put %s: condition failed but no item holds the seq", e.Seq)
		}
		return ownerOf(existing), nil
	}
	existing, err := FromItem(item)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", e.Seq, err)
	}
	return ownerOf(existing), nil
}

// ownerOf returns the notification an existing entry belongs to, never "" (which put uses for
// "stored").
func ownerOf(e Entry) string {
	if e.NotificationID == "" {
		return "(none)"
	}
	return e.NotificationID
}

// ItemKey returns the audit table's key of the item (eventID, seq): an entry's or a digest's.
func ItemKey(eventID, seq string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		tables.AuditEventID: &ddbtypes.AttributeValueMemberS{Value: eventID},
		tables.AuditSeq:     &ddbtypes.AttributeValueMemberS{Value: seq},
	}
}
