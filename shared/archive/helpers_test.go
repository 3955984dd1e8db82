package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deleteFirstEntry deletes the first entry (not a digest) among items from the audit table.
func deleteFirstEntry(t *testing.T, env *audittest.Env, items []map[string]ddbtypes.AttributeValue) {
	t.Helper()
	for _, it := range items {
		if v, ok := it[tables.AuditEventID].(*ddbtypes.AttributeValueMemberS); ok && v.Value[0] != '#' {
			_, err := env.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(env.Names.Audit),
				Key: map[string]ddbtypes.AttributeValue{tables.AuditEventID: it[tables.AuditEventID], tables.AuditSeq: it[tables.AuditSeq]}})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no entry to delete")
}
