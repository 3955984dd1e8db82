package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
)

func TestUpdateLabel(t *testing.T) {
	cases := []struct {
		name string
		in   *dynamodb.UpdateItemInput
		want string
	}{
		{"transition", &dynamodb.UpdateItemInput{
			UpdateExpression:          aws.String("SET #0 = :0, #1 = :1"),
			ExpressionAttributeNames:  map[string]string{"#0": "reason", "#1": tables.AttrState},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":0": &ddbtypes.AttributeValueMemberS{Value: "X"}, ":1": &ddbtypes.AttributeValueMemberS{Value: "sent"}},
		}, "->sent"},
		{"no state", &dynamodb.UpdateItemInput{
			UpdateExpression:         aws.String("SET #0 = :0"),
			ExpressionAttributeNames: map[string]string{"#0": tables.AttrNextActionAt},
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := updateLabel(tc.in); got != tc.want {
				t.Errorf("updateLabel = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWriteUnitsOnDynamoDBLocal holds the notifications table to its write budget (see
// docs/benchmarks.md): at most 2 write units for an admission and for each transition of the happy path (lease,
// sent, delivered), as DynamoDB reports them with ReturnConsumedCapacity=INDEXES. It fails
// when an index is added back, a projection grows so that an update rewrites it, a
// transition moves the due index's key when it need not, or the record (of a realistic size:
// a key derived from a UUID event ID, the abuse guard's decision bound, the prefix and
// country, sealed and named as the functions are in AWS: KMS with the seal-keys table, Lambda's
// function names) grows past 1 KB.
func TestWriteUnitsOnDynamoDBLocal(t *testing.T) {
	testenv.DynamoDB(t) // skips or fails as the package documents when there is no emulator
	meter := newCapacityMeter()
	cfg := testenv.Config()
	meter.Instrument(&cfg)
	db := awsclient.DynamoDB(cfg, os.Getenv(emulator.EnvDynamoDBEndpoint))
	names := tables.Names{Notifications: testenv.UniqueName(t, "cap-n"), Audit: testenv.UniqueName(t, "cap-a")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drop, err := createTables(ctx, db, names)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	store := dynamostore.New(db, names.Notifications)
	now := time.Now().UTC()
	req := notify.Request{
		IdempotencyKey: "0b7f9c3e-4d2a-4f6b-9a1e-8c5d3e2f1a0b:sms:password_reset", EventID: "0b7f9c3e-4d2a-4f6b-9a1e-8c5d3e2f1a0b",
		Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: "+12125550123", Locale: "en-US", Params: map[string]string{notify.ParamCode: "12345678"}, ExpiresAt: now.Add(10 * time.Minute),
	}
	// Sealed as the functions seal in AWS (seal.Source with SEAL_KMS_KEY_ID and
	// SEAL_KEYS_TABLE), over a KMS whose data key ciphertexts have AWS's 184 bytes.
	keys, err := seal.Source(awsSizedKMS{}, "arn:aws:kms:us-east-1:111122223333:key/k", memKeys{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := seal.New(keys).Seal(ctx, req.IdempotencyKey, req.Secret())
	if err != nil {
		t.Fatal(err)
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: "01JCAP00000000000000000000", Sealed: sealed, DestinationFP: "0123456789abcdef0123456789abcdef",
		RequestFingerprint: "h1:0123456789abcdef012345", PrefixFP: "fedcba9876543210fedcba9876543210", Country: "US"}, now, notify.DefaultPolicy())
	rec.DecideBy = now.Add(500 * time.Millisecond)
	// Function names as CloudFormation makes them in AWS.
	actor := func(function string) notify.Actor {
		return notify.Actor{Function: "resetnotify-" + function + "-AbCdEfGh1234", Version: "$LATEST", RequestID: "8476a536-e9f4-5e8a-9a6c-0bb0ff6f5d4a"}
	}
	rec.Actor = actor("intake")

	step := func(name string, f func() error) {
		t.Helper()
		meter.Reset()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, w := meter.Snapshot().total(nil)
		if w > 2 {
			t.Errorf("%s: %.1f write units (%s), want at most 2", name, w, meter.Snapshot().format(nil, 1))
		}
		if w == 0 {
			t.Errorf("%s: no write units reported", name)
		}
	}
	step("admission", func() error { _, _, err := store.Admit(ctx, rec); return err })
	changes := []notify.Change{
		{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "ABCDEFGHIJKLMNOP", LeaseUntil: now.Add(40 * time.Second), Provider: "endusersms"},
		{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "0123abcd-4567-89ef-0123-456789abcdef"},
		{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered},
	}
	for _, ch := range changes {
		ch.Actor = actor(string(ch.To))
		next, err := rec.Apply(ch, now.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		step(string(ch.To), func() error { return store.Transition(ctx, rec, next) })
		rec = next
	}
}

// TestDeployedAdmissionBudget holds admission as deployed (the guard on) to its budget: a
// number's first admission of the day at most 3 requests and 4 write units (the two counters,
// then the put), a repeat at most 2 and 3, no read, and a replay the one PutItem, writing
// nothing. The block list's refresh is counted apart: one Query per instance and
// CONVERSION_REFRESH_SECONDS (5 s), so at most one over these few admissions.
func TestDeployedAdmissionBudget(t *testing.T) {
	testenv.DynamoDB(t) // skips or fails as the package documents when there is no emulator
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, drop, err := newUnitsMeter(ctx, os.Getenv(emulator.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	refreshes := 0.0
	for _, step := range []struct {
		kind               string
		requests, writeMax float64
	}{{"", 3, 4}, {"_repeat", 2, 3}} {
		const n = 5
		u, err := m.admit(ctx, step.kind, n)
		if err != nil {
			t.Fatal(err)
		}
		refreshes += u.refreshes * n
		if u.requests > step.requests || u.writes > step.writeMax || u.writes == 0 || u.reads > 0.5/n {
			t.Errorf("admission%s: %.2f requests (%s), %.2f write units, %.2f read units; want at most %.0f, at most %.0f, none",
				step.kind, u.requests, u.breakdown, u.writes, u.reads, step.requests, step.writeMax)
		}
	}
	// The fresh instance reads the list at its first admission, then not again within 5 s.
	if refreshes < 1 || refreshes > 2 {
		t.Errorf("%.0f reads of the block list over 10 admissions, want 1 (2 if they took over 5 s)", refreshes)
	}
	u, err := m.replay(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if u.requests != 1 || u.writes != 0 {
		t.Errorf("replay: %.2f requests (%s), %.2f write units; want the one PutItem, no write", u.requests, u.breakdown, u.writes)
	}
}

// awsSizedKMS is a KMS whose GenerateDataKey answers a ciphertext of 184 bytes, the size AWS
// KMS gives an AES_256 data key under a symmetric key (moto's are 96).
type awsSizedKMS struct{}

func (awsSizedKMS) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return &kms.GenerateDataKeyOutput{Plaintext: make([]byte, seal.DataKeySize), CiphertextBlob: make([]byte, 184)}, nil
}

func (awsSizedKMS) Decrypt(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return &kms.DecryptOutput{Plaintext: make([]byte, seal.DataKeySize)}, nil
}

// memKeys is an in-memory seal-keys table.
type memKeys map[string][]byte

func (m memKeys) PutKey(_ context.Context, id, enc []byte, _ time.Time) error {
	m[string(id)] = enc
	return nil
}

func (m memKeys) GetKey(_ context.Context, id []byte) ([]byte, error) { return m[string(id)], nil }
