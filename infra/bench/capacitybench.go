package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/streamsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/archive"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/tables"
	"github.com/resetnotify/resetnotify/shared/wire/dispatch"
	intakewire "github.com/resetnotify/resetnotify/shared/wire/intake"
)

// lifecycle is what the capacity benchmark measured for n notifications taken from admission
// to delivered on the happy path, phase by phase, through the handlers the functions run.
type lifecycle struct {
	N int
	// Admission, Dispatch, Receipt and Audit are the capacity each phase consumed: the intake
	// handler's admissions; the dispatch handler's lease and sent transitions; provider-events
	// recording a delivered receipt and the sent -> delivered transition; the audit writer's
	// entries for all of them.
	Admission, Dispatch, Receipt, Audit capacityReport
	// Transitions counts the transitions after admission (lease, sent, delivered per
	// notification); AuditEntries the audit entries written.
	Transitions, AuditEntries int
	// LogBytes is what each function wrote to its log (JSON lines and EMF) over the run.
	LogBytes map[string]int64
	// Invocations and Busy are the handler calls per function and the time spent in them.
	Invocations map[string]int
	Busy        map[string]time.Duration
	// Requests are the AWS calls of the whole run, counted by awscount.Counter.
	Requests map[awscount.Op]int64
	// Roles names each physical table by its role (notifications, audit, receipts, guard,
	// conversions).
	Roles map[string]string
	// Archive is what the audit archive keeps per notification (the entries' archive parts).
	Archive archiveFigures
}

// archiveFigures are a notification's audit entries as the archive step writes them: Bytes
// compressed (what S3 stores), JSON before compression (what sets the number of parts).
type archiveFigures struct {
	Bytes, JSON float64
}

// countingWriter counts the bytes written through it.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// capacityBench takes n notifications from admission to delivered on one DynamoDB Local (and
// moto for the dispatch queue) and measures, per phase, the capacity DynamoDB reports, the log
// bytes each function writes, its invocations and busy time, and the AWS requests.
func capacityBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, n int, prices priceList) (lifecycle, storageSizes, error) {
	meter := newCapacityMeter()
	p, err := newPipeline(ctx, ddbEndpoint, sqsEndpoint, smssim.Config{}, capacityKind, meter.Instrument)
	if err != nil {
		return lifecycle{}, nil, err
	}
	defer p.close()
	receiptsTable := p.name + "-receipts"
	extra := tables.Names{Receipts: receiptsTable, Guard: p.name + "-guard", Conversions: p.name + "-conversion"}
	defer dropTables(context.Background(), p.db, extra)
	if err := p.asDeployed(ctx, ddbEndpoint, extra); err != nil {
		return lifecycle{}, nil, err
	}
	lc := newLifecycle(n, map[string]string{p.table: "notifications", p.audit: "audit", receiptsTable: "receipts",
		extra.Guard: "guard", extra.Conversions: "conversions", p.sealKeys: "seal_keys"})
	logs := functionLogs()
	countedDB := awsclient.DynamoDB(p.countedCfg, ddbEndpoint)
	p.counter.Reset()

	// Admission: the intake function's HTTP handler, as the API invokes it.
	meter.Reset()
	if err := p.admitHTTP(ctx, n, logs["intake"], &lc); err != nil {
		return lifecycle{}, nil, err
	}
	lc.Admission = meter.Snapshot()

	// Dispatch: lease and sent, through the dispatch handler.
	meter.Reset()
	if err := p.dispatchTimed(ctx, n, logs["dispatch"], &lc); err != nil {
		return lifecycle{}, nil, err
	}
	lc.Dispatch = meter.Snapshot()

	// Receipts: the delivered receipt of every message, through provider-events' recorder.
	meter.Reset()
	if err := p.receiptsTimed(ctx, countedDB, receiptsTable, logs["provider-events"], &lc); err != nil {
		return lifecycle{}, nil, err
	}
	lc.Receipt = meter.Snapshot()
	lc.Transitions = 3 * n

	// Audit: every stream record through the audit writer, in batches of the template's 100.
	meter.Reset()
	if err := p.auditTimed(ctx, ddbEndpoint, countedDB, n, logs["audit"], &lc); err != nil {
		return lifecycle{}, nil, err
	}
	lc.Audit = meter.Snapshot()
	lc.Requests = p.counter.Counts()
	for f, w := range logs {
		lc.LogBytes[f] = w.n.Load()
	}
	sizes, err := p.measureStorage(ctx, extra, n, prices)
	if err != nil {
		return lifecycle{}, nil, err
	}
	if lc.Archive, err = p.measureArchive(ctx, n); err != nil {
		return lifecycle{}, nil, err
	}
	return lc, sizes, nil
}

// asDeployed creates the receipts, guard and conversion tables of names, and puts the intake as the intake function wires it at the template's defaults (the
// abuse guard's counters and the conversion guard's prefix check on, allow-list US,CA) in
// front of the pipeline's queue, and turns on the dispatch worker's conversion counting, as
// the template does (CONVERSION_TABLE).
func (p *pipeline) asDeployed(ctx context.Context, ddbEndpoint string, names tables.Names) error {
	if err := tablesetup.Create(ctx, p.db, tables.Names{Notifications: p.table, Audit: p.audit,
		Receipts: names.Receipts, Guard: names.Guard, Conversions: names.Conversions}); err != nil {
		return err
	}
	env := map[string]string{
		config.EnvNotificationsTable: p.table,
		config.EnvDispatchQueueURL:   p.dispatchURL,
		config.EnvDestinationPepper:  base64.StdEncoding.EncodeToString(randomKey()),
		config.EnvFingerprintKey:     base64.StdEncoding.EncodeToString(randomKey()),
		config.EnvGuardTable:         names.Guard,
		config.EnvConversionTable:    names.Conversions,
		config.EnvAllowedCountries:   "US,CA",
	}
	maps.Copy(env, p.sealing)
	cfg, err := config.Load(func(k string) string { return env[k] }, config.NeedIntake)
	if err != nil {
		return fmt.Errorf("capacity bench: intake as deployed: %w", err)
	}
	awsCfg := p.countedCfg.Copy()
	awsCfg.BaseEndpoint = aws.String(ddbEndpoint)
	in, err := intakewire.Service(ctx, cfg, awsCfg)
	if err != nil {
		return fmt.Errorf("capacity bench: intake as deployed: %w", err)
	}
	in.Queue = p.intake.Queue
	p.intake = in
	// The workers name their endpoints; the conversion store takes the configuration's.
	p.wiring.AWS.BaseEndpoint = aws.String(ddbEndpoint)
	p.wiring.Config.Conversion = config.Conversion{Table: names.Conversions, Policy: notify.DefaultConversionPolicy()}
	return nil
}

// measureArchive encodes the audit entries of the run as the archive step does (canonical
// order, parts of archive.DefaultPartBytes of JSON Lines, gzip) and returns their bytes per
// notification.
func (p *pipeline) measureArchive(ctx context.Context, n int) (archiveFigures, error) {
	var entries []auditlog.Entry
	in := &dynamodb.ScanInput{TableName: aws.String(p.audit)}
	for {
		page, err := p.db.Scan(ctx, in)
		if err != nil {
			return archiveFigures{}, fmt.Errorf("capacity bench: archive: %w", err)
		}
		for _, it := range page.Items {
			if auditlog.IsLedgerItem(it) {
				continue
			}
			e, err := auditlog.FromItem(it)
			if err != nil {
				return archiveFigures{}, fmt.Errorf("capacity bench: archive: %w", err)
			}
			entries = append(entries, e)
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	archive.SortCanonical(entries)
	parts, err := archive.Parts(time.Now().UTC(), entries, archive.DefaultPartBytes)
	if err != nil {
		return archiveFigures{}, err
	}
	var f archiveFigures
	for _, pt := range parts {
		f.Bytes += float64(pt.Ref.Bytes)
	}
	for _, e := range entries {
		f.JSON += float64(len(auditlog.EntryJSON(e)) + 1)
	}
	f.Bytes, f.JSON = f.Bytes/float64(n), f.JSON/float64(n)
	return f, nil
}

// newLifecycle is an empty lifecycle of n notifications over tables of the roles given.
func newLifecycle(n int, roles map[string]string) lifecycle {
	return lifecycle{
		N:           n,
		LogBytes:    map[string]int64{},
		Invocations: map[string]int{},
		Busy:        map[string]time.Duration{},
		Roles:       roles,
	}
}

// functionLogs counts the log bytes of each function the capacity benchmark runs.
func functionLogs() map[string]*countingWriter {
	logs := map[string]*countingWriter{}
	for _, f := range []string{"intake", "dispatch", "provider-events", "audit"} {
		logs[f] = &countingWriter{}
	}
	return logs
}

// receiptsTimed records the delivered receipt of every message the simulator accepted through
// provider-events' recorder, one invocation each, logging to log.
func (p *pipeline) receiptsTimed(ctx context.Context, db *dynamodb.Client, receiptsTable string, log io.Writer, lc *lifecycle) error {
	recorder := &providerevents.Recorder{
		Receipts:      providerevents.NewStore(db, receiptsTable, 0, notify.SystemClock{}),
		Keys:          dynamostore.New(db, p.table),
		Notifications: dynamostore.New(db, p.table),
		Clock:         notify.SystemClock{},
		Log:           obs.NewLogger(log, slog.LevelInfo),
		Metrics:       &obs.Metrics{W: log, Function: "provider-events"},
	}
	for _, m := range p.sim.Messages() {
		start := time.Now()
		res, err := recorder.Record(ctx, providerevents.Receipt{
			AttemptRef: m.ClientRef, MessageID: m.MessageID, Status: sms.ReceiptDelivered,
			At: time.Now().UTC(), Provider: "simulator",
		})
		lc.Busy["provider-events"] += time.Since(start)
		lc.Invocations["provider-events"]++
		if err != nil {
			return fmt.Errorf("capacity bench: receipt: %w", err)
		}
		if res.State != notify.StateDelivered {
			return fmt.Errorf("capacity bench: receipt left %s", res.State)
		}
	}
	return nil
}

// auditTimed reads the 4n stream records of n notifications and hands them to the audit
// writer in batches of the template's 100, logging to log.
func (p *pipeline) auditTimed(ctx context.Context, ddbEndpoint string, db *dynamodb.Client, n int, log io.Writer, lc *lifecycle) error {
	records, err := p.readStream(ctx, ddbEndpoint, 4*n)
	if err != nil {
		return err
	}
	h := &audit.Handler{
		Writer:   &auditlog.Writer{DB: db, Table: p.audit},
		Function: "audit", Clock: notify.SystemClock{},
		Log:     obs.NewLogger(log, slog.LevelInfo),
		Metrics: &obs.Metrics{W: log, Function: "audit"},
	}
	for i := 0; i < len(records); i += 100 {
		batch := records[i:min(i+100, len(records))]
		start := time.Now()
		resp, err := h.Handle(ctx, events.DynamoDBEvent{Records: batch})
		lc.Busy["audit"] += time.Since(start)
		lc.Invocations["audit"]++
		if err != nil || len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("capacity bench: audit batch: %v %v", resp.BatchItemFailures, err)
		}
	}
	lc.AuditEntries = len(records)
	return nil
}

// measureStorage measures the bytes per notification of each table and the months it keeps them.
func (p *pipeline) measureStorage(ctx context.Context, names tables.Names, n int, prices priceList) (storageSizes, error) {
	months := retentionMonths(prices)
	var sizes storageSizes
	for _, t := range []struct {
		role string
		def  *dynamodb.CreateTableInput
	}{{"notifications", tablesetup.Notifications(p.table)}, {"audit", tablesetup.Audit(p.audit)}, {"receipts", tablesetup.Receipts(names.Receipts)},
		{"guard", tablesetup.Guard(names.Guard)}, {"conversions", tablesetup.Conversion(names.Conversions)}} {
		b, err := storagePerNotification(ctx, p.db, t.def, n)
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, storageSize{Name: t.role, Bytes: b, Months: months[t.role]})
	}
	return sizes, nil
}

// admitHTTP admits n notifications through the intake function's HTTP handler, eight at a
// time, logging to log.
func (p *pipeline) admitHTTP(ctx context.Context, n int, log io.Writer, lc *lifecycle) error {
	h := intake.New(p.intake, obs.NewLogger(log, slog.LevelInfo), &obs.Metrics{W: log, Function: "intake"})
	expires := time.Now().UTC().Add(10 * time.Minute).Format(time.RFC3339)
	p.keys = make([]string, n)
	var busy atomic.Int64
	_, err := measure(ctx, n, 8, 0, func(ctx context.Context, i int) error {
		key := fmt.Sprintf("%s-%06d", p.name, i)
		p.keys[i] = key
		// A distinct number of the default allow-list, each prefix under its ceiling.
		body := fmt.Sprintf(`{"event_id":"evt-%s","channel":"sms","purpose":"password_reset","to":"%s","locale":"en","params":{"code":"%06d"},"expires_at":"%s"}`,
			key, benchNumber(i), i, expires)
		start := time.Now()
		resp, err := h.Handle(ctx, events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /v1/notifications", RawPath: "/v1/notifications", Body: body,
			Headers:        map[string]string{"content-type": "application/json", "idempotency-key": key},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "bench", Authorizer: localapi.Caller(localapi.LocalCallerRole), HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/v1/notifications"}},
		})
		busy.Add(int64(time.Since(start)))
		if err != nil {
			return err
		}
		if resp.StatusCode != 202 {
			return fmt.Errorf("admission %d: status %d: %s", i, resp.StatusCode, resp.Body)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("capacity bench: admit: %w", err)
	}
	lc.Invocations["intake"] += n
	lc.Busy["intake"] += time.Duration(busy.Load())
	return nil
}

// dispatchTimed rebuilds the dispatcher to log to log, then pumps the dispatch queue with one
// receiver until n messages are handled, timing each batch handed to the handler.
func (p *pipeline) dispatchTimed(ctx context.Context, n int, log io.Writer, lc *lifecycle) error {
	w := p.wiring
	w.Out = log
	d, err := dispatch.Build(ctx, w)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	timed := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		start := time.Now()
		resp, err := d.Handle(ctx, ev)
		mu.Lock()
		lc.Busy["dispatch"] += time.Since(start)
		lc.Invocations["dispatch"]++
		mu.Unlock()
		return resp, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for deleted := 0; deleted < n; {
		res, err := pump.Once(ctx, p.counted, p.dispatchURL, timed, pump.Options{Region: emulator.Region, VisibilityTimeout: 30 * time.Second})
		if err != nil {
			return fmt.Errorf("capacity bench: dispatch: %w", err)
		}
		deleted += res.Deleted
		if res.Received == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := len(p.sim.Messages()); got != n {
		return fmt.Errorf("capacity bench: the simulator accepted %d of %d", got, n)
	}
	return nil
}

// readStream reads the notifications table's stream (uncounted) until it holds want records,
// in sequence order per shard, as the event source mapping would deliver them.
func (p *pipeline) readStream(ctx context.Context, endpoint string, want int) ([]events.DynamoDBEventRecord, error) {
	plain := aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()}
	streams := streamsclient.New(plain, endpoint)
	desc, err := p.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(p.table)})
	if err != nil {
		return nil, err
	}
	arn := aws.ToString(desc.Table.LatestStreamArn)
	deadline := time.Now().Add(time.Minute)
	for {
		var out []events.DynamoDBEventRecord
		sd, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err != nil {
			return nil, fmt.Errorf("capacity bench: describe stream: %w", err)
		}
		for _, sh := range sd.StreamDescription.Shards {
			it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
				StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
			})
			if err != nil {
				return nil, fmt.Errorf("capacity bench: shard iterator: %w", err)
			}
			for iter := it.ShardIterator; iter != nil; {
				page, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
				if err != nil {
					return nil, fmt.Errorf("capacity bench: get records: %w", err)
				}
				for _, r := range page.Records {
					out = append(out, auditlog.EventRecord(r, arn))
				}
				if len(page.Records) == 0 {
					break
				}
				iter = page.NextShardIterator
			}
		}
		if len(out) >= want || time.Now().After(deadline) {
			if len(out) < want {
				return nil, fmt.Errorf("capacity bench: the stream holds %d records, want %d", len(out), want)
			}
			return out, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// notificationsWrites keeps the notifications table's shares.
func (lc lifecycle) onTable(role string) func(capacityKey) bool {
	return func(k capacityKey) bool { return lc.Roles[k.Table] == role }
}

// perTransition returns the write units per transition kind ("->dispatching", ...), over the
// dispatch and receipt phases, and their mean.
func (lc lifecycle) perTransition() (map[string]float64, float64) {
	both := lc.Dispatch.add(lc.Receipt)
	sums, calls := map[string]float64{}, map[string]int64{}
	var total float64
	var n int64
	for k, u := range both {
		if lc.Roles[k.Table] != "notifications" || !strings.HasPrefix(k.Op, "UpdateItem->") {
			continue
		}
		kind := strings.TrimPrefix(k.Op, "UpdateItem")
		sums[kind] += u.Write
		total += u.Write
		if k.Index == "" {
			calls[kind] += u.Calls
			n += u.Calls
		}
	}
	out := map[string]float64{}
	for kind, s := range sums {
		if calls[kind] > 0 {
			out[kind] = s / float64(calls[kind])
		}
	}
	if n == 0 {
		return out, 0
	}
	return out, total / float64(n)
}

// all returns every phase's capacity summed.
func (lc lifecycle) all() capacityReport {
	return lc.Admission.add(lc.Dispatch).add(lc.Receipt).add(lc.Audit)
}

// formatKinds renders per-kind figures sorted by name.
func formatKinds(m map[string]float64) string { return formatSorted(m, "%s:%.2f") }

// formatSorted renders m as name:value pairs, each by format, sorted by name and joined by
// commas.
func formatSorted[V any](m map[string]V, format string) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf(format, k, m[k])
	}
	return strings.Join(parts, ",")
}

// printCapacity writes the capacity lines of lc.
func printCapacity(out io.Writer, lc lifecycle) {
	n := float64(lc.N)
	_, admW := lc.Admission.total(lc.onTable("notifications"))
	admR, _ := lc.Admission.total(nil)
	kinds, perTransition := lc.perTransition()
	maxTransition := 0.0
	for _, v := range kinds {
		maxTransition = max(maxTransition, v)
	}
	allR, allW := lc.all().total(nil)
	_, auditW := lc.Audit.total(lc.onTable("audit"))
	auditR, _ := lc.Audit.total(nil)
	fmt.Fprintf(out, "capacity_measured_against=DynamoDB Local, ReturnConsumedCapacity=INDEXES, %d notifications admitted -> delivered on the happy path\n", lc.N)
	fmt.Fprintf(out, "record_write_units_per_admission=%.2f\n", admW/n)
	fmt.Fprintf(out, "record_write_units_per_admission_breakdown=%s\n", formatShares(lc.Admission.byIndex(lc.Roles, n)))
	fmt.Fprintf(out, "record_read_units_per_admission=%.2f\n", admR/n)
	fmt.Fprintf(out, "write_units_per_transition=%.2f\n", perTransition)
	fmt.Fprintf(out, "write_units_per_transition_max=%.2f\n", maxTransition)
	fmt.Fprintf(out, "write_units_per_transition_by_state=%s\n", formatKinds(kinds))
	fmt.Fprintf(out, "write_units_per_transition_breakdown=%s\n", formatShares(lc.transitionShares()))
	fmt.Fprintf(out, "write_units_per_audit_entry=%.2f\n", auditW/float64(lc.AuditEntries))
	fmt.Fprintf(out, "read_units_per_audit_entry=%.2f\n", auditR/float64(lc.AuditEntries))
	fmt.Fprintf(out, "write_units_per_delivered_notification=%.2f\n", allW/n)
	fmt.Fprintf(out, "read_units_per_delivered_notification=%.2f\n", allR/n)
	fmt.Fprintf(out, "write_units_per_delivered_notification_breakdown=%s\n", formatShares(lc.all().byIndex(lc.Roles, n)))
	fmt.Fprintf(out, "capacity_per_delivered_notification_by_call=%s\n", lc.all().format(lc.Roles, n))
}

// formatShares renders name:value pairs sorted by name.
func formatShares(m map[string]float64) string { return formatKinds(m) }

// transitionShares returns the notifications table's write units per transition, per index,
// over the dispatch and receipt phases.
func (lc lifecycle) transitionShares() map[string]float64 {
	out := map[string]float64{}
	for name, v := range lc.Dispatch.add(lc.Receipt).byIndex(lc.Roles, float64(lc.Transitions)) {
		if strings.HasPrefix(name, "notifications") {
			out[name] = v
		}
	}
	return out
}
