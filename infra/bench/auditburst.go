package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/infra/emulator"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// keyMeter is the audit writer's DynamoDB with ReturnConsumedCapacity=INDEXES on every put: it
// adds up the write units each partition key value of the table took, entries and ledger items
// apart, and those of any index.
type keyMeter struct {
	*dynamodb.Client
	mu sync.Mutex
	// ledger maps each ledger partition ("#ledger#<day>#<n>") to the write units its items
	// took; table the entries' own partition key values (event_id) likewise; index every
	// index key value (none since the ledgers: an entry has no write_shard).
	ledger, table, index map[string]float64
	entries              int
}

func (m *keyMeter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityIndexes
	out, err := m.Client.PutItem(ctx, in, opts...)
	if err != nil || out.ConsumedCapacity == nil {
		return out, err
	}
	str := func(name string) string {
		v, _ := in.Item[name].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ledger := auditlog.IsLedgerItem(in.Item)
	if !ledger {
		m.entries++
	}
	if c := out.ConsumedCapacity.Table; c != nil && c.CapacityUnits != nil {
		if ledger {
			m.ledger[str(tables.AuditEventID)] += *c.CapacityUnits
		} else {
			m.table[str(tables.AuditEventID)] += *c.CapacityUnits
		}
	}
	for name, c := range out.ConsumedCapacity.GlobalSecondaryIndexes {
		if c.CapacityUnits != nil {
			m.index[name+" "+str(tables.AuditWriteShard)] += *c.CapacityUnits
		}
	}
	return out, err
}

// hottest returns the key value of units that took the most and what it took, and the sum.
func hottest(units map[string]float64) (key string, max, total float64) {
	for k, u := range units {
		total += u
		if u > max {
			key, max = k, u
		}
	}
	return key, max, total
}

// auditBatchNotifications is how many notifications' entries one stream batch of the audit
// function holds in the burst: 25 delivered notifications, 100 records, the template's
// BatchSize.
const auditBatchNotifications = 25

// auditBurst writes the audit entries of n delivered notifications (4 each: accepted,
// dispatching, sent, delivered, shaped as the audit function writes them) through the audit
// writer as the audit function does, one writer batch (one ledger item) per stream batch of
// 100 records, 8 batches at a time, at once — a burst, all in one write day — and prints the
// write units per entry (the entry and its share of a ledger), the share of the ledgers'
// writes that their hottest partition key value took, and the notification rate at which
// that key value reaches the 1,000 write units a second a partition takes
// (audit_max_notifications_per_s).
func auditBurst(ctx context.Context, endpoint string, n int, out io.Writer) error {
	cfg := aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()}
	db := awsclient.DynamoDB(cfg, endpoint)
	_, names := benchNames("bench-audit")
	drop, err := createTables(ctx, db, names)
	if err != nil {
		return err
	}
	defer drop()
	m := &keyMeter{Client: db, ledger: map[string]float64{}, table: map[string]float64{}, index: map[string]float64{}}
	w := &auditlog.Writer{DB: m, Table: names.Audit, Clock: notify.SystemClock{}}
	batches := (n + auditBatchNotifications - 1) / auditBatchNotifications
	ph, err := measure(ctx, batches, 8, 0, func(ctx context.Context, i int) error {
		var entries []auditlog.Entry
		for k := i * auditBatchNotifications; k < min(n, (i+1)*auditBatchNotifications); k++ {
			entries = append(entries, deliveredEntries(k)...)
		}
		b := w.Begin(entries)
		for _, e := range entries {
			if _, _, err := b.Write(ctx, e); err != nil {
				return fmt.Errorf("audit burst: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	key, max, ledgerTotal := hottest(m.ledger)
	_, tableMax, tableTotal := hottest(m.table)
	_, _, indexTotal := hottest(m.index)
	perNotification := max / float64(n)
	entries := float64(m.entries)
	fmt.Fprintf(out, "audit_burst_measured_against=DynamoDB Local, ReturnConsumedCapacity=INDEXES, %d delivered notifications x 4 entries through audit.Writer, one writer batch (ledger) per %d notifications, 8 batches at a time, in %.1f s; %d ledger shards\n",
		n, auditBatchNotifications, ph.elapsed.Seconds(), auditlog.WriteShards)
	fmt.Fprintf(out, "audit_burst_write_units_per_entry=%.2f\n", (ledgerTotal+tableTotal+indexTotal)/entries)
	fmt.Fprintf(out, "audit_burst_ledger_write_units_per_entry=%.3f\n", ledgerTotal/entries)
	fmt.Fprintf(out, "audit_burst_index_write_units_per_entry=%.3f\n", indexTotal/entries)
	fmt.Fprintf(out, "audit_ledger_key_values=%d\n", len(m.ledger))
	fmt.Fprintf(out, "audit_hottest_key=%s\n", key)
	fmt.Fprintf(out, "audit_hottest_key_share=%.4f\n", max/ledgerTotal)
	fmt.Fprintf(out, "audit_hottest_key_write_units_per_notification=%.3f\n", perNotification)
	fmt.Fprintf(out, "audit_max_notifications_per_s=%.0f\n", 1000/perNotification)
	fmt.Fprintf(out, "audit_hottest_table_key_write_units=%.2f\n", tableMax)
	return nil
}

// deliveredEntries returns the four audit entries of notification i delivered on the happy
// path, with the sizes of real ones: ULIDs, a destination fingerprint, actors.
func deliveredEntries(i int) []auditlog.Entry {
	now := time.Now().UTC()
	event := fmt.Sprintf("evt-%s", ulid.Make())
	id := ulid.Make().String()
	key := fmt.Sprintf("%s:sms:password_reset", event)
	steps := []struct {
		from, to notify.State
		reason   notify.Reason
		actor    string
	}{
		{"", notify.StateAccepted, notify.ReasonAdmitted, "resetnotify-intake"},
		{notify.StateAccepted, notify.StateDispatching, notify.ReasonLeaseAcquired, "resetnotify-dispatch"},
		{notify.StateDispatching, notify.StateSent, notify.ReasonProviderAccepted, "resetnotify-dispatch"},
		{notify.StateSent, notify.StateDelivered, notify.ReasonReceiptDelivered, "resetnotify-provider-events"},
	}
	out := make([]auditlog.Entry, len(steps))
	for v, s := range steps {
		out[v] = auditlog.Entry{
			EventID: event, Seq: auditlog.Seq(key, int64(v+1)), NotificationID: id, Version: int64(v + 1),
			At: now, Day: now.Format(auditlog.DayLayout), FromState: s.from, ToState: s.to, Reason: s.reason,
			Attempt: 1, Provider: "simulator", ProviderMessageID: fmt.Sprintf("sim-%08d", i),
			DestinationFP: strings.Repeat("ab", 32), PolicyVersion: "default-1", SafetyMarginMS: 30000,
			Actor:       s.actor + ":$LATEST/" + ulid.Make().String(),
			WrittenBy:   "resetnotify-audit:$LATEST/" + ulid.Make().String(),
			RetainUntil: now.Add(400 * 24 * time.Hour).Unix(),
		}
	}
	return out
}
