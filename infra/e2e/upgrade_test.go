package e2e_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// The upgrade path of a stack that holds its whole retention in DynamoDB (docs/audit.md,
// "Upgrading a stack that holds the whole retention in DynamoDB"), on the deployed stack:
// entries as the previous version wrote them (in the by_write_shard index, no drop_after, no
// ledger) are archived by the deployed digest function, only then given a drop_after (at least
// an hour away), and once TTL has taken them the auditor verifies their period from the
// archive. The entries are seeded by TestUpgradeSeedsEntriesOfThePreviousVersion, the
// package's first test, into the period open then, and checked by
// TestUpgradeArchivesThenTTLTakes, its last, so the suite's other tests run while the digest
// function closes and archives that period (a minute's period and its grace); run alone, the
// check seeds and waits itself.

// upgradeSeed is what the seeding test wrote.
var upgradeSeed struct {
	sync.Mutex
	entries []auditlog.Entry
	period  time.Time
}

// upgradeClients returns DynamoDB and S3 clients for the stack's own endpoints and its audit
// table's name.
func upgradeClients(t *testing.T) (*dynamodb.Client, *s3.Client, string) {
	t.Helper()
	table := os.Getenv("AUDIT_TABLE")
	if table == "" {
		t.Fatal("AUDIT_TABLE is not set: make e2e and make emulator-e2e export the stack's audit table")
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(cfg), s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }), table
}

// seedPreviousVersion writes, into the digest period open now (or the next one when this one
// ends within 15 s), the entries of 8 notifications of 3 transitions each, hash-chained as the
// audit writer chains them, stored as the version before the hot window and the ledgers
// stored them: with write_shard (the by_write_shard index), without drop_after (TTL never takes
// them), with no ledger.
func seedPreviousVersion(t *testing.T, s *stack) {
	t.Helper()
	upgradeSeed.Lock()
	defer upgradeSeed.Unlock()
	if upgradeSeed.entries != nil {
		return
	}
	db, _, table := upgradeClients(t)
	now := time.Now().UTC()
	period := now.Truncate(time.Minute)
	if period.Add(time.Minute).Sub(now) < 15*time.Second {
		period = period.Add(time.Minute)
	}
	states := []notify.State{notify.StateNone, notify.StateAccepted, notify.StateDispatching, notify.StateSent}
	reasons := []notify.Reason{notify.ReasonAdmitted, notify.ReasonLeaseAcquired, notify.ReasonProviderAccepted}
	var entries []auditlog.Entry
	for n := range 8 {
		event := fmt.Sprintf("upgrade-%s-%d", s.runID, n)
		key := event + ":sms:password_reset"
		prev := auditlog.GenesisHash
		for v := int64(1); v <= 3; v++ {
			written := period.Add(time.Duration(n*3+int(v)) * time.Second)
			at := written.Add(-2 * time.Second)
			e := auditlog.Entry{EventID: event, Seq: auditlog.Seq(key, v), NotificationID: fmt.Sprintf("01UPGRADE%s%02d", strings.ToUpper(s.runID), n),
				Version: v, At: at, Day: at.Format(auditlog.DayLayout), FromState: states[v-1], ToState: states[v], Reason: reasons[v-1],
				Attempt: min(v-1, 1), Provider: "simulator", PolicyVersion: "default-1", SafetyMarginMS: 30000,
				Actor: "resetnotify-previous:1/upgrade", WrittenBy: "resetnotify-audit:1/upgrade",
				WrittenAt: written, WriteDay: written.Format(auditlog.DayLayout), RetainUntil: at.Add(auditlog.DefaultRetention).Unix()}
			e, err := auditlog.Link(e, prev)
			if err != nil {
				t.Fatal(err)
			}
			prev = e.Hash
			entries = append(entries, e)
		}
	}
	if err := audittest.WriteBulk(context.Background(), db, table, entries, 2); err != nil {
		t.Fatalf("seed the previous version's entries: %v", err)
	}
	upgradeSeed.entries, upgradeSeed.period = entries, period
	t.Logf("seeded %d entries of the previous version into period %s", len(entries), tables.FormatTime(period))
}

// TestUpgradeArchivesThenTTLTakes checks the upgrade path on the seeded entries: their period
// is digested and archived by the stack's digest function; each entry then has a drop_after an
// hour or more ahead (never before it was archived); once TTL has taken them (the test deletes
// what TTL would take an hour and a minute later: emulators do not run TTL on time) the table
// holds none of them, and the period verifies from the archive against its signed digest,
// every seeded entry covered.
func TestUpgradeArchivesThenTTLTakes(t *testing.T) {
	s := getStack(t)
	seedPreviousVersion(t, s)
	upgradeSeed.Lock()
	entries, period := upgradeSeed.entries, upgradeSeed.period
	upgradeSeed.Unlock()
	db, s3c, table := upgradeClients(t)
	ctx := context.Background()

	var item *archive.Item
	for deadline := time.Now().Add(5 * time.Minute); item == nil && time.Now().Before(deadline); {
		for it, err := range archive.Items(ctx, db, table, period, period.Add(time.Minute), true) {
			if err != nil {
				t.Fatal(err)
			}
			item = &it
		}
		if item == nil {
			time.Sleep(3 * time.Second)
		}
	}
	if item == nil {
		archivedAny := false
		for _, err := range archive.Items(ctx, db, table, time.Time{}, time.Time{}, false) {
			archivedAny = err == nil
			break
		}
		if !archivedAny {
			t.Skipf("no period of the stack archived at all (hour-long digest periods?): the upgrade test needs one-minute periods (make local, or AuditDigestPeriodMinutes=1)")
		}
		t.Fatalf("period %s not archived within 5 minutes of the suite's end, though the stack archives others", tables.FormatTime(period))
	}
	if item.Count < int64(len(entries)) {
		t.Fatalf("archived period %s holds %d entries, want the %d seeded at least", item.Period(), item.Count, len(entries))
	}

	// Each entry got its drop_after from the archive step, after the period was archived, an
	// hour or more ahead of it.
	floor := item.ArchivedAt.Add(59 * time.Minute).Unix()
	latest := int64(0)
	for _, e := range entries {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: auditlog.ItemKey(e.EventID, e.Seq), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := out.Item[tables.AuditDropAfter].(*ddbtypes.AttributeValueMemberN)
		if !ok {
			t.Fatalf("entry %s %s has no drop_after after its period was archived", e.EventID, e.Seq)
		}
		at, _ := strconv.ParseInt(v.Value, 10, 64)
		if at < floor {
			t.Errorf("entry %s %s: drop_after %s, before the archive's time plus an hour (%s)", e.EventID, e.Seq,
				time.Unix(at, 0).UTC().Format(time.RFC3339), time.Unix(floor, 0).UTC().Format(time.RFC3339))
		}
		latest = max(latest, at)
	}

	// TTL takes them: what DynamoDB's TTL would remove a minute after the latest drop_after.
	for _, e := range entries {
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: auditlog.ItemKey(e.EventID, e.Seq)}); err != nil {
			t.Fatalf("TTL's removal of %s %s: %v", e.EventID, e.Seq, err)
		}
	}
	t.Logf("TTL would take the %d seeded entries from %s on; removed", len(entries), time.Unix(latest, 0).UTC().Format(time.RFC3339))
	now := time.Now().UTC()

	// The auditor's view, as auditctl builds it: the period outside the hot window (here an
	// hour, HotMargin), so read from the archive, checked against its signed digest.
	key := digestPublicKey(t, s)
	trail := &auditor.Trail{Reader: &auditlog.Reader{DB: db, Table: table}, S3: s3c, Hot: auditor.HotMargin, Now: now, PublicKey: key}
	b, err := auditor.CollectTrail(ctx, trail, period, period.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !trail.ArchivePeriods[period] {
		t.Errorf("period %s was not read from the archive: %s", tables.FormatTime(period), trail.Sources())
	}
	r := auditor.Check(b, auditor.CheckOptions{PublicKey: key, Now: now, Grace: 90 * time.Second})
	r.Problems = append(trail.Problems, r.Problems...)
	if len(r.Problems) > 0 || r.Covered < len(entries) {
		t.Errorf("verify of %s from the archive: %d entries, %d covered, problems %v", tables.FormatTime(period), r.Entries, r.Covered, r.Problems)
	}
	found := 0
	for _, e := range b.Entries {
		if strings.HasPrefix(e.EventID, "upgrade-"+s.runID) {
			found++
		}
	}
	if found != len(entries) {
		t.Errorf("the archive holds %d of the %d seeded entries", found, len(entries))
	}
}

// digestPublicKey returns the digests' public key: the local stack's file
// ($AUDIT_DIGEST_PUBLIC_KEY), else the stack's KMS key ($AUDIT_DIGEST_KEY_ID) through
// auditctl public-key.
func digestPublicKey(t *testing.T, s *stack) *ecdsa.PublicKey {
	t.Helper()
	var pemBytes []byte
	if path := os.Getenv("AUDIT_DIGEST_PUBLIC_KEY"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pemBytes = b
	} else if id := os.Getenv("AUDIT_DIGEST_KEY_ID"); id != "" {
		out, err := s.auditctl(t, "public-key", "--key-id", id)
		if err != nil {
			t.Fatalf("auditctl public-key --key-id %s: %v\n%s", id, err, out)
		}
		pemBytes = []byte(out)
	} else {
		t.Fatal("neither AUDIT_DIGEST_PUBLIC_KEY nor AUDIT_DIGEST_KEY_ID is set: make e2e and make emulator-e2e export one")
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatalf("no PEM block in the digest public key:\n%s", pemBytes)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		t.Fatalf("the digest public key is a %T, want ECDSA", pub)
	}
	return key
}
