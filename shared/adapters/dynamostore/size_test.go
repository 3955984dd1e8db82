package dynamostore

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// recordBudget is what a notification record may weigh at any stage of its life, by
// DynamoDB's item-size rules: 1 KB (one write unit a write, the item alone) less 124 bytes
// left for the fields other work adds (a caller principal's fingerprint, a changed decision
// bound). docs/benchmarks.md lists the record field by field.
const recordBudget = 900

// deployedRecordBudget is the same budget for the record as the functions write it in AWS:
// sealed with KMS, the data key named by its 16-byte ID in the seal-keys table (8 bytes more
// than the static key's ID), the actor a CloudFormation function name (about 25 bytes more).
// 64 bytes are left for fields to come.
const deployedRecordBudget = 960

// itemBytes is an item's size as DynamoDB counts it for capacity ("Item sizes and formats" in
// the DynamoDB developer guide): for each attribute, its name's UTF-8 bytes plus its value's
// size. A string or binary value counts its bytes; a number about one byte per two
// significant digits plus one; a boolean or null one byte; a list or map 3 bytes, plus one per
// element and the elements (and a map's keys).
func itemBytes(av map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range av {
		n += len(name) + valueBytes(v)
	}
	return n
}

func valueBytes(v ddbtypes.AttributeValue) int {
	switch x := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(x.Value)
	case *ddbtypes.AttributeValueMemberN:
		digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(x.Value), "0")
		return (len(digits)+1)/2 + 1
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range x.Value {
			n += 1 + len(k) + valueBytes(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, e := range x.Value {
			n += len(e)
		}
		return n
	}
	return 1
}

// TestItemBytes checks the sizing rules on values whose size the developer guide states.
func TestItemBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		av   map[string]ddbtypes.AttributeValue
		want int
	}{
		{"string", map[string]ddbtypes.AttributeValue{"state": &ddbtypes.AttributeValueMemberS{Value: "sent"}}, 5 + 4},
		{"binary", map[string]ddbtypes.AttributeValue{"b": &ddbtypes.AttributeValueMemberB{Value: make([]byte, 10)}}, 1 + 10},
		{"number, 13 digits", map[string]ddbtypes.AttributeValue{"ttl": &ddbtypes.AttributeValueMemberN{Value: "1764698400123"}}, 3 + 8},
		{"number, trailing zeros trimmed", map[string]ddbtypes.AttributeValue{"n": &ddbtypes.AttributeValueMemberN{Value: "60000"}}, 1 + 2},
		{"list", map[string]ddbtypes.AttributeValue{"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{
			&ddbtypes.AttributeValueMemberS{Value: "ab"}, &ddbtypes.AttributeValueMemberS{Value: "c"},
		}}}, 1 + 3 + (1 + 2) + (1 + 1)},
	} {
		if got := itemBytes(tc.av); got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, got, tc.want)
		}
	}
}

// shape is what makes one notification's record larger or smaller than another's.
type shape struct {
	name string
	key  string
	// params is the request's; keys is the sealing key source: keysStatic (the local stack),
	// keysDeployed (KMS with the seal-keys table, as the functions wire it in AWS) or
	// keysEmbedded (KMS with the data key in every envelope: records sealed before the table).
	params map[string]string
	keys   keySource
	// actor is how the functions' names and request IDs read.
	actor func(function string) notify.Actor
}

// keySource names how a shape's payload is sealed.
type keySource int

const (
	keysStatic keySource = iota
	keysDeployed
	keysEmbedded
)

// lambdaActor is an actor as Lambda names it in AWS: a function name as CloudFormation makes
// one from the stack and the template's logical ID, $LATEST, a request ID.
func lambdaActor(function string) notify.Actor {
	return notify.Actor{Function: "resetnotify-" + function + "-AbCdEfGh1234", Version: "$LATEST", RequestID: "8476a536-e9f4-5e8a-9a6c-0bb0ff6f5d4a"}
}

// localActor is an actor as the local stack names it (the function's folder name under the
// Lambda runtime emulator, a request ID).
func localActor(function string) notify.Actor {
	return notify.Actor{Function: function, Version: "$LATEST", RequestID: "8476a536-e9f4-5e8a-9a6c-0bb0ff6f5d4a"}
}

var (
	uuidKey  = "0b7f9c3e-4d2a-4f6b-9a1e-8c5d3e2f1a0b:sms:password_reset"
	code     = map[string]string{notify.ParamCode: "12345678"}
	resetURL = map[string]string{notify.ParamResetURL: "https://shop.example.com/account/reset?token=" + strings.Repeat("T", 43)}
	maxKey   = strings.Repeat("k", notify.MaxKeyLen)
)

// kmsCiphertextLen is the size of the CiphertextBlob AWS KMS returns for GenerateDataKey with
// KeySpec AES_256 under a symmetric (SYMMETRIC_DEFAULT) key: 184 bytes, as observed from KMS
// in AWS (its layout, a header naming the key, the IV, the wrapped key and its tag, is not
// documented). moto's are shorter, so the sizes here do not come from moto.
const kmsCiphertextLen = 184

// awsShapedKMS is a seal.KMSAPI whose data keys' ciphertexts are as long as AWS KMS's.
type awsShapedKMS struct{ key []byte }

func (k awsShapedKMS) GenerateDataKey(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return &kms.GenerateDataKeyOutput{Plaintext: k.key, CiphertextBlob: bytes.Repeat([]byte{0xc1}, kmsCiphertextLen)}, nil
}

func (k awsShapedKMS) Decrypt(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return &kms.DecryptOutput{Plaintext: k.key}, nil
}

// keyStore is an in-memory seal.KeyStore (the seal-keys table).
type keyStore map[string][]byte

func (s keyStore) PutKey(_ context.Context, id, enc []byte, _ time.Time) error {
	s[string(id)] = enc
	return nil
}

func (s keyStore) GetKey(_ context.Context, id []byte) ([]byte, error) { return s[string(id)], nil }

// source returns the key source of k over the data key key, as the wiring builds it
// (seal.Source) for keysStatic and keysDeployed.
func (k keySource) source(t *testing.T, key []byte) seal.KeySource {
	t.Helper()
	var src seal.KeySource
	var err error
	switch k {
	case keysStatic:
		src, err = seal.Source(nil, "", nil, key)
	case keysDeployed:
		src, err = seal.Source(awsShapedKMS{key}, "arn:aws:kms:us-east-1:111122223333:key/k", keyStore{}, nil)
	case keysEmbedded:
		src = seal.NewKMSKeys(awsShapedKMS{key}, "arn:aws:kms:us-east-1:111122223333:key/k")
	}
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// record returns the accepted, undecided record (the abuse guard on) of a notification of
// shape s, sealed and fingerprinted as intake does, at the template's policy.
func (s shape) record(t *testing.T) notify.Record {
	t.Helper()
	at := time.Date(2026, 12, 2, 18, 0, 0, 123456789, time.UTC)
	req := notify.Request{
		IdempotencyKey: s.key, EventID: "0b7f9c3e-4d2a-4f6b-9a1e-8c5d3e2f1a0b",
		Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: "+12125550123", Locale: "en-US", Params: s.params, ExpiresAt: at.Add(15*time.Minute + 123456789),
	}
	key := make([]byte, seal.DataKeySize)
	sealed, err := seal.New(s.keys.source(t, key)).Seal(context.Background(), req.IdempotencyKey, req.Secret())
	if err != nil {
		t.Fatal(err)
	}
	fps, err := seal.NewRequestFingerprinter(key)
	if err != nil {
		t.Fatal(err)
	}
	pepper, err := seal.NewFingerprinter(key)
	if err != nil {
		t.Fatal(err)
	}
	p := notify.DefaultPolicy()
	p.Version = "default-1"
	rec := notify.NewRecord(req, notify.Admission{
		NotificationID: "01KBG8Z5T1M2N3P4Q5R6S7T8V9", Sealed: sealed,
		DestinationFP: pepper.DestinationFP(req.To), RequestFingerprint: fps.RequestFP(req.Canonical()),
		PrefixFP: pepper.DestinationFP("prefix:+1212555"), Country: "US",
	}, at, p)
	rec.DecideBy = at.Add(2 * time.Second)
	rec.Actor = s.actor("intake")
	return rec
}

// stage is the record at one point of its life, as the store writes it. Common stages are
// those of every notification; the others are off its happy path (a failover, a receipt
// that overtakes the send, a reconciliation).
type stage struct {
	name   string
	common bool
	item   map[string]ddbtypes.AttributeValue
}

// lifeOf takes the record of shape s through every stage of a sending notification's life
// that adds to it: admission (undecided, then settled by a duplicate), the first attempt,
// sent, delivered and converted; from the first attempt, a failover to a second provider and
// a third attempt; and a receipt held while dispatching, a timeout, an inconclusive
// reconciliation and a requeue, and the receipt's settle. Each item carries a write token, as
// every write of the store does.
func lifeOf(t *testing.T, s shape) []stage {
	t.Helper()
	const messageID = "0123abcd-4567-89ef-0123-456789abcdef" // End User Messaging's, the longest
	now := time.Time{}
	step := func(r notify.Record, ch notify.Change) notify.Record {
		t.Helper()
		now = now.Add(1234567 * time.Nanosecond)
		ch.Actor = s.actor(string(ch.To))
		next, err := r.Apply(ch, now)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	lease := func(r notify.Record, provider string) notify.Record {
		return step(r, notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, Provider: provider,
			LeaseUntil: now.Add(30 * time.Second), LeaseToken: rand.Text()[:tokenLen]})
	}
	retry := func(r notify.Record, reason notify.Reason) notify.Record {
		return step(r, notify.Change{To: notify.StateRetryScheduled, Reason: reason, NextActionAt: now.Add(time.Second)})
	}
	var out []stage
	add := func(name string, common bool, r notify.Record) {
		av, err := ItemFromRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		av[tables.AttrWriteToken] = &ddbtypes.AttributeValueMemberS{Value: newToken()}
		out = append(out, stage{name, common, av})
	}

	rec := s.record(t)
	now = rec.CreatedAt
	add("accepted, undecided", true, rec)
	rec.DecidedAt = rec.DecideBy.Add(time.Millisecond)
	add("accepted, settled by a duplicate", true, rec)
	first := lease(rec, "endusersms")
	add("dispatching, attempt 1", true, first)
	rec = step(first, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: messageID})
	add("sent", true, rec)
	rec = step(rec, notify.Change{To: notify.StateDelivered, Reason: notify.ReasonReceiptDelivered})
	add("delivered", true, rec)
	rec, err := rec.Convert(now)
	if err != nil {
		t.Fatal(err)
	}
	add("delivered, converted", true, rec)

	rec = retry(first, notify.ReasonProviderUnavailable)
	add("retry_scheduled, attempt 1 not processed", true, rec)
	rec = lease(rec, "simulator2")
	add("dispatching, attempt 2 after a failover", false, rec)
	rec = lease(retry(rec, notify.ReasonProviderThrottled), "endusersms")
	add("dispatching, attempt 3, back on the first", false, rec)

	rec = first
	rec.EarlyReceipt = notify.Receipt{State: notify.StateUndelivered, Provider: "endusersms", MessageID: messageID, At: now}
	add("dispatching, early receipt held", false, rec)
	rec = step(rec, notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: now.Add(time.Minute)})
	add("dispatch_unknown, receipt held", false, rec)
	rec = step(rec, notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonReconcileInconclusive, NextActionAt: now.Add(time.Minute)})
	rec = rec.Requeue(now, time.Minute)
	add("dispatch_unknown, inconclusive, requeued", false, rec)
	rec = step(rec, notify.Change{To: notify.StateUndelivered, Reason: notify.ReasonReconciledByReceipt, ProviderMessageID: messageID})
	add("undelivered, settled by the held receipt", false, rec)
	return out
}

// TestRecordStaysUnderOneKB takes records of realistic shapes through every stage of a
// sending notification's life (lifeOf) and checks each item's size, as the store writes it.
// The budgeted shapes are the largest the local stack and make bench realistically write (the
// key intake derives from a UUID event ID, a code, the static sealing key, the longest
// provider message ID), and the same notification as the functions write it in AWS (the
// sealing key as seal.Source wires it with SEAL_KMS_KEY_ID and SEAL_KEYS_TABLE, over a KMS
// whose ciphertexts have AWS's size; Lambda's function names). Their common stages stay within
// recordBudget and deployedRecordBudget, so every write of them costs one write unit (plus its
// index entries) with room for fields to come; their other stages (a failover, an early
// receipt, reconciliation) within 1 KB. The shapes it does not hold to a budget are logged
// with their largest stage: docs/benchmarks.md says what each byte costs and what they cost.
func TestRecordStaysUnderOneKB(t *testing.T) {
	shapes := []struct {
		shape
		budget int // for the common stages; 0: not held to one
	}{
		{shape{"local stack, derived key, code", uuidKey, code, keysStatic, localActor}, recordBudget},
		{shape{"local stack, derived key, reset URL", uuidKey, resetURL, keysStatic, localActor}, 0},
		{shape{"local stack, 200-character key, code", maxKey, code, keysStatic, localActor}, 0},
		{shape{"AWS, derived key, code", uuidKey, code, keysDeployed, lambdaActor}, deployedRecordBudget},
		{shape{"AWS, derived key, reset URL", uuidKey, resetURL, keysDeployed, lambdaActor}, 0},
		{shape{"AWS, 200-character key, reset URL", maxKey, resetURL, keysDeployed, lambdaActor}, 0},
		{shape{"AWS before the seal-keys table, derived key, code", uuidKey, code, keysEmbedded, lambdaActor}, 0},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			largest := stage{}
			for _, st := range lifeOf(t, sh.shape) {
				size := itemBytes(st.item)
				if size > itemBytes(largest.item) {
					largest = st
				}
				t.Logf("%-45s %4d bytes", st.name, size)
				limit := sh.budget
				if !st.common {
					limit = 1024
				}
				if sh.budget > 0 && size > limit {
					t.Errorf("%s: the record is %d bytes, over %d:\n%s", st.name, size, limit, breakdown(st.item))
				}
			}
			t.Logf("largest: %s, %d bytes:\n%s", largest.name, itemBytes(largest.item), breakdown(largest.item))
		})
	}
}

// breakdown lists av's attributes by size, largest first.
func breakdown(av map[string]ddbtypes.AttributeValue) string {
	names := make([]string, 0, len(av))
	for k := range av {
		names = append(names, k)
	}
	size := func(k string) int { return len(k) + valueBytes(av[k]) }
	sort.Slice(names, func(i, j int) bool {
		if size(names[i]) != size(names[j]) {
			return size(names[i]) > size(names[j])
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "  %-26s %4d = name %2d + value %3d\n", k, size(k), len(k), valueBytes(av[k]))
	}
	return b.String()
}
