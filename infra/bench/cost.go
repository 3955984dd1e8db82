package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/archive"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// costOptions shape the cost benchmark.
type costOptions struct {
	// N is how many notifications are taken from admission to delivered.
	N int
	// Template is the path of template.yaml (memory size and architecture).
	Template string
}

//go:embed prices.json
var pricesJSON []byte

// priceList is prices.json: every price the cost model uses, with its date and source, and
// the assumptions that are not measured.
type priceList struct {
	Region string `json:"region"`
	Taken  string `json:"taken"`
	Source string `json:"source"`
	Prices map[string]struct {
		USD    float64 `json:"usd"`
		Unit   string  `json:"unit"`
		Source string  `json:"source"`
	} `json:"prices"`
	Assumptions map[string]struct {
		Value float64 `json:"value"`
		Why   string  `json:"why"`
	} `json:"assumptions"`
}

func loadPrices() (priceList, error) {
	var p priceList
	if err := json.Unmarshal(pricesJSON, &p); err != nil {
		return p, fmt.Errorf("prices.json: %w", err)
	}
	return p, nil
}

func (p priceList) usd(name string) float64 {
	v, ok := p.Prices[name]
	if !ok {
		panic("prices.json has no " + name)
	}
	return v.USD
}

func (p priceList) assume(name string) float64 {
	v, ok := p.Assumptions[name]
	if !ok {
		panic("prices.json has no assumption " + name)
	}
	return v.Value
}

// lambdaShape is what the template says about the functions' billing.
type lambdaShape struct {
	MemoryMB     int
	Architecture string
}

// templateShape reads the Globals memory size and the Architecture parameter's default.
func templateShape(path string) (lambdaShape, error) {
	t, err := samtemplate.Load(path)
	if err != nil {
		return lambdaShape{}, err
	}
	raw, ok := t.Globals["Function"]["MemorySize"]
	if !ok {
		return lambdaShape{}, fmt.Errorf("%s: no Globals.Function.MemorySize", path)
	}
	mem, err := t.Int(raw)
	if err != nil {
		return lambdaShape{}, err
	}
	arch, err := t.Param("Architecture")
	if err != nil {
		return lambdaShape{}, err
	}
	return lambdaShape{MemoryMB: mem, Architecture: arch}, nil
}

// costLine is one line of the model: what it is, its quantity per notification, and dollars
// per million notifications.
type costLine struct {
	Name     string  `json:"name"`
	Quantity float64 `json:"quantity_per_notification"`
	Unit     string  `json:"unit"`
	USDPerM  float64 `json:"usd_per_million_notifications"`
}

// coldStartCalls are the AWS calls a function makes at init, by function (KMS data keys and
// SSM parameters in AWS; none locally). From the shared/wire packages.
var coldStartCalls = map[string]struct{ KMS, SSM int }{
	"intake":   {KMS: 1, SSM: 2}, // GenerateDataKey at the first seal; pepper and fingerprint key
	"dispatch": {KMS: 1, SSM: 0}, // Decrypt of each intake environment's data key, once (Sinch: 1 SSM)
}

// costModel prices lc. Durations are the handlers' busy time measured in this process against
// DynamoDB Local, billed per invocation at the template's memory size and architecture.
func costModel(lc lifecycle, shape lambdaShape, p priceList, sizes storageSizes) ([]costLine, float64) {
	n := float64(lc.N)
	var lines []costLine
	add := func(name string, qty float64, unit string, usdEach float64) {
		lines = append(lines, costLine{Name: name, Quantity: qty, Unit: unit, USDPerM: qty * usdEach * 1e6})
	}
	allR, allW := lc.all().total(nil)
	add("dynamodb_writes", allW/n, "write request units", p.usd("dynamodb_write_request_unit_usd"))
	add("dynamodb_reads", allR/n, "read request units", p.usd("dynamodb_read_request_unit_usd"))
	periodReadLine(add, lc, p)
	add("dynamodb_storage_and_pitr", sizes.gbMonths(), "GB-months (tables and indexes, for their retention; audit entries for the hot window)", p.usd("dynamodb_storage_gb_month_usd")+p.usd("dynamodb_pitr_gb_month_usd"))
	archiveLines(add, lc.Archive, p)

	gbSecond := p.usd("lambda_gb_second_arm64_usd")
	if shape.Architecture == "x86_64" {
		gbSecond = p.usd("lambda_gb_second_x86_64_usd")
	}
	var invocations, gbs float64
	for f, k := range lc.Invocations {
		invocations += float64(k) / n
		// Lambda bills each invocation's duration rounded up to the millisecond.
		perCall := lc.Busy[f] / time.Duration(max(k, 1))
		billedMS := float64((perCall + time.Millisecond - 1) / time.Millisecond)
		gbs += float64(k) / n * billedMS / 1000 * float64(shape.MemoryMB) / 1024
	}
	add("lambda_requests", invocations, "invocations", p.usd("lambda_request_usd"))
	add("lambda_duration", gbs, "GB-seconds ("+shape.Architecture+", "+fmt.Sprint(shape.MemoryMB)+" MB)", gbSecond)
	add("http_api_requests", 1, "requests", p.usd("http_api_request_usd"))

	var sqsCalls float64
	for op, k := range lc.Requests {
		if op.Service == "SQS" {
			sqsCalls += float64(k)
		}
	}
	add("sqs_requests", sqsCalls/n, "requests", p.usd("sqs_request_usd"))

	var logBytes float64
	for _, b := range lc.LogBytes {
		logBytes += float64(b)
	}
	platform := invocations * p.assume("lambda_platform_log_bytes_per_invocation")
	add("cloudwatch_logs_ingestion", (logBytes/n+platform)/1e9, "GB (our lines measured, Lambda's platform lines estimated)", p.usd("cloudwatch_logs_ingestion_gb_usd"))

	var kms float64
	for f, c := range coldStartCalls {
		kms += float64(c.KMS) * float64(lc.Invocations[f]) / n / p.assume("invocations_per_cold_start")
	}
	add("kms_requests", kms, "requests (per cold start, amortised)", p.usd("kms_request_usd"))
	add("ssm_get_parameter", 2/p.assume("invocations_per_cold_start"), "requests (standard throughput)", p.usd("ssm_get_parameter_standard_usd"))
	add("xray_traces", p.assume("xray_sampled_fraction"), "traces recorded", p.usd("xray_trace_recorded_usd"))

	var total float64
	for _, l := range lines {
		total += l.USDPerM
	}
	return lines, total
}

// periodReadLine prices the period reads of the digest step and the archive step: each reads
// every entry of a period once, through its ledger (a BatchGetItem of the entry, eventually
// consistent, 0.5 read units for an item under 4 KB; the ledger items' Query is a few bytes an
// entry). The pipeline lc measured does not make them, so they are priced from its entry
// count.
func periodReadLine(add func(string, float64, string, float64), lc lifecycle, p priceList) {
	add("dynamodb_audit_period_reads", float64(lc.AuditEntries)/float64(lc.N)*periodReadsPerEntry*0.5,
		"read request units (digest and archive steps, 0.5 per entry each)", p.usd("dynamodb_read_request_unit_usd"))
}

// archiveLines prices the audit archive as deployed: every entry's compressed bytes kept in S3
// Standard for the 30 days before the lifecycle rule moves them to Glacier Instant Retrieval
// for the rest of the retention; one PUT and one transition per part (parts of
// archive.DefaultPartBytes of JSON; the manifest, one per period whatever the volume, is a
// fixed cost like the digest's).
func archiveLines(add func(string, float64, string, float64), a archiveFigures, p priceList) {
	gb := a.Bytes / 1e9
	month := float64(730 * time.Hour)
	standard := float64(30*24*time.Hour) / month
	glacier := float64(config.DefaultAuditRetention)/month - standard
	add("s3_archive_storage_standard", gb*standard, "GB-months (30 days in S3 Standard)", p.usd("s3_standard_gb_month_usd"))
	add("s3_archive_storage_glacier_ir", gb*glacier, "GB-months (the rest of the retention in Glacier Instant Retrieval)", p.usd("s3_glacier_ir_gb_month_usd"))
	parts := a.JSON / float64(archive.DefaultPartBytes)
	add("s3_archive_puts", parts, "PUT requests (one per part)", p.usd("s3_put_request_usd"))
	add("s3_archive_transitions", parts, "lifecycle transitions to Glacier Instant Retrieval", p.usd("s3_transition_glacier_ir_usd"))
}

// periodReadsPerEntry is how many times the functions read each audit entry back: once to
// digest its period, once to archive it.
const periodReadsPerEntry = 2

// costGroups sorts the model's lines into the split costBench prints (usd_<group>_per_million).
var costGroups = map[string]string{
	"dynamodb_storage_and_pitr": "storage", "s3_archive_storage_standard": "storage", "s3_archive_storage_glacier_ir": "storage",
	"dynamodb_writes": "writes", "s3_archive_puts": "writes", "s3_archive_transitions": "writes",
	"dynamodb_reads": "reads", "dynamodb_audit_period_reads": "reads",
	"lambda_requests": "compute", "lambda_duration": "compute",
	"cloudwatch_logs_ingestion": "logs",
}

// costSplit sums lines by costGroups ("other" for the rest), in a fixed order.
func costSplit(lines []costLine) []struct {
	Group string
	USD   float64
} {
	sums := map[string]float64{}
	for _, l := range lines {
		g, ok := costGroups[l.Name]
		if !ok {
			g = "other"
		}
		sums[g] += l.USDPerM
	}
	var out []struct {
		Group string
		USD   float64
	}
	for _, g := range []string{"storage", "writes", "reads", "compute", "logs", "other"} {
		out = append(out, struct {
			Group string
			USD   float64
		}{g, sums[g]})
	}
	return out
}

// costBench measures capacity, log bytes, requests and durations per notification
// (capacityBench) and prints them with the dollar cost model.
func costBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, o costOptions, out io.Writer) error {
	prices, err := loadPrices()
	if err != nil {
		return err
	}
	shape, err := templateShape(o.Template)
	if err != nil {
		return err
	}
	lc, sizes, err := capacityBench(ctx, ddbEndpoint, sqsEndpoint, o.N, prices)
	if err != nil {
		return err
	}
	printCapacity(out, lc)
	n := float64(lc.N)
	var logTotal int64
	for _, f := range sortedKeys(lc.LogBytes) {
		fmt.Fprintf(out, "log_bytes_per_notification_%s=%.0f\n", metricName(f), float64(lc.LogBytes[f])/n)
		logTotal += lc.LogBytes[f]
	}
	fmt.Fprintf(out, "log_bytes_per_notification=%.0f\n", float64(logTotal)/n)
	for _, f := range sortedKeys(lc.Invocations) {
		k := lc.Invocations[f]
		fmt.Fprintf(out, "invocations_per_notification_%s=%.3f\n", metricName(f), float64(k)/n)
		fmt.Fprintf(out, "handler_ms_per_invocation_%s=%.2f\n", metricName(f), float64(lc.Busy[f])/float64(max(k, 1))/float64(time.Millisecond))
	}
	fmt.Fprintf(out, "aws_requests_per_delivered_notification=%s\n", awscount.FormatCounts(lc.Requests, n))
	for _, s := range sizes {
		fmt.Fprintf(out, "storage_bytes_per_notification_%s=%.0f\n", s.Name, s.Bytes)
		fmt.Fprintf(out, "storage_days_%s=%.1f\n", s.Name, s.Months*730/24)
	}
	fmt.Fprintf(out, "archive_bytes_per_notification=%.0f\n", lc.Archive.Bytes)
	fmt.Fprintf(out, "archive_json_bytes_per_notification=%.0f\n", lc.Archive.JSON)
	for _, f := range sortedKeys(coldStartCalls) {
		c := coldStartCalls[f]
		fmt.Fprintf(out, "cold_start_calls_%s=kms:%d,ssm:%d\n", metricName(f), c.KMS, c.SSM)
	}
	lines, total := costModel(lc, shape, prices, sizes)
	fmt.Fprintf(out, "cost_measured_against=%s on-demand list prices taken %s (infra/bench/prices.json, not re-fetched), %d notifications admitted -> delivered on the happy path through the intake wired as deployed (abuse guard and conversion guard on: their counters included), %s %d MB from template.yaml, audit entries kept %d days in DynamoDB (AuditHotDays) plus the TTL delay, then archived, SMS excluded\n",
		prices.Region, prices.Taken, lc.N, shape.Architecture, shape.MemoryMB, config.DefaultAuditHotDays)
	parts := make([]string, len(lines))
	for i, l := range lines {
		parts[i] = fmt.Sprintf("%s:%.4f", l.Name, l.USDPerM)
	}
	fmt.Fprintf(out, "usd_per_million_notifications=%.2f\n", total)
	fmt.Fprintf(out, "usd_per_million_notifications_breakdown=%s\n", strings.Join(parts, ","))
	for _, g := range costSplit(lines) {
		fmt.Fprintf(out, "usd_%s_per_million=%.2f\n", g.Group, g.USD)
	}
	sms := prices.usd("sms_us_message_usd")
	fmt.Fprintf(out, "sms_usd_per_message=%.5f\n", sms)
	fmt.Fprintf(out, "cost_share_of_sms_price=%.4f\n", total/1e6/sms)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// metricName turns a function name into a name=value key: provider-events -> provider_events.
func metricName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// storageSize is the bytes one notification keeps in a table (items and index copies) and
// for how many months.
type storageSize struct {
	Name   string
	Bytes  float64
	Months float64
}

type storageSizes []storageSize

// gbMonths is what the sizes keep, in GB-months.
func (ss storageSizes) gbMonths() float64 {
	gb := 0.0
	for _, s := range ss {
		gb += s.Bytes / 1e9 * s.Months
	}
	return gb
}

// retentionMonths are how long each table keeps a notification's items: the notifications
// record until its TTL (expiry plus the default 24 h status grace, about a day), audit entries
// for the template's hot window (AuditHotDays) plus TTL's delay (prices.json), receipts for
// providerevents.DefaultRetention, the abuse guard's counters a day at most (a destination's
// day and hour, a prefix's minute, each with an hour's slack), the conversion counters the
// window (24 h) and an hour.
func retentionMonths(p priceList) map[string]float64 {
	month := 730 * time.Hour
	hot := time.Duration(float64(config.DefaultAuditHotDays)+p.assume("dynamodb_ttl_delete_delay_days")) * 24 * time.Hour
	return map[string]float64{
		"notifications": float64(25*time.Hour) / float64(month),
		"audit":         float64(hot) / float64(month),
		"receipts":      float64(providerevents.DefaultRetention) / float64(month),
		"guard":         float64(25*time.Hour) / float64(month),
		"conversions":   float64(25*time.Hour) / float64(month),
	}
}
