package guardstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/dev/tablesetup"
	"github.com/resetnotify/resetnotify/dev/testenv"
	"github.com/resetnotify/resetnotify/shared/dynamostore"
	"github.com/resetnotify/resetnotify/shared/guardstore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// fixture is an Intake on DynamoDB Local with the real store and guard, fake sealing and
// queue, and a clock standing at 01:10 UTC tomorrow: every TTL it writes lies ahead of the
// wall clock (DynamoDB Local really removes expired items), and two hours fit in one day.
type fixture struct {
	in    *notify.Intake
	ddb   *dynamodb.Client
	names tables.Names
	clock *notifytest.Clock
	// expires is the expires_at of every request: fixed, so that a replay is the same request.
	expires time.Time
}

func newFixture(t *testing.T, limits notify.GuardLimits) *fixture {
	t.Helper()
	ddb := testenv.DynamoDB(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	names := tables.Names{Notifications: testenv.UniqueName(t, "notif"), Audit: testenv.UniqueName(t, "audit"), Guard: testenv.UniqueName(t, "guard")}
	if err := tablesetup.Create(ctx, ddb, names); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range []string{names.Notifications, names.Audit, names.Guard} {
			_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		}
	})
	y, m, d := time.Now().UTC().Date()
	clock := notifytest.NewClock(time.Date(y, m, d+1, 1, 10, 0, 0, time.UTC))
	in := &notify.Intake{
		Store: dynamostore.New(ddb, names.Notifications), Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{},
		Fingerprints: notifytest.Sealer{}, Queue: &notifytest.Queue{}, Clock: clock, Policy: notify.DefaultPolicy(), NewID: notifytest.IDs("n"),
		Guard: guardstore.New(ddb, names.Guard, limits), PrefixDigits: limits.PrefixDigits,
	}
	return &fixture{in: in, ddb: ddb, names: names, clock: clock, expires: clock.Now().Add(24 * time.Hour)}
}

func (f *fixture) request(t *testing.T, key, to string) notify.Request {
	t.Helper()
	body := fmt.Sprintf(`{"event_id":"e-%s","channel":"sms","purpose":"password_reset","to":%q,"params":{"code":"482913"},"expires_at":%q}`,
		key, to, f.expires.Format(time.RFC3339))
	req, err := notify.ParseRequest([]byte(body), key, f.clock.Now(), f.in.Policy)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// submit returns the outcome of one submission: "admitted", "replayed" or the refusal reason.
func (f *fixture) submit(t *testing.T, key, to string) (string, *notify.RefusedError) {
	t.Helper()
	sub, err := f.in.Submit(context.Background(), f.request(t, key, to))
	var refused *notify.RefusedError
	switch {
	case errors.As(err, &refused):
		return string(refused.Reason), refused
	case err != nil:
		t.Fatalf("submit %s: %v", key, err)
	case sub.Replayed:
		return "replayed", nil
	case sub.Record.State != notify.StateAccepted:
		return string(sub.Record.State), nil
	}
	return "admitted", nil
}

func (f *fixture) count(t *testing.T, table string) int {
	t.Helper()
	out, err := f.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Select: ddbtypes.SelectCount, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// dayCount reads the destination's counter item for the clock's day.
func (f *fixture) dayCount(t *testing.T, to string) int {
	t.Helper()
	key := "d#" + f.in.Hasher.DestinationFP(to) + "#" + f.clock.Now().Format("20060102")
	out, err := f.ddb.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.names.Guard), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{tables.GuardKey: &ddbtypes.AttributeValueMemberS{Value: key}}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if v, ok := out.Item[tables.GuardDayCount]; ok {
		if err := attributevalue.Unmarshal(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := out.Item[tables.GuardTTL]; len(out.Item) > 0 && !ok {
		t.Errorf("counter item %s has no %s", key, tables.GuardTTL)
	}
	return n
}

func TestConcurrentAdmissionsForOneNumber(t *testing.T) {
	f := newFixture(t, notify.GuardLimits{PerHour: 5, PerDay: 10, PrefixDigits: 6})
	const callers, to = 32, "+447700900123"
	outcomes := make([]string, callers)
	retry := make([]time.Duration, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			got, refused := f.submit(t, fmt.Sprintf("k-%02d", i), to)
			outcomes[i] = got
			if refused != nil {
				retry[i] = refused.RetryAfter
			}
		})
	}
	wg.Wait()
	var admitted []string
	tally := map[string]int{}
	for i, o := range outcomes {
		tally[o]++
		if o == "admitted" {
			admitted = append(admitted, fmt.Sprintf("k-%02d", i))
		} else if retry[i] != 50*time.Minute {
			t.Errorf("k-%02d: Retry-After %s, want 50m (the end of the clock hour)", i, retry[i])
		}
	}
	if tally["admitted"] != 5 || tally[string(notify.RefusedDestinationHour)] != 27 {
		t.Fatalf("outcomes %v, want 5 admitted and 27 %s", tally, notify.RefusedDestinationHour)
	}
	if n := f.count(t, f.names.Notifications); n != 5 {
		t.Errorf("%d records stored, want 5 (a refusal stores none)", n)
	}
	// Replays of the admitted five, concurrently and twice each, are neither counted nor refused.
	replays := make([]string, 2*len(admitted))
	for i := range replays {
		wg.Go(func() { replays[i], _ = f.submit(t, admitted[i/2], to) })
	}
	wg.Wait()
	for i, o := range replays {
		if o != "replayed" {
			t.Errorf("replay of %s: %s, want replayed", admitted[i/2], o)
		}
	}
	if n := f.dayCount(t, to); n != 5 {
		t.Errorf("day count %d after replays, want 5", n)
	}
}

func TestWindowsExpire(t *testing.T) {
	f := newFixture(t, notify.GuardLimits{PerHour: 2, PerDay: 3, PrefixDigits: 6})
	const to = "+14155550100"
	for _, step := range []struct {
		advance  time.Duration
		key      string
		want     string
		retryFor time.Duration
	}{
		{0, "a", "admitted", 0},
		{0, "b", "admitted", 0},
		{0, "c", string(notify.RefusedDestinationHour), 50 * time.Minute},
		// The next clock hour: the refused key is admitted on its retry.
		{time.Hour, "c", "admitted", 0},
		{0, "d", string(notify.RefusedDestinationDay), 21*time.Hour + 50*time.Minute},
		{0, "a", "replayed", 0},
		// The next day (still before the request expires).
		{22 * time.Hour, "d", "admitted", 0},
	} {
		f.clock.Advance(step.advance)
		got, refused := f.submit(t, step.key, to)
		if got != step.want {
			t.Fatalf("%s at %s: %s, want %s", step.key, f.clock.Now().Format(time.TimeOnly), got, step.want)
		}
		if refused != nil && refused.RetryAfter != step.retryFor {
			t.Errorf("%s: Retry-After %s, want %s", step.key, refused.RetryAfter, step.retryFor)
		}
	}
}

func TestPrefixVelocity(t *testing.T) {
	f := newFixture(t, notify.GuardLimits{PerHour: 5, PerDay: 10, PrefixDigits: 8, PrefixPerMinute: 3})
	for _, step := range []struct{ key, to, want string }{
		{"s1", "+447911120001", "admitted"},
		{"s2", "+447911120002", "admitted"},
		{"s3", "+447911120003", "admitted"},
		{"s4", "+447911120004", string(notify.RefusedPrefixVelocity)},
		{"s5", "+447911120005", string(notify.RefusedPrefixVelocity)},
		// Another prefix is unaffected, and so is a destination already seen today.
		{"o1", "+447922220001", "admitted"},
		{"s1b", "+447911120001", "admitted"},
	} {
		if got, _ := f.submit(t, step.key, step.to); got != step.want {
			t.Fatalf("%s: %s, want %s", step.key, got, step.want)
		}
	}
	if n := f.dayCount(t, "+447911120004"); n != 0 {
		t.Errorf("a prefix refusal left the destination's count at %d, want 0", n)
	}
	f.clock.Advance(time.Minute)
	if got, _ := f.submit(t, "s4", "+447911120004"); got != "admitted" {
		t.Errorf("s4 in the next minute: %s, want admitted", got)
	}
}

func TestOutsideAllowListWritesNothing(t *testing.T) {
	f := newFixture(t, notify.DefaultGuardLimits())
	f.in.Countries = notifytest.Regions{"+1": "US", "+44": "GB", "+49": "DE"}.Countries("GB", "DE")
	if got, refused := f.submit(t, "x", "+14155550100"); got != string(notify.RefusedCountry) || refused.CountryCode != "US" {
		t.Fatalf("outcome %s %+v, want %s for US", got, refused, notify.RefusedCountry)
	}
	if n, m := f.count(t, f.names.Notifications), f.count(t, f.names.Guard); n != 0 || m != 0 {
		t.Errorf("%d records and %d counters written, want none", n, m)
	}
	if got, _ := f.submit(t, "y", "+447700900123"); got != "admitted" {
		t.Errorf("a listed code: %s, want admitted", got)
	}
}
