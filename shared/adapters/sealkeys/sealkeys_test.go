package sealkeys_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/sealkeys"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
)

func newTable(t *testing.T) (*dynamodb.Client, *sealkeys.Table) {
	t.Helper()
	db := testenv.DynamoDB(t)
	name := testenv.UniqueName(t, "sealkeys")
	if err := tablesetup.Create(t.Context(), db, tables.Names{Notifications: name + "-n", Audit: name + "-a", SealKeys: name}); err != nil {
		t.Fatal(err)
	}
	return db, sealkeys.New(db, name)
}

// TestPutOnceGetConsistent: a data key is put once (a second put of another key under its ID
// is refused, the first kept; a retried put of the same key succeeds), read back, and an ID never put is seal.ErrUnknownKey.
func TestPutOnceGetConsistent(t *testing.T) {
	ctx := context.Background()
	db, table := newTable(t)
	id, enc := bytes.Repeat([]byte{1}, seal.KeyRefSize), bytes.Repeat([]byte{0xee}, 184)
	expires := time.Date(2026, 12, 11, 18, 0, 0, 0, time.UTC)
	if err := table.PutKey(ctx, id, enc, expires); err != nil {
		t.Fatal(err)
	}
	if err := table.PutKey(ctx, id, []byte("another"), expires); err == nil {
		t.Error("a second put under the same ID succeeded")
	}
	// The SDK's retry of a put whose answer was lost: the same key under the same ID.
	if err := table.PutKey(ctx, id, enc, expires); err != nil {
		t.Errorf("a retried put of the stored key failed: %v", err)
	}
	got, err := table.GetKey(ctx, id)
	if err != nil || !bytes.Equal(got, enc) {
		t.Fatalf("GetKey = %x, %v; want the first put's key", got, err)
	}
	if _, err := table.GetKey(ctx, bytes.Repeat([]byte{2}, seal.KeyRefSize)); !errors.Is(err, seal.ErrUnknownKey) {
		t.Errorf("GetKey of an ID never put: %v, want ErrUnknownKey", err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table.Name),
		Key: map[string]ddbtypes.AttributeValue{tables.SealKeyID: &ddbtypes.AttributeValueMemberS{Value: "01010101010101010101010101010101"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ttl, _ := out.Item[tables.SealKeyTTL].(*ddbtypes.AttributeValueMemberN); ttl == nil || ttl.Value != "1797012000" {
		t.Errorf("ttl = %v, want 1797012000, the expiry in epoch seconds", out.Item[tables.SealKeyTTL])
	}
}

// TestSealAndOpenAsDeployed seals with moto's KMS and the seal-keys table on DynamoDB Local, as
// intake does in AWS, and opens in another process's source, as dispatch does: the envelope
// names a 16-byte ID, the table holds the KMS ciphertext.
func TestSealAndOpenAsDeployed(t *testing.T) {
	ctx := context.Background()
	_, table := newTable(t)
	client := testenv.KMS(t)
	key, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("resetnotify sealkeys test")})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(key.KeyMetadata.Arn)
	secret := notify.Secret{To: "+12125550123", Params: map[string]string{notify.ParamCode: "12345678"}, Locale: "en-US"}
	sealed, err := seal.New(seal.NewStoredKMSKeys(client, arn, table, 0)).Seal(ctx, "k1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint16(sealed[2:4]); sealed[1] != byte(seal.KindKMSStored) || n != seal.KeyRefSize {
		t.Fatalf("envelope kind %d with a %d-byte reference", sealed[1], n)
	}
	got, err := seal.New(seal.NewStoredKMSKeys(client, arn, table, 0)).Open(ctx, "k1", sealed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(secret, got); diff != "" {
		t.Errorf("opened (-want +got):\n%s", diff)
	}
	// The upgrade path against the same KMS: an envelope that carries its data key opens too.
	old, err := seal.New(seal.NewKMSKeys(client, arn)).Seal(ctx, "k1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seal.New(seal.NewStoredKMSKeys(client, arn, table, 0)).Open(ctx, "k1", old); err != nil {
		t.Errorf("an embedded-key envelope: %v", err)
	}
}
