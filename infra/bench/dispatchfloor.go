package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/tables"
	dispatchwire "github.com/resetnotify/resetnotify/shared/wire/dispatch"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
)

// floorBatch is the dispatch queue's BatchSize in template.yaml: the handler gets batches of
// this many messages.
const floorBatch = 10

// dispatchFloorBench measures the dispatch handler against its floor on one DynamoDB Local,
// without SQS (moto handles about 50 calls a second, which would bound the figure): admitted
// records (not timed) are handed to Dispatcher.Handle (built as deployed, floorDispatcher) in
// batches of floorBatch from an in-process queue, with a provider that accepts at once, and the
// same DynamoDB calls — the consistent GetItem, the conditional lease UpdateItem, the
// conditional sent UpdateItem and the conversion guard's count — are made raw, with the same
// parallelism, on other records of the same table. The two phases
// alternate in rounds, like the admission benchmark. dispatch_vs_raw_ratio is ours over raw
// (goal at least 0.8).
func dispatchFloorBench(ctx context.Context, endpoint string, n, batches int, out io.Writer) error {
	f, drop, err := newFloor(ctx, endpoint, batches)
	if err != nil {
		return err
	}
	defer drop()
	const rounds = 4
	perRound := n / rounds / floorBatch * floorBatch
	if perRound < floorBatch {
		return fmt.Errorf("dispatch floor: need -floor-n >= %d", rounds*floorBatch)
	}
	if err := f.warm(ctx); err != nil {
		return err
	}
	var rawPhase, ourPhase phase
	var rawCalls, ourCalls int64
	for r := range rounds {
		rawRecs, err := f.admitted(ctx, fmt.Sprintf("raw%d", r), perRound)
		if err != nil {
			return err
		}
		ourRecs, err := f.admitted(ctx, fmt.Sprintf("ours%d", r), perRound)
		if err != nil {
			return err
		}
		first := func() error { return f.timed(ctx, perRound, f.raw(rawRecs), &rawPhase, &rawCalls) }
		second := func() error { return f.timed(ctx, perRound, f.ours(ourRecs), &ourPhase, &ourCalls) }
		if r%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	total := float64(perRound * rounds)
	ourRate := total / ourPhase.elapsed.Seconds()
	rawRate := total / rawPhase.elapsed.Seconds()
	fmt.Fprintf(out, "dispatch_floor_measured_against=DynamoDB Local, in-process queue (batches of %d, %d at once), provider accepting at once; dispatch handler as deployed (template.yaml's defaults, conversion guard on); raw = consistent GetItem + conditional lease UpdateItem + conditional sent UpdateItem + the conversion guard's count (UpdateItem + Query) per message\n", floorBatch, batches)
	fmt.Fprintf(out, "dispatch_floor_notifications=%d\n", int(total))
	fmt.Fprintf(out, "dispatch_handler_notifications_per_s=%.1f\n", ourRate)
	fmt.Fprintf(out, "dispatch_raw_calls_notifications_per_s=%.1f\n", rawRate)
	fmt.Fprintf(out, "dispatch_vs_raw_ratio=%.3f\n", ourRate/rawRate)
	fmt.Fprintf(out, "dispatch_handler_dynamodb_calls_per_notification=%.2f\n", float64(ourCalls)/total)
	fmt.Fprintf(out, "dispatch_raw_dynamodb_calls_per_notification=%.2f\n", float64(rawCalls)/total)
	return nil
}

// floor is the floor benchmark's set-up: one table, the dispatch handler over counted clients,
// and the same DynamoDB calls made raw through the same counted client.
type floor struct {
	db, counted *dynamodb.Client // set-up uses db; both phases go through counted
	table       string
	box         *seal.Box
	counter     *awscount.Counter
	d           *dispatch.Dispatcher
	batches     int // batches handled at once
	// conv is the conversion guard's store, through counted, and window its counting window:
	// the raw phase counts each send as the deployed dispatcher does.
	conv   *convstore.Store
	window time.Duration
}

// newFloor creates the floor benchmark's tables and handler; drop deletes the tables.
func newFloor(ctx context.Context, endpoint string, batches int) (_ *floor, drop func(), err error) {
	plain := aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()}
	f := &floor{db: awsclient.DynamoDB(plain, endpoint), counter: awscount.NewCounter(), batches: batches}
	name, names := benchNames("bench-floor")
	names.Conversions, names.Guard = name+"-conversion", name+"-guard"
	f.table = names.Notifications
	dropAll, err := createTables(ctx, f.db, names)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			dropAll()
		}
	}()
	key := randomKey()
	keys, err := seal.NewStaticKey(key)
	if err != nil {
		return nil, nil, err
	}
	f.box = seal.New(keys)
	counted := plain
	f.counter.Instrument(&counted)
	f.counted = awsclient.DynamoDB(counted, endpoint)
	if f.d, err = floorDispatcher(ctx, counted, endpoint, names, key); err != nil {
		return nil, nil, err
	}
	f.window = f.d.Conversions.Policy.Window
	f.conv = convstore.New(f.counted, names.Conversions, f.window)
	return f, dropAll, nil
}

// floorDispatcher is the dispatch handler the floor benchmark measures: the dispatch function's
// own (dispatchwire.Build) from template.yaml's environment at its defaults over names, with
// a provider that accepts at once and an in-memory queue in place of the simulator and SQS.
func floorDispatcher(ctx context.Context, awsCfg aws.Config, endpoint string, names tables.Names, sealKey []byte) (*dispatch.Dispatcher, error) {
	env, err := templateEnv("DispatchFunction", map[string]string{
		config.EnvNotificationsTable: names.Notifications, config.EnvConversionTable: names.Conversions, config.EnvGuardTable: names.Guard,
		config.EnvDispatchQueueURL: "http://127.0.0.1:1/000000000000/dispatch", config.EnvReconcileQueueURL: "http://127.0.0.1:1/000000000000/reconcile",
		config.EnvSealLocalKey: base64.StdEncoding.EncodeToString(sealKey),
		config.EnvSMSProviders: config.SMSSimulator, config.EnvSMSSimulatorURL: "http://127.0.0.1:1",
	})
	if err != nil {
		return nil, err
	}
	w, err := workercorewire.FromEnv(awsCfg, env, io.Discard, config.NeedDispatch)
	if err != nil {
		return nil, fmt.Errorf("dispatch floor: %w", err)
	}
	w.DynamoDBEndpoint = endpoint
	w.AWS.BaseEndpoint = aws.String(endpoint)
	d, err := dispatchwire.Build(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("dispatch floor: %w", err)
	}
	d.Sender = acceptAtOnce{}
	for i := range d.Chain {
		d.Chain[i].Sender = acceptAtOnce{}
	}
	d.Queue = &countingQueue{}
	return d, nil
}

// admitted admits count records keyed after prefix (not timed, not counted), eight at a time.
func (f *floor) admitted(ctx context.Context, prefix string, count int) ([]notify.Record, error) {
	recs := make([]notify.Record, count)
	_, err := measure(ctx, count, 8, 0, func(ctx context.Context, i int) error {
		req := notify.Request{
			IdempotencyKey: prefix + "-" + strconv.Itoa(i), EventID: "evt-" + prefix + strconv.Itoa(i), Channel: notify.ChannelSMS,
			Purpose: notify.PurposePasswordReset, To: benchNumber(i), Locale: "en",
			Params: map[string]string{notify.ParamCode: fmt.Sprintf("%06d", i)}, ExpiresAt: time.Now().Add(time.Hour),
		}
		sealed, err := f.box.Seal(ctx, req.IdempotencyKey, req.Secret())
		if err != nil {
			return err
		}
		// The prefix fingerprint and country the deployed intake records, which dispatch's
		// conversion guard counts each send under.
		rec := notify.NewRecord(req, notify.Admission{NotificationID: fmt.Sprintf("01JFLOOR%s%08d", prefix, i), Sealed: sealed,
			DestinationFP: "0123456789abcdef0123456789abcdef", PrefixFP: fmt.Sprintf("%032x", i), Country: "US"}, time.Now(), notify.DefaultPolicy())
		if _, _, err := dynamostore.New(f.db, f.table).Admit(ctx, rec); err != nil {
			return err
		}
		recs[i] = rec
		return nil
	})
	return recs, err
}

// ours returns a call that hands batch b of recs to the dispatch handler as one SQS event.
func (f *floor) ours(recs []notify.Record) func(context.Context, int) error {
	return func(ctx context.Context, b int) error {
		ev := events.SQSEvent{}
		for _, rec := range recs[b*floorBatch : (b+1)*floorBatch] {
			body, _ := json.Marshal(notify.MessageOf(rec))
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: rec.IdempotencyKey, Body: string(body)})
		}
		resp, err := f.d.Handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("dispatch floor: batch %d: %v %v", b, resp.BatchItemFailures, err)
		}
		return nil
	}
}

// raw returns a call that makes the handler's DynamoDB calls by hand for batch b of recs, the
// batch's records in parallel as the handler works on them: rawDispatch, then the conversion
// guard's count of the send (its store's UpdateItem and Query).
func (f *floor) raw(recs []notify.Record) func(context.Context, int) error {
	return func(ctx context.Context, b int) error {
		var wg sync.WaitGroup
		errs := make([]error, floorBatch)
		for i, rec := range recs[b*floorBatch : (b+1)*floorBatch] {
			wg.Go(func() {
				if errs[i] = rawDispatch(ctx, f.counted, f.table, rec.IdempotencyKey); errs[i] == nil {
					now := time.Now()
					_, errs[i] = f.conv.CountSent(ctx, rec.PrefixFP, now, now.Add(-f.window))
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// warm runs both paths once on records of their own.
func (f *floor) warm(ctx context.Context) error {
	for _, w := range []struct {
		name string
		path func([]notify.Record) func(context.Context, int) error
	}{{"raw", f.raw}, {"ours", f.ours}} {
		recs, err := f.admitted(ctx, "warm-"+w.name, 2*floorBatch*f.batches)
		if err != nil {
			return err
		}
		if _, err := measure(ctx, 2*f.batches, f.batches, 0, w.path(recs)); err != nil {
			return fmt.Errorf("dispatch floor: warm: %w", err)
		}
	}
	return nil
}

// timed measures call over the n records' batches, adding the time to into and the DynamoDB
// calls counted to calls.
func (f *floor) timed(ctx context.Context, n int, call func(context.Context, int) error, into *phase, calls *int64) error {
	f.counter.Reset()
	p, err := measure(ctx, n/floorBatch, f.batches, 0, call)
	if err != nil {
		return err
	}
	into.add(p)
	*calls += f.counter.Total()
	return nil
}

// rawDispatch makes the dispatch handler's DynamoDB calls for one accepted record by hand: a
// consistent read, the lease (conditioned on the version and the deadline), and sent
// (conditioned on the version), with the attributes the store writes.
func rawDispatch(ctx context.Context, db *dynamodb.Client, table, key string) error {
	k := map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: key}}
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return err
	}
	if len(got.Item) == 0 {
		return fmt.Errorf("raw dispatch: %s not found", key)
	}
	now := time.Now().UTC()
	n := expression.Name
	lease, err := expression.NewBuilder().WithUpdate(
		expression.Set(n(tables.AttrState), expression.Value(string(notify.StateDispatching))).
			Set(n(tables.AttrReason), expression.Value(string(notify.ReasonLeaseAcquired))).
			Set(n(tables.AttrVersion), expression.Value(2)).Set(n(tables.AttrAttempt), expression.Value(1)).
			Set(n(tables.AttrUpdatedAt), expression.Value(tables.FormatTime(now))).
			Set(n(tables.AttrLeaseUntil), expression.Value(tables.FormatTime(now.Add(30*time.Second)))).
			Set(n(tables.AttrLeaseToken), expression.Value("raw-lease")).
			Set(n(tables.AttrAttemptedNotificationID), expression.Value("raw-"+key)).
			Set(n(tables.AttrWriteToken), expression.Value("raw-w1"))).
		WithCondition(n(tables.AttrVersion).Equal(expression.Value(1)).
			And(n(tables.AttrDispatchDeadline).GreaterThan(expression.Value(tables.FormatTime(now))))).Build()
	if err != nil {
		return err
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: k, UpdateExpression: lease.Update(), ConditionExpression: lease.Condition(),
		ExpressionAttributeNames: lease.Names(), ExpressionAttributeValues: lease.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}); err != nil {
		return err
	}
	sent, err := expression.NewBuilder().WithUpdate(
		expression.Set(n(tables.AttrState), expression.Value(string(notify.StateSent))).
			Set(n(tables.AttrReason), expression.Value(string(notify.ReasonProviderAccepted))).
			Set(n(tables.AttrVersion), expression.Value(3)).
			Set(n(tables.AttrProviderMessageID), expression.Value("m-"+key)).
			Set(n(tables.AttrWriteToken), expression.Value("raw-w2")).
			Remove(n(tables.AttrSealed)).Remove(n(tables.AttrNextActionAt)).Remove(n(tables.AttrDueShard)).
			Remove(n(tables.AttrLeaseUntil)).Remove(n(tables.AttrLeaseToken))).
		WithCondition(n(tables.AttrVersion).Equal(expression.Value(2))).Build()
	if err != nil {
		return err
	}
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: k, UpdateExpression: sent.Update(), ConditionExpression: sent.Condition(),
		ExpressionAttributeNames: sent.Names(), ExpressionAttributeValues: sent.Values(),
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return err
}

// acceptAtOnce is a provider that accepts every message at once, so the floor benchmark
// measures our code and the database only.
type acceptAtOnce struct{}

func (acceptAtOnce) Send(_ context.Context, req sms.SendRequest) sms.Outcome {
	return sms.Accepted("m-" + req.AttemptRef)
}
