package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// deployed is the intake as deployed, over one set of tables: the handler and service built by
// the intake function's own wiring (intakewire.Service) from template.yaml's environment at its
// defaults (deployedIntake: guard on, allow-list US,CA, limits 5/10/6/20, the conversion
// guard, the decision bound), on local keys instead of SSM and KMS, and with an in-memory
// queue instead of SQS so that the figures compare our code with the database alone.
type deployed struct {
	handler *intake.Handler
	// in is the admission service behind handler.
	in      *notify.Service
	queue   *countingQueue
	expires string
	// cfg, names and sealing build another instance of the same intake (unguarded, replays).
	cfg     aws.Config
	names   tables.Names
	sealing map[string]string
}

// newDeployed wires the intake over names with awsCfg (whose clients the caller instruments).
func newDeployed(ctx context.Context, awsCfg aws.Config, names tables.Names) (*deployed, error) {
	keys := localSealing(randomKey())
	keys[config.EnvDestinationPepper] = base64.StdEncoding.EncodeToString(randomKey())
	keys[config.EnvFingerprintKey] = base64.StdEncoding.EncodeToString(randomKey())
	return newDeployedSealing(ctx, awsCfg, names, keys)
}

// newDeployedSealing is newDeployed with the sealing, pepper and fingerprint keys sealing, so that two
// instances over the same tables tell a replay from a key reuse alike.
func newDeployedSealing(ctx context.Context, awsCfg aws.Config, names tables.Names, sealing map[string]string) (*deployed, error) {
	in, err := deployedIntake(ctx, awsCfg, intakeTables{notifications: names.Notifications, guard: names.Guard, conversions: names.Conversions},
		"http://127.0.0.1:1/000000000000/unused", "", sealing)
	if err != nil {
		return nil, err
	}
	q := &countingQueue{}
	in.Queue = q
	h := intake.New(in, slog.New(slog.DiscardHandler), &obs.Metrics{W: io.Discard, Function: "bench"})
	return &deployed{handler: h, in: in, queue: q, expires: time.Now().UTC().Add(time.Hour).Format(time.RFC3339),
		cfg: awsCfg, names: names, sealing: sealing}, nil
}

// unguarded returns another instance of d's intake, over the same tables, with the abuse guard
// off (GUARD_TABLE=off): the baseline of the guard's latency.
func (d *deployed) unguarded(ctx context.Context) (*deployed, error) {
	u, err := newDeployedSealing(ctx, d.cfg, d.names, d.sealing)
	if err == nil {
		u.in.Guard = nil
	}
	return u, err
}

// benchNumber is a distinct number in the template's default allow-list (US, CA) for each i
// below len(benchPrefixes())·80,000, whose 6-digit prefix (calling code, area code, two digits
// of the exchange) differs for each i below len(benchPrefixes()), so that the prefix ceiling
// never refuses the benchmark's admissions. The exchange's last digit is 2 to 9, never an N11.
func benchNumber(i int) string {
	ps := benchPrefixes()
	rest := i / len(ps)
	return fmt.Sprintf("%s%d%04d", ps[i%len(ps)], 2+rest%8, (rest/8)%10000)
}

// benchPrefixes lists every "+1<area><exchange's first two digits>" the phone-number metadata
// places in the US or Canada, found once per run.
var benchPrefixes = sync.OnceValue(func() []string {
	var ps []string
	for area := 200; area < 1000; area++ {
		for ex := 20; ex < 100; ex++ {
			p := fmt.Sprintf("+1%03d%02d", area, ex)
			if r := (phoneregion.Regions{}).Region(p + "21234"); r == "US" || r == "CA" {
				ps = append(ps, p)
			}
		}
	}
	return ps
})

// post submits one reset to number under key and returns the status.
func (d *deployed) post(ctx context.Context, key, number string) (int, error) {
	body := `{"event_id":"` + key + `","channel":"sms","purpose":"password_reset","to":"` + number +
		`","locale":"en","params":{"code":"482913"},"expires_at":"` + d.expires + `"}`
	resp, err := d.handler.Handle(ctx, events.APIGatewayV2HTTPRequest{
		RouteKey: intake.RouteSubmit, RawPath: intake.CollectionPath, Body: body,
		Headers:        map[string]string{"content-type": "application/json", "idempotency-key": key},
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "bench", Authorizer: localapi.Caller(localapi.LocalCallerRole), HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: intake.CollectionPath}},
	})
	return resp.StatusCode, err
}

// admitCall admits notification i, to a number of its own, and wants 202.
func (d *deployed) admitCall(prefix string) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		status, err := d.post(ctx, prefix+strconv.Itoa(i), benchNumber(i))
		if err == nil && status != 202 {
			err = fmt.Errorf("deployed admission %d: status %d", i, status)
		}
		return err
	}
}

// rawCalls returns the DynamoDB calls of a guarded first admission made raw, in the same order
// and parallelism: the destination's counter update (with a count ID, as the guard counts once
// per key) and the prefix's set update at once, each with the guard's item shape and
// condition, then the conditional PutItem of a record-shaped item.
func rawCalls(db *dynamodb.Client, names tables.Names) (func(context.Context, int) error, error) {
	put, err := rawPutCall(db, names.Notifications)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	update := func(ctx context.Context, table, keyName, key string, b expression.Builder) error {
		expr, err := b.Build()
		if err != nil {
			return err
		}
		_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]ddbtypes.AttributeValue{keyName: &ddbtypes.AttributeValueMemberS{Value: key}},
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return err
	}
	return func(ctx context.Context, i int) error {
		fp := fmt.Sprintf("%032x", i)
		var wg sync.WaitGroup
		var setErr error
		wg.Go(func() {
			setErr = update(ctx, names.Guard, tables.GuardKey, "p#raw-"+fp+"#"+now.Format("200601021504"), rawPrefixUpdate(fp, now))
		})
		destErr := update(ctx, names.Guard, tables.GuardKey, "d#raw-"+fp+"#"+now.Format("20060102"), rawDestinationUpdate(fp, now))
		wg.Wait()
		if err := errors.Join(destErr, setErr); err != nil {
			return err
		}
		// Keys apart from those of the raw puts measured beside it on the same table.
		return put(ctx, 10_000_000+i)
	}, nil
}

// rawDestinationUpdate is the guard's destination update for the notification id at now.
func rawDestinationUpdate(id string, now time.Time) expression.Builder {
	day, hour, ids := expression.Name(tables.GuardDayCount), expression.Name(tables.GuardHourPrefix+now.Format("15")), expression.Name(tables.GuardCounted)
	limits := notify.DefaultGuardLimits()
	return expression.NewBuilder().
		WithUpdate(expression.Add(day, expression.Value(1)).Add(hour, expression.Value(1)).Add(ids, expression.Value(rawSet{id})).
			Set(expression.Name(tables.GuardTTL), expression.Value(now.Add(48*time.Hour).Unix()))).
		WithCondition(expression.And(expression.Not(expression.Contains(ids, id)),
			expression.Or(expression.AttributeNotExists(day), day.LessThan(expression.Value(limits.PerDay))),
			expression.Or(expression.AttributeNotExists(hour), hour.LessThan(expression.Value(limits.PerHour)))))
}

// rawPrefixUpdate is the guard's prefix update for the destination fp at now.
func rawPrefixUpdate(fp string, now time.Time) expression.Builder {
	fps := expression.Name(tables.GuardDestinations)
	return expression.NewBuilder().
		WithUpdate(expression.Add(fps, expression.Value(rawSet{fp})).Set(expression.Name(tables.GuardTTL), expression.Value(now.Add(2*time.Hour).Unix()))).
		WithCondition(expression.Or(expression.AttributeNotExists(fps), expression.Contains(fps, fp),
			fps.Size().LessThan(expression.Value(notify.DefaultGuardLimits().PrefixPerMinute))))
}

// rawSet marshals as a DynamoDB string set, as the guard's prefix update sends it.
type rawSet []string

// MarshalDynamoDBAttributeValue returns the set.
func (s rawSet) MarshalDynamoDBAttributeValue() (ddbtypes.AttributeValue, error) {
	return &ddbtypes.AttributeValueMemberSS{Value: s}, nil
}

// localConfig is the benchmark's AWS configuration: DynamoDB Local at endpoint for every client.
func localConfig(endpoint string) aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: emulator.LocalCredentials(), BaseEndpoint: aws.String(endpoint)}
}

// deployedBench measures admission as deployed (see deployed): its requests and capacity
// units, the answers of 64 duplicates, and its throughput against the raw calls at
// concurrency 1 and 16 (ops admissions per phase at 16, a quarter of that at 1).
func deployedBench(ctx context.Context, endpoint string, ops int, out io.Writer) error {
	fmt.Fprintln(out, "admission_measured_against=DynamoDB Local; the intake's wiring at the template's defaults (guard on, allow-list US,CA, conversion guard on), in-memory queue, a new number each time, the notifications table's stream off (it slows DynamoDB Local's writes, not AWS's)")
	if err := deployedUnits(ctx, endpoint, out); err != nil {
		return err
	}
	ratios := map[string]float64{}
	for _, c := range []int{1, 16} {
		n := ops
		if c == 1 {
			n = max(100, ops/4)
		}
		if err := deployedThroughput(ctx, endpoint, n, c, ratios, out); err != nil {
			return err
		}
	}
	// The headline ratios are the lower of the two concurrencies.
	fmt.Fprintf(out, "admission_vs_raw_put_ratio=%.3f\n", min(ratios["put1"], ratios["put16"]))
	fmt.Fprintf(out, "admission_vs_raw_calls_ratio=%.3f\n", min(ratios["calls1"], ratios["calls16"]))
	return nil
}

// deployedTables creates a fresh set of tables (guard table included) and returns a client of
// cfg and the drop function.
func deployedTables(ctx context.Context, cfg aws.Config, label string) (*dynamodb.Client, tables.Names, func(), error) {
	db := awsclient.DynamoDB(cfg, "")
	name, names := benchNames(label)
	names.Guard, names.Conversions = name+"-guard", name+"-conversion"
	drop, err := createTables(ctx, db, names)
	return db, names, drop, err
}

// deployedUnits prints the AWS requests and capacity units of 100 first admissions of a number
// for the day and of 100 repeats (same numbers, new keys), and what 64 duplicates get.
func deployedUnits(ctx context.Context, endpoint string, out io.Writer) error {
	m, drop, err := newUnitsMeter(ctx, endpoint)
	if err != nil {
		return err
	}
	defer drop()
	const n = 100
	fmt.Fprintf(out, "block_list_refreshes_per_instance_minute_max=%.0f\n", float64(time.Minute)/float64(m.d.in.Conversions.Policy.Refresh))
	for _, kind := range []string{"", "_repeat"} {
		u, err := m.admit(ctx, kind, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "requests_per_admission%s=%.2f\n", kind, u.requests)
		fmt.Fprintf(out, "requests_per_admission%s_breakdown=%s\n", kind, u.breakdown)
		fmt.Fprintf(out, "block_list_refreshes_per_admission%s=%.2f\n", kind, u.refreshes)
		fmt.Fprintf(out, "write_units_per_admission%s=%.2f\n", kind, u.writes)
		fmt.Fprintf(out, "read_units_per_admission%s=%.2f\n", kind, u.reads)
	}
	if err := m.replays(ctx, n, out); err != nil {
		return err
	}
	return deployedDuplicates(ctx, m, out)
}

// replays replays the n first admissions (same key, same body), one after another, and prints
// the AWS requests and capacity units of one replay (requests_per_replay, goal at most 1: the
// conditional PutItem, which returns the stored, decided record).
func (m *unitsMeter) replays(ctx context.Context, n int, out io.Writer) error {
	u, err := m.replay(ctx, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "requests_per_replay=%.2f\nblock_list_refreshes_per_replay=%.2f\n", u.requests, u.refreshes)
	fmt.Fprintf(out, "requests_per_replay_breakdown=%s\n", u.breakdown)
	fmt.Fprintf(out, "write_units_per_replay=%.2f\nread_units_per_replay=%.2f\n", u.writes, u.reads)
	// The same replays on another instance, which has not counted their keys: the count finds
	// each counted (the destination's update), then the put.
	other, err := newDeployedSealing(ctx, m.d.cfg, m.d.names, m.d.sealing)
	if err != nil {
		return err
	}
	other.expires = m.d.expires // the same body, so the same request
	first := m.d
	m.d = other
	u, err = m.replay(ctx, n)
	m.d = first
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "requests_per_replay_other_instance=%.2f\nrequests_per_replay_other_instance_breakdown=%s\n", u.requests, u.breakdown)
	fmt.Fprintf(out, "block_list_refreshes_per_replay_other_instance=%.2f\n", u.refreshes)
	return nil
}

// replay replays the first admissions 0..n-1 of admit("") and returns the averages; each must
// answer 200.
func (m *unitsMeter) replay(ctx context.Context, n int) (units, error) {
	m.counter.Reset()
	m.meter.Reset()
	for i := range n {
		if status, err := m.d.post(ctx, "units-"+strconv.Itoa(i), benchNumber(i)); err != nil || status != 200 {
			return units{}, fmt.Errorf("deployed replay %d: %d %v", i, status, err)
		}
	}
	return m.averages(n), nil
}

// unitsMeter is a deployed intake whose AWS calls are counted and priced.
type unitsMeter struct {
	d       *deployed
	counter *awscount.Counter
	meter   *capacityMeter
}

// units are per-admission averages. requests are the admission's own; refreshes are the
// block list's reads made meanwhile, which are per instance and CONVERSION_REFRESH_SECONDS
// (one Query when the cached list is older), not per admission: counted apart.
type units struct {
	requests, refreshes, writes, reads float64
	breakdown                          string
}

// blockListRead is the one request of the block list's refresh (convstore's Decisions); the
// admission path makes no other Query.
var blockListRead = awscount.Op{Service: "DynamoDB", Operation: "Query"}

// averages returns what m counted and priced since its reset, per each of n operations.
func (m *unitsMeter) averages(n int) units {
	r, w := m.meter.Snapshot().total(nil)
	counts := m.counter.Counts()
	refreshes := counts[blockListRead]
	return units{requests: float64(m.counter.Total()-refreshes) / float64(n), refreshes: float64(refreshes) / float64(n),
		writes: w / float64(n), reads: r / float64(n), breakdown: awscount.FormatCounts(counts, float64(n))}
}

// newUnitsMeter builds a deployed intake on fresh tables at endpoint, with every call counted
// and priced.
func newUnitsMeter(ctx context.Context, endpoint string) (*unitsMeter, func(), error) {
	cfg := localConfig(endpoint)
	m := &unitsMeter{counter: awscount.NewCounter(), meter: newCapacityMeter()}
	m.counter.Instrument(&cfg)
	m.meter.Instrument(&cfg)
	_, names, drop, err := deployedTables(ctx, cfg, "bench-adm")
	if err != nil {
		return nil, nil, err
	}
	if m.d, err = newDeployed(ctx, cfg, names); err != nil {
		drop()
		return nil, nil, err
	}
	return m, drop, nil
}

// admit admits n numbers (benchNumber 0..n-1) under keys of kind and returns the averages.
func (m *unitsMeter) admit(ctx context.Context, kind string, n int) (units, error) {
	m.counter.Reset()
	m.meter.Reset()
	for i := range n {
		if status, err := m.d.post(ctx, "units"+kind+"-"+strconv.Itoa(i), benchNumber(i)); err != nil || status != 202 {
			return units{}, fmt.Errorf("deployed admission%s %d: %d %v", kind, i, status, err)
		}
	}
	return m.averages(n), nil
}

// deployedDuplicates admits 4 resets for one number, then sends 64 identical requests with a
// new key at once, and prints how many callers did not get the one admission (202 for one,
// 200 for the rest): errors_per_64_duplicates; and the AWS requests the 64 made in all, the
// creator's put, count and mark included (requests_per_64_duplicates, goal at most 192).
func deployedDuplicates(ctx context.Context, m *unitsMeter, out io.Writer) error {
	d := m.d
	number := benchNumber(50_000)
	for i := range 4 {
		if status, err := d.post(ctx, "dup-prior-"+strconv.Itoa(i), number); err != nil || status != 202 {
			return fmt.Errorf("duplicates: prior admission %d: %d %v", i, status, err)
		}
	}
	before := d.queue.n.Load()
	m.counter.Reset()
	statuses := make([]int, duplicates)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			status, err := d.post(ctx, "dup", number)
			if err != nil {
				status = -1
			}
			statuses[i] = status
		})
	}
	wg.Wait()
	tally := map[int]int{}
	for _, s := range statuses {
		tally[s]++
	}
	errs := duplicates - tally[202] - tally[200]
	if tally[202] != 1 {
		errs += max(tally[202]-1, 1)
	}
	fmt.Fprintf(out, "requests_per_64_duplicates=%d\n", m.counter.Total())
	fmt.Fprintf(out, "requests_per_64_duplicates_breakdown=%s\n", awscount.FormatCounts(m.counter.Counts(), 1))
	fmt.Fprintf(out, "errors_per_64_duplicates=%d\n", errs)
	fmt.Fprintf(out, "answers_per_64_duplicates=%v\n", tally)
	fmt.Fprintf(out, "dispatch_messages_per_64_guarded_duplicates=%d\n", d.queue.n.Load()-before)
	return nil
}

// deployedThroughput measures, on fresh tables at concurrency c, n raw conditional puts, n raw
// admissions' calls (rawCalls), n deployed admissions and n admissions through the same intake
// with the guard off, alternating in rounds, and prints the guarded and unguarded p50 latency
// side by side with their ratio (guard_cost_latency_ratio_p50_c1, goal at most 2).
func deployedThroughput(ctx context.Context, endpoint string, n, c int, ratios map[string]float64, out io.Writer) error {
	cfg := localConfig(endpoint)
	db, names, drop, err := deployedTables(ctx, cfg, "bench-thr")
	if err != nil {
		return err
	}
	defer drop()
	d, err := newDeployed(ctx, cfg, names)
	if err != nil {
		return err
	}
	put, err := rawPutCall(db, names.Notifications)
	if err != nil {
		return err
	}
	calls, err := rawCalls(db, names)
	if err != nil {
		return err
	}
	off, err := d.unguarded(ctx)
	if err != nil {
		return err
	}
	phases, err := alternateN(ctx, n, c, []func(context.Context, int) error{put, calls, d.admitCall("thr-"), off.admitCall("thr-off-")})
	if err != nil {
		return err
	}
	raw, rawAll, adm, unguarded := phases[0], phases[1], phases[2], phases[3]
	suffix := "_c" + strconv.Itoa(c)
	// The guard's cost in latency: the same intake, same run, same rounds, guard on and off.
	fmt.Fprintf(out, "guarded_admission_latency_p50_ms%s=%.2f\nunguarded_admission_latency_p50_ms%s=%.2f\n",
		suffix, ms(adm.quantile(0.50)), suffix, ms(unguarded.quantile(0.50)))
	fmt.Fprintf(out, "unguarded_admissions_per_s%s=%.1f\nguard_cost_latency_ratio_p50%s=%.3f\n",
		suffix, unguarded.perSecond(), suffix, float64(adm.quantile(0.50))/float64(unguarded.quantile(0.50)))
	fmt.Fprintf(out, "raw_conditional_put_per_s%s=%.1f\nraw_admission_calls_per_s%s=%.1f\nadmissions_per_s%s=%.1f\n",
		suffix, raw.perSecond(), suffix, rawAll.perSecond(), suffix, adm.perSecond())
	ratios["put"+strconv.Itoa(c)] = adm.perSecond() / raw.perSecond()
	ratios["calls"+strconv.Itoa(c)] = adm.perSecond() / rawAll.perSecond()
	fmt.Fprintf(out, "admission_vs_raw_put_ratio%s=%.3f\nadmission_vs_raw_calls_ratio%s=%.3f\n", suffix, ratios["put"+strconv.Itoa(c)], suffix, ratios["calls"+strconv.Itoa(c)])
	fmt.Fprintf(out, "admission_latency_p50_ms%s=%.2f\nadmission_latency_p99_ms%s=%.2f\n", suffix, ms(adm.quantile(0.50)), suffix, ms(adm.quantile(0.99)))
	return nil
}

// alternateN warms each of calls up, then measures ops calls of each in rounds, rotating which
// goes first, so that drift on a shared machine falls on all alike. Indexes never repeat
// across phases of one call.
func alternateN(ctx context.Context, ops, workers int, calls []func(context.Context, int) error) ([]phase, error) {
	const rounds = 4
	for _, f := range calls {
		if _, err := measure(ctx, max(1, ops/10), workers, 1_000_000, f); err != nil {
			return nil, fmt.Errorf("warm up: %w", err)
		}
	}
	phases := make([]phase, len(calls))
	for r := range rounds {
		per := ops / rounds
		for k := range calls {
			j := (k + r) % len(calls)
			p, err := measure(ctx, per, workers, r*per, calls[j])
			if err != nil {
				return nil, fmt.Errorf("round %d: %w", r, err)
			}
			phases[j].add(p)
		}
	}
	for i := range phases {
		phases[i].sort()
	}
	return phases, nil
}
