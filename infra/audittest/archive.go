package audittest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/archive"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// ArchiveBucket is the bucket name the archive tests give the archiver.
const ArchiveBucket = "resetnotify-audit-archive-test"

// Archiver returns the real archive step over the audit table, putting into s3, signing with
// e.SigningKey, with the hot window hot and the time from clock.
func (e *Env) Archiver(s3 archive.PutAPI, clock notify.Clock, hot time.Duration) *archive.Archiver {
	return &archive.Archiver{DB: e.DB, Table: e.Names.Audit, S3: s3, Bucket: ArchiveBucket,
		Signer: digest.LocalSigner{Key: e.SigningKey}, Algorithm: digest.SigningAlgorithm,
		Hot: hot, Retention: auditlog.DefaultRetention, Clock: clock}
}

// ExpireAudit removes from the audit table every item whose drop_after (the table's TTL) is
// before now, as DynamoDB's TTL process would (DynamoDB Local's stalls on items outside a
// sparse index, which digests are), and returns how many it removed.
func (e *Env) ExpireAudit(t testing.TB, now time.Time) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	n := 0
	for _, it := range e.scanAll(t) {
		v, ok := it[tables.AuditDropAfter].(*ddbtypes.AttributeValueMemberN)
		if !ok {
			continue
		}
		at, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil || at >= now.Unix() {
			continue
		}
		_, err = e.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.Names.Audit),
			Key: map[string]ddbtypes.AttributeValue{tables.AuditEventID: it[tables.AuditEventID], tables.AuditSeq: it[tables.AuditSeq]}})
		if err != nil {
			t.Fatalf("expire audit item: %v", err)
		}
		n++
	}
	return n
}

// DeleteArchiveItem deletes the archive item of the period starting at start, as if the run
// that archived it had stopped before writing it.
func (e *Env) DeleteArchiveItem(t testing.TB, start time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	_, err := e.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.Names.Audit),
		Key: auditlog.ItemKey(tables.ArchiveEventID, tables.FormatTime(start))})
	if err != nil {
		t.Fatal(err)
	}
}
