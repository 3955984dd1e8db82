package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// admission runs the guard-off admission benchmark (see the package comment): ops raw
// conditional puts and ops admissions through an intake handler without the abuse guard's
// counters, on workers callers, alternating in rounds. Its figures are named guard_off_*;
// deployedBench measures admission as deployed.
func admission(ctx context.Context, endpoint string, ops, workers int, out io.Writer) error {
	cfg := aws.Config{Region: "us-east-1", Credentials: emulator.LocalCredentials()}
	db := awsclient.DynamoDB(cfg, endpoint)
	_, names := benchNames("bench")
	drop, err := createTables(ctx, db, names)
	if err != nil {
		return err
	}
	defer drop()
	admit, err := admitCall(db, names.Notifications)
	if err != nil {
		return err
	}
	rawPut, err := rawPutCall(db, names.Notifications)
	if err != nil {
		return err
	}
	// Warm both paths (connections, JIT in DynamoDB Local) before measuring.
	if _, err := measure(ctx, ops/10, workers, 1_000_000, rawPut); err != nil {
		return fmt.Errorf("warm raw put: %w", err)
	}
	if _, err := measure(ctx, ops/10, workers, 1_000_000, admit); err != nil {
		return fmt.Errorf("warm admission: %w", err)
	}
	raw, adm, err := alternate(ctx, ops, workers, rawPut, admit)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "guard_off_admission_ops=%d\nguard_off_admission_concurrency=%d\n", ops, workers)
	fmt.Fprintf(out, "guard_off_raw_conditional_put_per_s=%.1f\n", raw.perSecond())
	fmt.Fprintf(out, "guard_off_admissions_per_s=%.1f\n", adm.perSecond())
	fmt.Fprintf(out, "guard_off_admission_vs_raw_put_ratio=%.3f\n", adm.perSecond()/raw.perSecond())
	fmt.Fprintf(out, "guard_off_admission_latency_p50_ms=%.2f\nguard_off_admission_latency_p99_ms=%.2f\n", ms(adm.quantile(0.50)), ms(adm.quantile(0.99)))
	fmt.Fprintf(out, "guard_off_raw_put_latency_p50_ms=%.2f\nguard_off_raw_put_latency_p99_ms=%.2f\n", ms(raw.quantile(0.50)), ms(raw.quantile(0.99)))
	return nil
}

// admitCall returns a call that admits notification i through the intake function's HTTP
// handler over table, with an in-memory queue.
func admitCall(db *dynamodb.Client, table string) (func(context.Context, int) error, error) {
	box, hasher, fingerprints, err := intakeKeys()
	if err != nil {
		return nil, err
	}
	in := &notify.Service{
		Store:        dynamostore.New(db, table),
		Sealer:       box,
		Hasher:       hasher,
		Fingerprints: fingerprints,
		Queue:        &countingQueue{},
		Clock:        notify.SystemClock{},
		Policy:       notify.DefaultPolicy(),
		NewID:        func() string { return ulid.Make().String() },
	}
	h := intake.New(in, slog.New(slog.DiscardHandler), &obs.Metrics{W: io.Discard, Function: "bench"})
	expires := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	return func(ctx context.Context, i int) error {
		body := fmt.Sprintf(`{"event_id":"bench-%d","channel":"sms","purpose":"password_reset","to":"+1555555%04d","locale":"en","params":{"code":"%06d"},"expires_at":"%s"}`,
			i, i%10000, i%1000000, expires)
		resp, err := h.Handle(ctx, events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /v1/notifications", RawPath: "/v1/notifications", Body: body,
			Headers:        map[string]string{"content-type": "application/json"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "bench", Authorizer: localapi.Caller(localapi.LocalCallerRole), HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/v1/notifications"}},
		})
		if err != nil {
			return err
		}
		if resp.StatusCode != 202 {
			return fmt.Errorf("admission %d: status %d", i, resp.StatusCode)
		}
		return nil
	}, nil
}

// rawPutCall returns a call that puts item i into table raw: a conditional PutItem of an item
// with the shape and size of a real admission.
func rawPutCall(db *dynamodb.Client, table string) (func(context.Context, int) error, error) {
	sample := notify.NewRecord(notify.Request{
		IdempotencyKey: "sample", EventID: "evt", Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: "+15555550100", Locale: "en", Params: map[string]string{notify.ParamCode: "123456"}, ExpiresAt: time.Now().Add(time.Hour),
	}, notify.Admission{NotificationID: ulid.Make().String(), Sealed: make([]byte, 120), DestinationFP: "0123456789abcdef0123456789abcdef"}, time.Now(), notify.DefaultPolicy())
	item, err := dynamostore.ItemFromRecord(sample)
	if err != nil {
		return nil, err
	}
	cond, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(tables.AttrIdempotencyKey))).Build()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, i int) error {
		it := make(map[string]ddbtypes.AttributeValue, len(item))
		for k, v := range item {
			it[k] = v
		}
		it[tables.AttrIdempotencyKey] = &ddbtypes.AttributeValueMemberS{Value: "raw-" + strconv.Itoa(i)}
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: it,
			ConditionExpression: cond.Condition(), ExpressionAttributeNames: cond.Names(),
		})
		return err
	}, nil
}

// alternate measures ops calls of raw and of ours in rounds, alternating which goes first, so
// that drift on a shared machine (other processes, DynamoDB Local's own warm-up and growing
// table) falls on both alike. It returns both phases sorted.
func alternate(ctx context.Context, ops, workers int, raw, ours func(context.Context, int) error) (rawPhase, ourPhase phase, err error) {
	const rounds = 4
	for r := range rounds {
		n := ops / rounds
		first, second := raw, ours
		a, b := &rawPhase, &ourPhase
		if r%2 == 1 {
			first, second, a, b = ours, raw, &ourPhase, &rawPhase
		}
		p, err := measure(ctx, n, workers, r*n, first)
		if err != nil {
			return phase{}, phase{}, fmt.Errorf("round %d: %w", r, err)
		}
		a.add(p)
		if p, err = measure(ctx, n, workers, r*n, second); err != nil {
			return phase{}, phase{}, fmt.Errorf("round %d: %w", r, err)
		}
		b.add(p)
	}
	rawPhase.sort()
	ourPhase.sort()
	return rawPhase, ourPhase, nil
}

type phase struct {
	elapsed   time.Duration
	latencies []time.Duration
}

func (r *phase) add(p phase) {
	r.elapsed += p.elapsed
	r.latencies = append(r.latencies, p.latencies...)
}

func (r *phase) sort() {
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
}

func (r phase) perSecond() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

func (r phase) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[int(q*float64(len(r.latencies)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measure runs ops calls of f (with indexes offset+0 .. offset+ops-1) on workers goroutines and
// returns the wall time and the sorted latencies.
func measure(ctx context.Context, ops, workers, offset int, f func(context.Context, int) error) (phase, error) {
	var next atomic.Int64
	lat := make([]time.Duration, ops)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= ops {
					return
				}
				t := time.Now()
				if err := f(ctx, offset+i); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return phase{}, err
	}
	return phase{elapsed: elapsed, latencies: lat}, nil
}

// countingQueue stands in for SQS so the benchmark compares our code with the database only.
type countingQueue struct{ n atomic.Int64 }

func (q *countingQueue) Enqueue(context.Context, notify.QueueName, notify.Message, time.Duration) error {
	q.n.Add(1)
	return nil
}

var _ notify.Queue = (*countingQueue)(nil)
