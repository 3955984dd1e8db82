package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/reconcile"
	"github.com/resetnotify/resetnotify/shared/tables"
	dispatchwire "github.com/resetnotify/resetnotify/shared/wire/dispatch"
	reconcilewire "github.com/resetnotify/resetnotify/shared/wire/reconcile"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// dispatchOptions shape the dispatch benchmark.
type dispatchOptions struct {
	// Happy is how many notifications the throughput run pumps through; Fault how many the
	// fault-mix run does.
	Happy, Fault int
	// Pollers is how many concurrent receivers the dispatch queue has (each hands batches of
	// up to 10 to the handler, which works on them in parallel).
	Pollers int
}

// dispatchBench measures the dispatch side against DynamoDB Local, moto and an in-process
// simulator, with the workers built by the same wiring as the Lambda functions:
//
//   - throughput: o.Happy notifications are admitted (not timed), then pumped from the
//     dispatch queue through Dispatcher.Handle by o.Pollers receivers against a simulator
//     that accepts at once; dispatch_notifications_per_s is o.Happy over the time until the
//     last one is sent, receives and deletes included (Lambda's event source mapping does
//     those in AWS);
//   - AWS requests per notification, counted by an SDK middleware on every client the intake
//     and the workers use, from admission to the end: on that happy path, and for o.Fault
//     notifications under the fault matrix's mix, with the dispatch and reconcile workers
//     running until every record is done sending. The sweeper is not run: nothing is lost,
//     and its cost is per run (one query per due-index shard), not per notification.
func dispatchBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, o dispatchOptions, out io.Writer) error {
	fmt.Fprintln(out, "dispatch_measured_against=DynamoDB Local and moto; intake, dispatch and reconcile as deployed (template.yaml's defaults: guard and conversion guard on, allow-list US,CA, max attempts, provider timeout, backoff), the SMS simulator standing in for the provider with its own lookup window")
	happy, err := newPipeline(ctx, ddbEndpoint, sqsEndpoint, smssim.Config{}, "happy")
	if err != nil {
		return err
	}
	defer happy.close()
	if err := happy.admit(ctx, o.Happy); err != nil {
		return err
	}
	start := time.Now()
	if err := happy.drainDispatch(ctx, o.Happy, o.Pollers); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if n := len(happy.sim.Messages()); n != o.Happy {
		return fmt.Errorf("dispatch bench: the simulator accepted %d of %d", n, o.Happy)
	}
	happyCounts := happy.counter.Counts()

	faulty, err := newPipeline(ctx, ddbEndpoint, sqsEndpoint,
		smssim.Config{Seed: 7, Mix: smssim.FaultMix, RetryAfter: time.Second, Visibility: time.Second, DeliveryDelay: time.Hour}, "fault")
	if err != nil {
		return err
	}
	defer faulty.close()
	if err := faulty.admit(ctx, o.Fault); err != nil {
		return err
	}
	faultStart := time.Now()
	states, err := faulty.runUntilDone(ctx, o.Pollers, 3*time.Minute)
	if err != nil {
		return err
	}
	faultTook := time.Since(faultStart)
	faultCounts := faulty.counter.Counts()

	fmt.Fprintf(out, "dispatch_notifications=%d\ndispatch_pollers=%d\n", o.Happy, o.Pollers)
	fmt.Fprintf(out, "dispatch_notifications_per_s=%.1f\n", float64(o.Happy)/elapsed.Seconds())
	fmt.Fprintf(out, "requests_per_notification_happy=%.2f\n", float64(total(happyCounts))/float64(o.Happy))
	fmt.Fprintf(out, "requests_per_notification_happy_breakdown=%s\n", awscount.FormatCounts(happyCounts, float64(o.Happy)))
	fmt.Fprintf(out, "fault_mix_notifications=%d\nfault_mix_final_states=%s\n", o.Fault, states)
	fmt.Fprintf(out, "fault_mix_seconds=%.1f\n", faultTook.Seconds())
	fmt.Fprintf(out, "requests_per_notification_fault_mix=%.2f\n", float64(total(faultCounts))/float64(o.Fault))
	fmt.Fprintf(out, "requests_per_notification_fault_mix_breakdown=%s\n", awscount.FormatCounts(faultCounts, float64(o.Fault)))
	if err := failoverBench(ctx, ddbEndpoint, sqsEndpoint, o.Fault, o.Pollers, out); err != nil {
		return err
	}
	return twilioBench(ctx, ddbEndpoint, sqsEndpoint, o.Fault, o.Pollers, out)
}

func total(counts map[awscount.Op]int64) int64 {
	var t int64
	for _, n := range counts {
		t += n
	}
	return t
}

// pipeline is one fresh table and pair of queues, a simulator, and the intake and workers over
// them. Setup and the benchmark's own polling use uncounted clients; everything the intake and
// the workers do goes through counted ones.
type pipeline struct {
	name                      string
	db                        *dynamodb.Client
	queues                    *sqs.Client
	counted                   *sqs.Client
	store                     *dynamostore.Store
	table, audit              string
	dispatchURL, reconcileURL string
	sim                       *smssim.Server
	intake                    *notify.Service
	dispatcher                *dispatch.Dispatcher
	reconciler                *reconcile.Reconciler
	counter                   *awscount.Counter
	keys                      []string
	// countedCfg builds more counted clients (the capacity benchmark's audit writer and
	// receipts recorder).
	countedCfg aws.Config
	// wiring and reconcileWiring are what the workers were built from.
	wiring, reconcileWiring workercorewire.Wiring
	// guard and conversions are the intake's guard tables; the endpoints are the emulators'.
	guard, conversions       string
	ddbEndpoint, sqsEndpoint string
	// sealKeys is the seal-keys table; sealing the sealing settings of intake and dispatch,
	// as deployed: a KMS key (moto's) and sealKeys.
	sealKeys string
	sealing  map[string]string
}

// capacityKind is the kind of the capacity benchmark's pipeline, the one that reads its
// notifications table's stream (the audit writer's input).
const capacityKind = "capacity"

// newPipeline builds a pipeline whose simulator has simCfg, its intake and workers as
// deployed (asdeployed.go). Each of instrument is applied to the counted clients' config too
// (the capacity meter is one). Only a pipeline of capacityKind keeps its table's stream.
func newPipeline(ctx context.Context, ddbEndpoint, sqsEndpoint string, simCfg smssim.Config, kind string, instrument ...func(*aws.Config)) (_ *pipeline, err error) {
	plain := aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()}
	p := &pipeline{name: fmt.Sprintf("bench-%s-%d", kind, time.Now().UnixNano()), counter: awscount.NewCounter(), ddbEndpoint: ddbEndpoint, sqsEndpoint: sqsEndpoint}
	p.db = awsclient.DynamoDB(plain, ddbEndpoint)
	p.queues = awsclient.SQS(plain, sqsEndpoint)
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if err := p.createStorage(ctx, kind == capacityKind); err != nil {
		return nil, err
	}
	p.sim = smssim.New(simCfg)
	simURL, err := p.sim.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}

	counted := plain
	p.counter.Instrument(&counted)
	for _, f := range instrument {
		f(&counted)
	}
	kmsAt(&counted, sqsEndpoint)
	p.countedCfg = counted
	p.counted = awsclient.SQS(counted, sqsEndpoint)
	if p.sealing, err = kmsSealing(ctx, sqsEndpoint, p.sealKeys); err != nil {
		return nil, err
	}
	if p.wiring, err = p.workerWiringFor("DispatchFunction", simURL, simCfg.Visibility, config.NeedDispatch); err != nil {
		return nil, err
	}
	if p.reconcileWiring, err = p.workerWiringFor("ReconcileFunction", simURL, simCfg.Visibility, config.NeedReconcile); err != nil {
		return nil, err
	}
	if err := p.buildWorkers(ctx); err != nil {
		return nil, err
	}
	intakeCfg := counted
	intakeCfg.BaseEndpoint = aws.String(ddbEndpoint)
	p.intake, err = deployedIntake(ctx, intakeCfg, intakeTables{notifications: p.table, guard: p.guard, conversions: p.conversions}, p.dispatchURL, simURL, p.sealing)
	if err != nil {
		return nil, err
	}
	p.intake.Queue = p.intakeQueue()
	return p, nil
}

// createStorage creates the pipeline's tables and its dispatch and reconcile queues. The
// notifications table keeps its stream only when the pipeline reads it (see disableStream).
func (p *pipeline) createStorage(ctx context.Context, readsStream bool) error {
	p.table, p.audit, p.guard, p.conversions = p.name+"-notifications", p.name+"-audit", p.name+"-guard", p.name+"-conversion"
	p.sealKeys = p.name + "-sealkeys"
	if err := tablesetup.Create(ctx, p.db, p.names()); err != nil {
		return err
	}
	if !readsStream {
		if err := disableStream(ctx, p.db, p.table); err != nil {
			return err
		}
	}
	p.store = dynamostore.New(p.db, p.table)
	for _, q := range []struct {
		name string
		url  *string
	}{{p.name + "-dispatch", &p.dispatchURL}, {p.name + "-reconcile", &p.reconcileURL}} {
		out, err := p.queues.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.name)})
		if err != nil {
			return fmt.Errorf("dispatch bench: create queue: %w", err)
		}
		*q.url = aws.ToString(out.QueueUrl)
	}
	return nil
}

// names are the pipeline's tables.
func (p *pipeline) names() tables.Names {
	return tables.Names{Notifications: p.table, Audit: p.audit, Guard: p.guard, Conversions: p.conversions, SealKeys: p.sealKeys}
}

// buildWorkers builds the dispatch and reconcile workers from p.wiring.
func (p *pipeline) buildWorkers(ctx context.Context) (err error) {
	if p.dispatcher, err = dispatchwire.Build(ctx, p.wiring); err != nil {
		return err
	}
	p.reconciler, err = reconcilewire.Build(ctx, p.reconcileWiring)
	return err
}

// close removes what newPipeline created.
func (p *pipeline) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.sim != nil {
		_ = p.sim.Close()
	}
	for _, u := range []string{p.dispatchURL, p.reconcileURL} {
		if u != "" {
			_, _ = p.queues.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	}
	dropTables(ctx, p.db, p.names())
}

// admit admits n notifications through the intake service, eight at a time, each to its own
// number and expiring in ten minutes.
func (p *pipeline) admit(ctx context.Context, n int) error {
	ctx, err := benchCaller(ctx)
	if err != nil {
		return err
	}
	p.keys = make([]string, n)
	expires := time.Now().UTC().Add(10 * time.Minute)
	_, err = measure(ctx, n, 8, 0, func(ctx context.Context, i int) error {
		key := fmt.Sprintf("%s-%06d", p.name, i)
		p.keys[i] = key
		_, err := p.intake.Submit(ctx, notify.Request{
			IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
			To: benchNumber(i), Locale: "en", Params: map[string]string{notify.ParamCode: fmt.Sprintf("%06d", i)},
			ExpiresAt: expires,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("dispatch bench: admit: %w", err)
	}
	return nil
}

// drainDispatch pumps the dispatch queue with pollers receivers until n messages were handled
// and deleted.
func (p *pipeline) drainDispatch(ctx context.Context, n, pollers int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var (
		deleted atomic.Int64
		wg      sync.WaitGroup
		errs    = make(chan error, pollers)
	)
	for range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deleted.Load() < int64(n) {
				res, err := pump.Once(ctx, p.counted, p.dispatchURL, p.dispatcher.Handle, pump.Options{Region: emulator.Region, VisibilityTimeout: 30 * time.Second})
				if err != nil {
					errs <- fmt.Errorf("dispatch bench: %w", err)
					return
				}
				deleted.Add(int64(res.Deleted))
				if res.Received == 0 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runUntilDone runs the dispatch and reconcile workers until no record is due any more and
// both queues are empty, and returns the final states, counted.
func (p *pipeline) runUntilDone(ctx context.Context, pollers int, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		stop atomic.Bool
		mu   sync.Mutex
		errs []error
	)
	poll := func(queueURL string, h workercore.BatchHandler) {
		defer wg.Done()
		for !stop.Load() && ctx.Err() == nil {
			// Long polling, as Lambda's event source mapping does, so that waiting for delayed
			// messages costs few empty receives.
			_, err := pump.Once(ctx, p.counted, queueURL, h, pump.Options{Region: emulator.Region, WaitTime: time.Second, VisibilityTimeout: 30 * time.Second})
			if err != nil && ctx.Err() == nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
		}
	}
	for range pollers {
		wg.Add(1)
		go poll(p.dispatchURL, p.dispatcher.Handle)
	}
	wg.Add(1)
	go poll(p.reconcileURL, p.reconciler.Handle)

	err := p.waitDone(ctx)
	stop.Store(true)
	wg.Wait()
	if err = errors.Join(append(errs, err)...); err != nil {
		return "", fmt.Errorf("dispatch bench: fault mix: %w; %s", err, p.stuck())
	}
	states := map[string]int{}
	for _, k := range p.keys {
		rec, err := p.store.Get(ctx, k)
		if err != nil {
			return "", err
		}
		states[string(rec.State)+"/"+string(rec.Reason)]++
	}
	return formatSorted(states, "%s:%d"), nil
}

// waitDone polls, with the uncounted clients, until the due index holds nothing and both
// queues are empty.
func (p *pipeline) waitDone(ctx context.Context) error {
	for {
		done, err := p.done(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stuck says, for a run that did not finish, which records are not done, by state: how many,
// their attempts and when they were next due, with a few keys; how many sends reached the
// simulator against the attempts the records count (attempts that never reached it ended before
// their request was written); and what the queues still hold. It reads on a context of its own:
// the run's has ended.
func (p *pipeline) stuck() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	type group struct {
		n, minAttempt, maxAttempt int
		firstDue, lastDue         time.Time
		keys                      []string
	}
	groups := map[string]*group{}
	attempts := 0
	for _, k := range p.keys {
		rec, err := p.store.Get(ctx, k)
		if err != nil {
			return fmt.Sprintf("cannot read %s: %v", k, err)
		}
		attempts += rec.Attempt
		if rec.NextActionAt.IsZero() {
			continue // done sending
		}
		s := string(rec.State) + "/" + string(rec.Reason)
		g := groups[s]
		if g == nil {
			g = &group{minAttempt: rec.Attempt, firstDue: rec.NextActionAt, lastDue: rec.NextActionAt}
			groups[s] = g
		}
		g.n++
		g.minAttempt, g.maxAttempt = min(g.minAttempt, rec.Attempt), max(g.maxAttempt, rec.Attempt)
		if rec.NextActionAt.Before(g.firstDue) {
			g.firstDue = rec.NextActionAt
		}
		if rec.NextActionAt.After(g.lastDue) {
			g.lastDue = rec.NextActionAt
		}
		if len(g.keys) < 3 {
			g.keys = append(g.keys, strings.TrimPrefix(k, p.name+"-"))
		}
	}
	states := map[string]string{}
	waiting := 0
	for s, g := range groups {
		waiting += g.n
		states[s] = fmt.Sprintf("%d (attempts %d-%d, next action %+.0fs to %+.0fs from now, e.g. %s)",
			g.n, g.minAttempt, g.maxAttempt, g.firstDue.Sub(now).Seconds(), g.lastDue.Sub(now).Seconds(), strings.Join(g.keys, " "))
	}
	queues := make([]string, 0, 2)
	for _, u := range []string{p.dispatchURL, p.reconcileURL} {
		queues = append(queues, p.queueDepth(ctx, u))
	}
	byState := cmp.Or(formatSorted(states, "%s %s"), "none")
	return fmt.Sprintf("%d of %d records not done, by state: %s; %d sends reached the simulator for %d attempts; queues: %s",
		waiting, len(p.keys), byState, len(p.sim.Requests()), attempts, strings.Join(queues, ", "))
}

// queueDepth names the queue at u and its visible, in-flight and delayed message counts.
func (p *pipeline) queueDepth(ctx context.Context, u string) string {
	name := u[strings.LastIndex(u, "-")+1:]
	out, err := p.queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return fmt.Sprintf("%s unreadable (%v)", name, err)
	}
	a := out.Attributes
	return fmt.Sprintf("%s visible %s, in flight %s, delayed %s", name, a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)],
		a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], a[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)])
}

func (p *pipeline) done(ctx context.Context) (bool, error) {
	far := time.Now().Add(24 * time.Hour)
	for shard := range tables.DueShards {
		due, err := p.store.QueryDue(ctx, shard, far, 1)
		if err != nil || len(due) > 0 {
			return false, err
		}
	}
	for _, u := range []string{p.dispatchURL, p.reconcileURL} {
		if empty, err := pump.Empty(ctx, p.queues, u); err != nil || !empty {
			return false, err
		}
	}
	return true, nil
}
