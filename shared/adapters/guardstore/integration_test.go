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

	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/guardstore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// fixture is an Intake on DynamoDB Local with the real store and guard, fake sealing and
// queue, and a clock that starts at 01:10 UTC tomorrow and runs with the wall clock: every TTL
// it writes lies ahead of the wall clock (DynamoDB Local really removes expired items), two
// hours fit in one day, and a duplicate waiting for a creator's decision sees time pass.
type fixture struct {
	in    *notify.Service
	ddb   *dynamodb.Client
	names tables.Names
	clock *runningClock
	queue *notifytest.Queue
	// expires is the expires_at of every request: fixed, so that a replay is the same request.
	expires time.Time
}

// runningClock is a notify.Clock at base plus the real time since start plus what Advance
// added.
type runningClock struct {
	mu     sync.Mutex
	base   time.Time
	start  time.Time
	offset time.Duration
}

func (c *runningClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(time.Since(c.start) + c.offset)
}

func (c *runningClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
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
	clock := &runningClock{base: time.Date(y, m, d+1, 1, 10, 0, 0, time.UTC), start: time.Now()}
	queue := &notifytest.Queue{}
	in := &notify.Service{
		Store: dynamostore.New(ddb, names.Notifications), Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{},
		Fingerprints: notifytest.Sealer{}, Queue: queue, Clock: clock, Policy: notify.DefaultPolicy(), NewID: notifytest.IDs("n"),
		Guard: guardstore.New(ddb, names.Guard, limits), PrefixDigits: limits.PrefixDigits,
	}
	return &fixture{in: in, ddb: ddb, names: names, clock: clock, queue: queue, expires: clock.base.Add(24 * time.Hour)}
}

func (f *fixture) request(t *testing.T, key, to string) notify.Request {
	t.Helper()
	body := fmt.Sprintf(`{"event_id":"e-%s","channel":"sms","purpose":"password_reset","to":%q,"params":{"code":"482913"},"expires_at":%q}`,
		key, to, f.expires.Format(time.RFC3339))
	req, err := notify.ParseRequest([]byte(body), key, f.clock.base, f.in.Policy)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// submit returns the outcome of one submission: "admitted", "replayed" or the refusal reason
// (the same for the creator's refusal and its repeats).
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
		} else if retry[i] > 50*time.Minute || retry[i] < 49*time.Minute {
			t.Errorf("k-%02d: Retry-After %s, want up to 50m (the end of the clock hour)", i, retry[i])
		}
	}
	if tally["admitted"] != 5 || tally[string(notify.RefusedDestinationHour)] != 27 {
		t.Fatalf("outcomes %v, want 5 admitted and 27 %s", tally, notify.RefusedDestinationHour)
	}
	if n := f.countRefused(t); n != 27 {
		t.Errorf("%d refused records stored, want 27 (a refusal is recorded on its record)", n)
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
		// The next clock hour: a new key is admitted; the refused key stays refused.
		{time.Hour, "c2", "admitted", 0},
		{0, "c", string(notify.RefusedDestinationHour), 0},
		{0, "d", string(notify.RefusedDestinationDay), 21*time.Hour + 50*time.Minute},
		{0, "a", "replayed", 0},
		// The next day (still before the request expires).
		{22 * time.Hour, "d2", "admitted", 0},
	} {
		f.clock.Advance(step.advance)
		got, refused := f.submit(t, step.key, to)
		if got != step.want {
			t.Fatalf("%s at %s: %s, want %s", step.key, f.clock.Now().Format(time.TimeOnly), got, step.want)
		}
		if refused != nil && (refused.RetryAfter > step.retryFor || refused.RetryAfter < step.retryFor-time.Minute) {
			t.Errorf("%s: Retry-After %s, want up to %s", step.key, refused.RetryAfter, step.retryFor)
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
	if got, _ := f.submit(t, "s4b", "+447911120004"); got != "admitted" {
		t.Errorf("a new key for s4's number in the next minute: %s, want admitted", got)
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

// countRefused counts the refused records.
func (f *fixture) countRefused(t *testing.T) int {
	t.Helper()
	out, err := f.ddb.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(f.names.Notifications), ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("#s = :r"),
		ExpressionAttributeNames:  map[string]string{"#s": tables.AttrState},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":r": &ddbtypes.AttributeValueMemberS{Value: string(notify.StateRefused)}}})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// answer is what one caller got: "admitted" (for the creator and every replay of an admitted
// key alike), a refusal reason, or "error: ...".
func (f *fixture) answer(req notify.Request) string {
	sub, err := f.in.Submit(context.Background(), req)
	var refused *notify.RefusedError
	switch {
	case errors.As(err, &refused):
		return string(refused.Reason)
	case err != nil:
		return "error: " + err.Error()
	case sub.Record.State != notify.StateAccepted:
		return string(sub.Record.State)
	}
	return "admitted"
}

// TestDuplicatesGetOneAnswer sends 64 identical requests at once, for a fresh number, for one
// an admission short of its hourly limit, and for one at it: one record, at most one dispatch
// message, the same answer for every caller and no error.
func TestDuplicatesGetOneAnswer(t *testing.T) {
	const callers = 64
	for _, tc := range []struct {
		name  string
		prior int
		want  string
	}{
		{"fresh number", 0, "admitted"},
		{"one short of the hourly limit", 4, "admitted"},
		{"at the hourly limit", 5, string(notify.RefusedDestinationHour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, notify.DefaultGuardLimits())
			// A bound far above any DynamoDB Local call on a loaded machine, so that the creator
			// is never late here and the refusal case tests the refusal (a late creator answers
			// admitted with its duplicates: consistent, but not this case).
			f.in.DecisionBound = 5 * time.Second
			const to = "+447700900123"
			for i := range tc.prior {
				if got, _ := f.submit(t, fmt.Sprintf("prior-%d", i), to); got != "admitted" {
					t.Fatalf("prior admission %d: %s", i, got)
				}
			}
			req := f.request(t, "dup", to)
			answers := make([]string, callers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					<-start
					answers[i] = f.answer(req)
				})
			}
			close(start)
			wg.Wait()
			for i, a := range answers {
				if a != tc.want {
					t.Errorf("caller %d: %s, want %s", i, a, tc.want)
				}
			}
			if n := f.count(t, f.names.Notifications); n != tc.prior+1 {
				t.Errorf("%d records, want %d", n, tc.prior+1)
			}
			messages := 0
			for _, m := range f.queue.Sent() {
				if m.IdempotencyKey == "dup" {
					messages++
				}
			}
			if tc.want == "admitted" && messages != 1 || tc.want != "admitted" && messages != 0 {
				t.Errorf("%d dispatch messages for the duplicated key", messages)
			}
			wantCount := tc.prior + 1
			if tc.want != "admitted" {
				wantCount = tc.prior
			}
			if n := f.dayCount(t, to); n != wantCount {
				t.Errorf("day count %d, want %d (the creator alone counts)", n, wantCount)
			}
		})
	}
}

// TestPrefixCeilingUnderConcurrency submits 50 new numbers of one prefix, each twice at once
// with different keys, under a ceiling of 20 destinations per minute: at most 20 numbers are
// admitted, and no number is refused by the prefix once it holds a slot.
func TestPrefixCeilingUnderConcurrency(t *testing.T) {
	const numbers, ceiling = 50, 20
	f := newFixture(t, notify.GuardLimits{PerHour: 5, PerDay: 10, PrefixDigits: 8, PrefixPerMinute: ceiling})
	f.in.DecisionBound = 5 * time.Second
	answers := make([][2]string, numbers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for n := range numbers {
		to := fmt.Sprintf("+4479111%05d", n)
		for k := range 2 {
			key := fmt.Sprintf("n%02d-%d", n, k)
			req := f.request(t, key, to)
			wg.Go(func() {
				<-start
				answers[n][k] = f.answer(req)
			})
		}
	}
	close(start)
	wg.Wait()
	admitted := 0
	for n, a := range answers {
		for _, one := range a {
			if one != "admitted" && one != string(notify.RefusedPrefixVelocity) {
				t.Errorf("number %d: %s", n, one)
			}
		}
		if a[0] == "admitted" || a[1] == "admitted" {
			admitted++
		}
	}
	if admitted > ceiling || admitted == 0 {
		t.Errorf("%d numbers admitted, want 1 to %d", admitted, ceiling)
	}
	t.Logf("%d of %d numbers admitted under a ceiling of %d", admitted, numbers, ceiling)
}
