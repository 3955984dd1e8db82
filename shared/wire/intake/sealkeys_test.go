package intake_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
	"github.com/resetnotify/resetnotify/shared/wire"
	intakewire "github.com/resetnotify/resetnotify/shared/wire/intake"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

// TestWiringKeepsTheDataKeyOutOfTheRecord builds the intake function as deployed in AWS, sealing
// with a KMS key (moto's) and SEAL_KEYS_TABLE, and admits two notifications: each record's
// envelope names the data key by its 16-byte ID, and the seal-keys table holds that key's
// KMS-encrypted form, once.
func TestWiringKeepsTheDataKeyOutOfTheRecord(t *testing.T) {
	ddb := testenv.DynamoDB(t)
	sqsClient := testenv.SQS(t)
	kmsClient := testenv.KMS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	key, err := kmsClient.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("resetnotify intake wiring test")})
	if err != nil {
		t.Fatal(err)
	}
	sealKeys := testenv.UniqueName(t, "sealkeys")
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit"), SealKeys: sealKeys}
	createTables(ctx, t, ddb, names)
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(sealKeys)})
	})
	queueURL := testenv.Queue(t, sqsClient, testenv.UniqueName(t, "dispatch"))

	env := map[string]string{
		config.EnvNotificationsTable: names.Notifications,
		config.EnvDispatchQueueURL:   queueURL,
		config.EnvSealKMSKeyID:       aws.ToString(key.KeyMetadata.Arn),
		config.EnvSealKeysTable:      sealKeys,
		"AWS_ENDPOINT_URL_KMS":       os.Getenv(emulator.EnvSQSEndpoint),
		config.EnvDestinationPepper:  "wiring-test-pepper-0123",
		config.EnvFingerprintKey:     "wiring-test-fingerprint-key-0123456789",
		config.EnvAllowedCountries:   "US,CA",
		config.EnvGuardTable:         config.Off,
		config.EnvConversionTable:    config.Off,
	}
	h, err := wire.Build(ctx, intakewire.Function, wiretest.Env(env), io.Discard)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	var ids []string
	for _, k := range []string{"kms-wiring-1", "kms-wiring-2"} {
		resp, err := h.Handle(ctx, submitEvent(t, k, wiringNumber))
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST: %d %s (%v)", resp.StatusCode, resp.Body, err)
		}
		item, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names.Notifications),
			Key: map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: storedKey(t, k)}}})
		if err != nil {
			t.Fatal(err)
		}
		sealed, _ := item.Item[tables.AttrSealed].(*ddbtypes.AttributeValueMemberB)
		if sealed == nil || len(sealed.Value) < 4 {
			t.Fatalf("record %s has no sealed payload", k)
		}
		n := int(binary.BigEndian.Uint16(sealed.Value[2:4]))
		if seal.KeyKind(sealed.Value[1]) != seal.KindKMSStored || n != seal.KeyRefSize {
			t.Fatalf("record %s: envelope kind %s with a %d-byte reference, want kms-stored and %d", k, seal.KeyKind(sealed.Value[1]), n, seal.KeyRefSize)
		}
		ids = append(ids, hex.EncodeToString(sealed.Value[4:4+n]))
	}
	if ids[0] != ids[1] {
		t.Errorf("two admissions of one instance name data keys %s and %s, want one", ids[0], ids[1])
	}
	scan, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(sealKeys)})
	if err != nil {
		t.Fatal(err)
	}
	if len(scan.Items) != 1 {
		t.Fatalf("the seal-keys table holds %d items, want 1", len(scan.Items))
	}
	if id, _ := scan.Items[0][tables.SealKeyID].(*ddbtypes.AttributeValueMemberS); id == nil || id.Value != ids[0] {
		t.Errorf("stored key ID %v, want %s", scan.Items[0][tables.SealKeyID], ids[0])
	}
	if enc, _ := scan.Items[0][tables.SealKeyEncrypted].(*ddbtypes.AttributeValueMemberB); enc == nil || len(enc.Value) < seal.DataKeySize {
		t.Errorf("stored encrypted key %v", scan.Items[0][tables.SealKeyEncrypted])
	}
}

// storedKey returns the key under which the wired intake stores key for the local caller that
// submitEvent names: keys are scoped to their owner, the fingerprint of the caller's principal
// under the request fingerprint key the tests configure.
func storedKey(t *testing.T, key string) string {
	t.Helper()
	fp, err := seal.NewRequestFingerprinter([]byte("wiring-test-fingerprint-key-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	principal, err := notify.CanonicalPrincipal(localapi.Caller(localapi.LocalCallerRole).IAM.UserARN)
	if err != nil {
		t.Fatal(err)
	}
	return notify.ScopedKey(fp.OwnerFP(principal), key)
}
