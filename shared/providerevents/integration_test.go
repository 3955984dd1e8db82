package providerevents_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/endusersms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/tables"
	providereventswire "github.com/resetnotify/resetnotify/shared/wire/providerevents"
	"github.com/resetnotify/resetnotify/shared/wire/reconcile"
)

// countingDB counts PutItem calls, to show what recording costs.
type countingDB struct {
	*dynamodb.Client
	puts atomic.Int64
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	return c.Client.PutItem(ctx, in, o...)
}

// env is a set of uniquely named tables on DynamoDB Local.
type env struct {
	db    *dynamodb.Client
	names tables.Names
	store *dynamostore.Store
}

func newEnv(t *testing.T) env {
	t.Helper()
	db := testenv.DynamoDB(t)
	names := tables.Names{
		Notifications: testenv.UniqueName(t, "notif"),
		Audit:         testenv.UniqueName(t, "audit"),
		Receipts:      testenv.UniqueName(t, "receipts"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tablesetup.Create(ctx, db, names); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit, names.Receipts} {
			_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	return env{db: db, names: names, store: dynamostore.New(db, names.Notifications)}
}

// record admits a record for notification nid that expires in 15 minutes (DynamoDB Local
// really runs TTL, so times follow the wall clock) and moves it through the changes.
func (e env) record(t *testing.T, key, nid string, path ...notify.Change) notify.Record {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	req := notify.Request{
		IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: destination, Locale: "en", Params: map[string]string{notify.ParamCode: "123456"}, ExpiresAt: now.Add(15 * time.Minute),
	}
	rec := notify.NewRecord(req, notify.Admission{NotificationID: nid, Sealed: []byte("sealed"), DestinationFP: "fp"}, now, notify.DefaultPolicy())
	if _, _, err := e.store.Admit(ctx, rec); err != nil {
		t.Fatal(err)
	}
	for _, ch := range path {
		if ch.To == notify.StateDispatching {
			ch.LeaseUntil = now.Add(time.Minute)
		}
		next, err := rec.Apply(ch, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.Transition(ctx, rec, next); err != nil {
			t.Fatal(err)
		}
		rec = next
	}
	return rec
}

// getenv returns the provider-events variables for e's tables.
func (e env) getenv(extra map[string]string) func(string) string {
	m := map[string]string{
		config.EnvNotificationsTable: e.names.Notifications,
		config.EnvReceiptsTable:      e.names.Receipts,
	}
	for k, v := range extra {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// scan returns every item of table as text, to look for what must not be there.
func (e env) scan(t *testing.T, table string) string {
	t.Helper()
	out, err := e.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, it := range out.Items {
		for k, v := range it {
			switch v := v.(type) {
			case *ddbtypes.AttributeValueMemberS:
				fmt.Fprintf(&b, "%s=%s\n", k, v.Value)
			case *ddbtypes.AttributeValueMemberN:
				fmt.Fprintf(&b, "%s=%s\n", k, v.Value)
			case *ddbtypes.AttributeValueMemberB:
				fmt.Fprintf(&b, "%s=%s\n", k, v.Value)
			default:
				fmt.Fprintf(&b, "%s=%v\n", k, v)
			}
		}
	}
	return b.String()
}

func awsConfig(t *testing.T) aws.Config {
	t.Helper()
	// The same resolution a Lambda function uses: `make test` points AWS_ENDPOINT_URL_DYNAMODB
	// at DynamoDB Local.
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStorePutOnDynamoDBLocal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	calls := &countingDB{Client: e.db}
	clock := notifytest.NewClock(time.Now().UTC().Truncate(time.Second))
	store := providerevents.NewStore(calls, e.names.Receipts, 48*time.Hour, clock)

	steps := []struct {
		name        string
		in          providerevents.Receipt
		wantStatus  sms.ReceiptStatus
		wantChanged bool
	}{
		{"first, intermediate", receipt(a1, sms.ReceiptNone), sms.ReceiptNone, true},
		{"same again", receipt(a1, sms.ReceiptNone), sms.ReceiptNone, false},
		{"final over intermediate", receipt(a1, sms.ReceiptDelivered), sms.ReceiptDelivered, true},
		{"final again", receipt(a1, sms.ReceiptDelivered), sms.ReceiptDelivered, false},
		{"intermediate after final", receipt(a1, sms.ReceiptNone), sms.ReceiptDelivered, false},
		{"contradicting final", receipt(a1, sms.ReceiptUndelivered), sms.ReceiptDelivered, false},
		{"another attempt", receipt(a2, sms.ReceiptUndelivered), sms.ReceiptUndelivered, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			calls.puts.Store(0)
			clock.Advance(time.Second)
			got, changed, err := store.Put(ctx, s.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != s.wantStatus || changed != s.wantChanged || got.AttemptRef != s.in.AttemptRef {
				t.Errorf("Put = %s %s changed %v, want %s changed %v", got.AttemptRef, got.Status, changed, s.wantStatus, s.wantChanged)
			}
			if n := calls.puts.Load(); n != 1 {
				t.Errorf("%d PutItem calls, want 1", n)
			}
			read, ok, err := store.Get(ctx, s.in.AttemptRef)
			if err != nil || !ok || read.Status != s.wantStatus || !read.At.Equal(s.in.At) || read.MessageID != "msg-1" {
				t.Errorf("Get = %+v, %v, %v", read, ok, err)
			}
		})
	}

	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.names.Receipts),
		Key:       map[string]ddbtypes.AttributeValue{tables.ReceiptAttemptRef: &ddbtypes.AttributeValueMemberS{Value: a1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ttl, ok := out.Item[tables.ReceiptTTL].(*ddbtypes.AttributeValueMemberN)
	recordedAt, _ := out.Item[tables.ReceiptRecordedAt].(*ddbtypes.AttributeValueMemberS)
	if !ok || recordedAt == nil {
		t.Fatalf("item without ttl or recorded_at: %v", out.Item)
	}
	rec, _ := tables.ParseTime(recordedAt.Value)
	if want := fmt.Sprint(rec.Add(48 * time.Hour).Unix()); ttl.Value != want {
		t.Errorf("ttl %s, want recorded_at + 48h = %s", ttl.Value, want)
	}
	if nid, _ := out.Item[tables.ReceiptNotificationID].(*ddbtypes.AttributeValueMemberS); nid == nil || nid.Value != id {
		t.Errorf("notification_id %v, want %s", out.Item[tables.ReceiptNotificationID], id)
	}

	if _, ok, err := store.FindByAttemptRef(ctx, sms.AttemptRef(id, 9)); ok || err != nil {
		t.Errorf("FindByAttemptRef of an unknown attempt = %v, %v", ok, err)
	}
}

// TestEndUserSMSLookupReadsReceipts reconciles an AWS End User Messaging SMS attempt the way the
// reconcile worker does: through endusersms.NewLookup over the receipts store.
func TestEndUserSMSLookupReadsReceipts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	reader, err := reconcile.ReceiptReader(awsConfig(t), e.getenv(nil))
	if err != nil || reader == nil {
		t.Fatalf("NewReceiptReader = %v, %v", reader, err)
	}
	h, err := providereventswire.New(ctx, awsConfig(t), e.getenv(nil), &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	clock := notifytest.NewClock(now.Add(10 * time.Minute))
	lookup := endusersms.NewLookup(reader, 5*time.Minute, clock)

	// The attempt is waiting for reconciliation; the delivery event arrives meanwhile.
	e.record(t, "k", id, lease, timedOut)
	if err := h.HandleSNS(ctx, snsEvent(eumEvent(func(m map[string]any) { m["eventType"] = "TEXT_SUCCESSFUL" }))); err != nil {
		t.Fatal(err)
	}
	got, err := lookup.Lookup(ctx, sms.LookupRequest{AttemptRef: a1, AttemptedAt: now})
	if err != nil || got.Status != sms.LookupFound || got.MessageID != "aws-msg-1" || got.Receipt != sms.ReceiptNone {
		t.Errorf("lookup after TEXT_SUCCESSFUL = %+v, %v", got, err)
	}
	if err := h.HandleSNS(ctx, snsEvent(eumEvent(nil))); err != nil {
		t.Fatal(err)
	}
	got, err = lookup.Lookup(ctx, sms.LookupRequest{AttemptRef: a1, AttemptedAt: now})
	if err != nil || got.Status != sms.LookupFound || got.Receipt != sms.ReceiptDelivered || !got.ReceiptAt.Equal(t0.Add(7*time.Second)) {
		t.Errorf("lookup after TEXT_DELIVERED = %+v, %v", got, err)
	}
	if rec, _ := e.store.Get(ctx, "k"); rec.State != notify.StateDispatchUnknown {
		t.Errorf("record %s: a receipt for a dispatch_unknown record must leave it to reconciliation", rec.State)
	}
	// Ten minutes after the attempt, past the five-minute window, and still no event: events
	// can be dropped or late, so this is inconclusive, never "not found" (which would
	// authorise a re-send).
	got, err = lookup.Lookup(ctx, sms.LookupRequest{AttemptRef: a2, AttemptedAt: now})
	if err != nil || got.Status != sms.LookupInconclusive || got.Detail != "no_receipt" || got.Reason() != notify.ReasonReconcileInconclusive {
		t.Errorf("lookup of an attempt without events = %+v, %v; want inconclusive/no_receipt", got, err)
	}

	none, err := reconcile.ReceiptReader(awsConfig(t), func(string) string { return "" })
	if err != nil || none != nil {
		t.Errorf("NewReceiptReader without RECEIPTS_TABLE = %v, %v; want nil, nil", none, err)
	}
}

// TestSNSSampleEventOnDynamoDBLocal runs events/provider-events-sns-delivered.json through the
// handler that the Lambda main builds: the intermediate event is stored, the sent record
// becomes delivered at once (the final receipt is not stored: the record's transition holds
// it), a repeat changes nothing, and neither table holds the event's phone numbers.
func TestSNSSampleEventOnDynamoDBLocal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var logs strings.Builder
	h, err := providereventswire.New(ctx, awsConfig(t), e.getenv(nil), &logs)
	if err != nil {
		t.Fatal(err)
	}
	// Sent through End User Messaging as the sample's message: a receipt is applied only to
	// the attempt of the provider and message it names.
	before := e.record(t, "order-4711-reset-1", id, lease, notify.Change{
		To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: endusersms.Provider,
		ProviderMessageID: "9539975a-e71f-45f3-b496-8d98dc098a77",
	})

	for _, file := range []string{"provider-events-sns-successful.json", "provider-events-sns-delivered.json", "provider-events-sns-delivered.json"} {
		if out, err := h.Handle(ctx, readSample(t, file)); err != nil || out != nil {
			t.Fatalf("Handle(%s) = %v, %v", file, out, err)
		}
	}
	rec, err := e.store.Get(ctx, "order-4711-reset-1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != notify.StateDelivered || rec.Reason != notify.ReasonReceiptDelivered || rec.Version != before.Version+1 {
		t.Errorf("record %s/%s v%d, want delivered/RECEIPT_DELIVERED v%d", rec.State, rec.Reason, rec.Version, before.Version+1)
	}
	if rec.Provider != endusersms.Provider || rec.ProviderMessageID != "9539975a-e71f-45f3-b496-8d98dc098a77" || rec.Actor.String() == "" {
		t.Errorf("record %+v: its transition must hold the receipt's provider and message ID, and who applied it", rec)
	}
	stored, ok, err := providerevents.NewStore(e.db, e.names.Receipts, 0, nil).Get(ctx, a1)
	if err != nil || !ok || stored.Status != sms.ReceiptNone || stored.MessageID != "9539975a-e71f-45f3-b496-8d98dc098a77" ||
		stored.Detail != "TEXT_SUCCESSFUL" || stored.Provider != endusersms.Provider {
		t.Errorf("stored receipt %+v, %v, %v; want the intermediate one only", stored, ok, err)
	}
	for _, table := range []string{e.names.Receipts, e.names.Notifications} {
		dump := e.scan(t, table)
		for _, number := range []string{destination, origination, strings.TrimPrefix(destination, "+"), strings.TrimPrefix(origination, "+")} {
			if strings.Contains(dump, number) {
				t.Errorf("table %s holds %s:\n%s", table, number, dump)
			}
		}
	}
	if strings.Contains(logs.String(), strings.TrimPrefix(destination, "+")) {
		t.Errorf("logs hold the number:\n%s", logs.String())
	}
}

// TestSimulatorWebhookEndToEnd sends through the simulator with simclient, as the dispatch
// worker does, and lets the simulator post its receipt to the webhook route of template.yaml,
// served by localapi as the local stack serves it.
func TestSimulatorWebhookEndToEnd(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const hookToken = "e2e-webhook-token-0123456789"
	logs := &lockedBuilder{b: &strings.Builder{}}
	h, err := providereventswire.New(ctx, awsConfig(t), e.getenv(map[string]string{config.EnvSimulatorWebhookToken: hookToken}), logs)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := localapi.RoutesFromTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(localapi.NewServer(routes, map[string]localapi.HandlerFunc{"SimulatorWebhookFunction": h.HandleSimulatorWebhook}))
	t.Cleanup(api.Close)

	sim, simURL := smssimtest.Start(t, smssim.Config{
		WebhookURL:    api.URL + "/v1/provider-events/simulator",
		WebhookToken:  hookToken,
		DeliveryDelay: 200 * time.Millisecond,
	})
	const refused = "+15555550101"
	sim.SetReceipt(refused, simapi.StatusUndelivered)
	client, err := simclient.New(simclient.Config{BaseURL: simURL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, key, nid, to string
		want               notify.State
		wantReason         notify.Reason
	}{
		{"delivered", "k-delivered", "01JC60000000000000000000D1", destination, notify.StateDelivered, notify.ReasonReceiptDelivered},
		{"undelivered", "k-undelivered", "01JC60000000000000000000U1", refused, notify.StateUndelivered, notify.ReasonReceiptFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.record(t, tc.key, tc.nid, lease)
			ref := sms.AttemptRef(tc.nid, rec.Attempt)
			out := client.Send(ctx, sms.SendRequest{To: tc.to, Body: "Your code is 123456", AttemptRef: ref, ValidityPeriod: time.Minute})
			if out.Class != sms.ClassAccepted {
				t.Fatalf("send: %+v", out)
			}
			// The receipt may arrive before this transition: it is then held on the record, and
			// the transition, done as the dispatch worker does it, applies it.
			recordSent(t, e.store, rec, notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: simclient.Provider, ProviderMessageID: out.MessageID})
			got := waitForState(t, e.store, tc.key, tc.want)
			if got.Reason != tc.wantReason || got.ProviderMessageID != out.MessageID {
				t.Errorf("record %s/%s %s, want %s %s", got.State, got.Reason, got.ProviderMessageID, tc.wantReason, out.MessageID)
			}
			// Stored only when it came while the record was dispatching (held); applied at
			// once to the sent record, it is not.
			stored, ok, err := providerevents.NewStore(e.db, e.names.Receipts, 0, nil).Get(ctx, ref)
			if err != nil || (ok && (stored.MessageID != out.MessageID || stored.Provider != simclient.Provider)) {
				t.Errorf("stored receipt %+v, %v, %v", stored, ok, err)
			}
		})
	}
	dump := e.scan(t, e.names.Receipts)
	if strings.Contains(dump, strings.TrimPrefix(destination, "+")) || strings.Contains(dump, strings.TrimPrefix(refused, "+")) || strings.Contains(dump, "123456") {
		t.Errorf("receipts hold the number or the body:\n%s", dump)
	}
	if strings.Contains(logs.String(), hookToken) {
		t.Errorf("logs hold the webhook token")
	}
}

// recordSent writes ch (to sent) as the dispatch worker does: over the record again when a
// receipt was held on it meanwhile, and then applying that receipt.
func recordSent(t *testing.T, store *dynamostore.Store, rec notify.Record, ch notify.Change) {
	t.Helper()
	ctx := context.Background()
	next, err := rec.Apply(ch, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	err = store.Transition(ctx, rec, next)
	if cur, ok := notify.CurrentOf(err); ok && cur.Version == rec.Version && cur.EarlyReceipt.Held() {
		if next, err = cur.Apply(ch, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		err = store.Transition(ctx, cur, next)
	}
	if err != nil {
		t.Fatal(err)
	}
	if held, ok := next.HeldReceipt(); ok {
		applied, err := next.Apply(held, time.Now().UTC())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Transition(ctx, next, applied); err != nil {
			t.Fatal(err)
		}
	}
}

// waitForState polls the record for key until it reaches want, failing after 10 seconds.
func waitForState(t *testing.T, store *dynamostore.Store, key string, want notify.State) notify.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := store.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == want {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %s still %s/%s, want %s", key, rec.State, rec.Reason, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuilder is a strings.Builder safe for the handler's concurrent log lines.
type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
