package convstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/guardstore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// fixture is an Intake on DynamoDB Local with the real record store, guard and conversion
// store, and a clock at 01:10 UTC tomorrow, so every TTL written lies ahead of the wall clock.
type fixture struct {
	in    *notify.Service
	conv  *notify.Conversions
	store *convstore.Store
	recs  *dynamostore.Store
	ddb   *dynamodb.Client
	names tables.Names
	clock *notifytest.Clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ddb := testenv.DynamoDB(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit"),
		Guard: testenv.UniqueName(t, "guard"), Conversions: testenv.UniqueName(t, "conv")}
	if err := tablesetup.Create(ctx, ddb, names); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit, names.Guard, names.Conversions} {
			_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	y, m, d := time.Now().UTC().Date()
	clock := notifytest.NewClock(time.Date(y, m, d+1, 1, 10, 0, 0, time.UTC))
	policy := notify.DefaultConversionPolicy()
	policy.MinSends = 10
	store := convstore.New(ddb, names.Conversions, policy.Window)
	conv := &notify.Conversions{Store: store, Policy: policy, Clock: clock}
	limits := notify.DefaultGuardLimits()
	recs := dynamostore.New(ddb, names.Notifications)
	in := &notify.Service{
		Store: recs, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{},
		Fingerprints: notifytest.Sealer{}, Queue: &notifytest.Queue{}, Clock: clock, Policy: notify.DefaultPolicy(), NewID: notifytest.IDs("n"),
		Guard: guardstore.New(ddb, names.Guard, limits), PrefixDigits: limits.PrefixDigits, Conversions: conv,
	}
	return &fixture{in: in, conv: conv, store: store, recs: recs, ddb: ddb, names: names, clock: clock}
}

// send admits key to the number to and moves it to sent, as dispatch does, then counts the
// send. It returns the refusal, if admission was refused, and whether the send blocked.
func (f *fixture) send(t *testing.T, key, to string) (*notify.RefusedError, bool) {
	t.Helper()
	ctx := context.Background()
	now := f.clock.Now()
	body := fmt.Sprintf(`{"event_id":"e-%s","channel":"sms","purpose":"password_reset","to":%q,"params":{"code":"482913"},"expires_at":%q}`,
		key, to, now.Add(15*time.Minute).Format(time.RFC3339))
	req, err := notify.ParseRequest([]byte(body), key, now, f.in.Policy)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := f.in.Submit(ctx, req)
	var refused *notify.RefusedError
	if errors.As(err, &refused) {
		return refused, false
	} else if err != nil {
		t.Fatal(err)
	}
	leased, _ := sub.Record.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "lt"}, now)
	sent, _ := leased.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "pm-" + key}, now)
	for _, step := range [][2]notify.Record{{sub.Record, leased}, {leased, sent}} {
		if err := f.recs.Transition(ctx, step[0], step[1]); err != nil {
			t.Fatal(err)
		}
	}
	_, blocked, err := f.conv.Sent(ctx, sent)
	if err != nil {
		t.Fatal(err)
	}
	return nil, blocked
}

func TestBlockedAfterUnconvertedSendsOnDynamoDB(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A converting range beside: +1 646 555.
	for i := range 12 {
		key := fmt.Sprintf("legit-%d", i)
		if refused, blocked := f.send(t, key, fmt.Sprintf("+1646555%04d", i)); refused != nil || blocked {
			t.Fatalf("legit send %d: refused %v blocked %v", i, refused, blocked)
		}
		if i%4 != 0 {
			if _, err := f.in.Convert(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		f.clock.Advance(5 * time.Second)
	}
	// Pumping: +1 212 555, never converted. The tenth send blocks.
	for i := range 10 {
		refused, blocked := f.send(t, fmt.Sprintf("pump-%d", i), fmt.Sprintf("+1212555%04d", i))
		if refused != nil || blocked != (i == 9) {
			t.Fatalf("pump send %d: refused %v blocked %v", i, refused, blocked)
		}
		f.clock.Advance(5 * time.Second)
	}
	refused, _ := f.send(t, "pump-next", "+12125559999")
	if refused == nil || refused.Reason != notify.RefusedPrefixBlocked || refused.RetryAfter < 11*time.Hour {
		t.Fatalf("admission after the block: %+v", refused)
	}
	if refused, _ := f.send(t, "legit-next", "+16465559999"); refused != nil {
		t.Fatalf("the converting range was refused: %+v", refused)
	}
	legitFP := f.in.Hasher.DestinationFP("prefix:+164655")
	c, err := f.store.Counts(ctx, "p#"+legitFP, f.clock.Now().Add(-time.Hour), f.clock.Now())
	if err != nil || c.Sent != 13 || c.Converted != 9 {
		t.Errorf("legit prefix counts %+v %v, want 13 sent, 9 converted", c, err)
	}
	// Another intake instance sees the block from the table.
	other := &notify.Conversions{Store: f.store, Policy: f.conv.Policy, Clock: f.clock}
	if _, blocked, err := other.Blocked(ctx, f.in.Hasher.DestinationFP("prefix:+121255"), f.clock.Now()); !blocked || err != nil {
		t.Errorf("a fresh cache does not see the block: %v %v", blocked, err)
	}
	// After the period the range is served again and judged afresh.
	f.clock.Advance(f.conv.Policy.BlockFor)
	if refused, blocked := f.send(t, "pump-later", "+12125559998"); refused != nil || blocked {
		t.Errorf("after the period: refused %+v, blocked %v", refused, blocked)
	}
	f.scanHoldsNoNumber(t)
}

func TestOperatorDecisionsAndHistory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	fp := f.in.Hasher.DestinationFP("prefix:+121255")
	if _, err := f.conv.Override(ctx, fp, true, 48*time.Hour, "arn:aws:iam::123456789012:user/ops", "partner's test range"); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if refused, blocked := f.send(t, fmt.Sprintf("p-%d", i), fmt.Sprintf("+1212555%04d", i)); refused != nil || blocked {
			t.Fatalf("send %d under an allow: refused %v blocked %v", i, refused, blocked)
		}
	}
	// An automatic decision written directly is refused by the condition too.
	if ok, err := f.store.Decide(ctx, notify.PrefixBlock{PrefixFP: fp, Until: f.clock.Now().Add(time.Hour), By: notify.BlockedByConversion, At: f.clock.Now()}); ok || err != nil {
		t.Fatalf("automatic decision over an allow: written %v, %v", ok, err)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.conv.Override(ctx, fp, false, time.Hour, "arn:aws:iam::123456789012:user/ops", "pumping after all"); err != nil {
		t.Fatal(err)
	}
	if refused, _ := f.send(t, "p-blocked", "+12125559999"); refused == nil || refused.Reason != notify.RefusedPrefixBlocked {
		t.Fatalf("send under an operator's block: %+v", refused)
	}
	hist, err := f.store.History(ctx, fp)
	if err != nil || len(hist) != 2 || !hist[0].Allow || hist[1].Allow || hist[1].Note != "pumping after all" {
		t.Fatalf("history %+v %v", hist, err)
	}
	f.histories(t)
	f.scanHoldsNoNumber(t)
}

// histories: an automatic block's history item is kept under "a#", the partition dispatch
// may write, an operator's under "d#", which only prefixctl's role may; History merges both
// in time order.
func (f *fixture) histories(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	fp := f.in.Hasher.DestinationFP("prefix:+164655")
	if ok, err := f.store.Decide(ctx, notify.PrefixBlock{PrefixFP: fp, Until: f.clock.Now().Add(time.Hour), By: notify.BlockedByConversion, At: f.clock.Now()}); !ok || err != nil {
		t.Fatalf("automatic block: written %v, %v", ok, err)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.conv.Override(ctx, fp, true, time.Hour, "arn:aws:iam::123456789012:user/ops", "lifted"); err != nil {
		t.Fatal(err)
	}
	count := func(pk string) int {
		out, err := f.ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(f.names.Conversions), KeyConditionExpression: aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: pk}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Items)
	}
	if a, d := count("a#"+fp), count("d#"+fp); a != 1 || d != 1 {
		t.Errorf("history items: %d under a#, %d under d#; want the automatic block's under a#, the operator's under d#", a, d)
	}
	hist, err := f.store.History(ctx, fp)
	if err != nil || len(hist) != 2 || hist[0].By != notify.BlockedByConversion || !hist[1].Allow {
		t.Fatalf("history %+v %v; want the automatic block, then the allow", hist, err)
	}
}

// scanHoldsNoNumber checks that no item of the conversion table holds a number or a prefix's
// digits: every string and number attribute, keys included.
func (f *fixture) scanHoldsNoNumber(t *testing.T) {
	t.Helper()
	out, err := f.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.names.Conversions)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) == 0 {
		t.Fatal("conversion table is empty")
	}
	for _, item := range out.Items {
		var m map[string]any
		if err := attributevalue.UnmarshalMap(item, &m); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprint(m)
		for _, needle := range []string{"212555", "646555", "+1212", "+1646", "2125559", "6465559"} {
			if strings.Contains(text, needle) {
				t.Errorf("conversion item holds %q: %s", needle, text)
			}
		}
		if _, ok := m[tables.ConversionTTL]; !ok {
			t.Errorf("item without %s: %s", tables.ConversionTTL, text)
		}
	}
}

// countingAPI counts the UpdateItem calls made through it and the write units they consumed.
type countingAPI struct {
	convstore.API
	mu      sync.Mutex
	updates int
	units   float64
}

func (c *countingAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = ddbtypes.ReturnConsumedCapacityTotal
	out, err := c.API.UpdateItem(ctx, in, optFns...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates++
	if err == nil && out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits != nil {
		c.units += *out.ConsumedCapacity.CapacityUnits
	}
	return out, err
}

// TestOnlyThePrefixIsCounted: a send and a conversion each add to their prefix's hour and to
// nothing else (one UpdateItem, one write unit): no counter item per country, which nothing
// reads (the per-country figures are the ConversionSends and Conversions metrics).
func TestOnlyThePrefixIsCounted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	api := &countingAPI{API: f.ddb}
	store := convstore.New(api, f.names.Conversions, 24*time.Hour)
	now := f.clock.Now()
	c, err := store.CountSent(ctx, "pfx", now, now.Add(-time.Hour))
	if err != nil || c != (notify.ConversionCounts{Sent: 1}) {
		t.Fatalf("CountSent = %+v, %v", c, err)
	}
	if api.updates != 1 || api.units != 1 {
		t.Errorf("a send made %d UpdateItem, %.1f write units; want 1 and 1", api.updates, api.units)
	}
	if err := store.CountConverted(ctx, "pfx", now); err != nil {
		t.Fatal(err)
	}
	if api.updates != 2 || api.units != 2 {
		t.Errorf("a send and a conversion made %d UpdateItem, %.1f write units; want 2 and 2", api.updates, api.units)
	}
	out, err := f.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(f.names.Conversions)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, item := range out.Items {
		var k struct {
			PK string `dynamodbav:"pk"`
		}
		if err := attributevalue.UnmarshalMap(item, &k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.PK)
	}
	if len(keys) != 1 || keys[0] != "p#pfx" {
		t.Errorf("counter items %q, want only the prefix's, p#pfx", keys)
	}
	if got, err := store.Counts(ctx, "p#pfx", now, now); err != nil || got != (notify.ConversionCounts{Sent: 1, Converted: 1}) {
		t.Errorf("prefix counts %+v, %v; want 1 sent, 1 converted", got, err)
	}
}
