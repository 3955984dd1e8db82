package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/awscount"
)

func TestPricesFileIsComplete(t *testing.T) {
	p, err := loadPrices()
	if err != nil {
		t.Fatal(err)
	}
	if p.Region != "us-east-1" || p.Taken == "" || !strings.Contains(p.Source, "not re-fetched") && !strings.Contains(p.Source, "NOT re-fetched") {
		t.Errorf("prices.json must name its region, date and that it was not re-fetched: %+v", p)
	}
	for name, v := range p.Prices {
		if v.Source == "" || v.Unit == "" || v.USD < 0 {
			t.Errorf("price %s lacks a unit or source, or is negative: %+v", name, v)
		}
	}
}

// TestCostModel prices a made-up lifecycle whose every line is easy to work out by hand.
func TestCostModel(t *testing.T) {
	p, err := loadPrices()
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	lc := lifecycle{
		N:            n,
		AuditEntries: 4 * n,
		Roles:        map[string]string{"t": "notifications"},
		Admission:    capacityReport{{Op: "PutItem", Table: "t"}: {Calls: n, Write: 20}},
		Dispatch:     capacityReport{{Op: "GetItem", Table: "t"}: {Calls: n, Read: 10}},
		Invocations:  map[string]int{"intake": n},
		// 10 ms and a bit per invocation: billed as 11 ms.
		Busy:     map[string]time.Duration{"intake": n * (10*time.Millisecond + time.Microsecond)},
		LogBytes: map[string]int64{"intake": n * 1000},
		Requests: map[awscount.Op]int64{{Service: "SQS", Operation: "SendMessage"}: n},
	}
	lines, total := costModel(lc, lambdaShape{MemoryMB: 256, Architecture: "arm64"}, p, nil)
	got := map[string]float64{}
	for _, l := range lines {
		got[l.Name] = l.USDPerM
	}
	want := map[string]float64{
		"dynamodb_writes":           2 * 0.625,
		"dynamodb_reads":            1 * 0.125,
		"lambda_requests":           0.2,
		"lambda_duration":           0.011 * 0.25 * 0.0000133334 * 1e6,
		"sqs_requests":              0.4,
		"cloudwatch_logs_ingestion": (1000 + 700) / 1e9 * 0.5 * 1e6,
		"http_api_requests":         1,
		// 4 entries, each read twice (digest, archive) at 0.5 read units.
		"dynamodb_audit_period_reads": 4 * 2 * 0.5 * 0.125,
	}
	for name, w := range want {
		if math.Abs(got[name]-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
	var sum float64
	for _, l := range lines {
		sum += l.USDPerM
	}
	if math.Abs(sum-total) > 1e-9 {
		t.Errorf("total %v, lines sum to %v", total, sum)
	}
	var split float64
	for _, g := range costSplit(lines) {
		split += g.USD
	}
	if math.Abs(split-total) > 1e-9 {
		t.Errorf("the split sums to %v, the total is %v", split, total)
	}
}

// TestArchiveCost prices a notification whose entries take 1,000 bytes in the archive and
// 8 MiB of JSON (one part): 30 days of S3 Standard, the rest of the 400 days in Glacier
// Instant Retrieval, one put and one transition.
func TestArchiveCost(t *testing.T) {
	p, err := loadPrices()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	archiveLines(func(name string, qty float64, _ string, usd float64) { got[name] = qty * usd * 1e6 }, archiveFigures{Bytes: 1000, JSON: 8 << 20}, p)
	const monthDays = 730.0 / 24 // the model's month: 730 hours
	want := map[string]float64{
		"s3_archive_storage_standard":   1e-6 * 30 / monthDays * 0.023 * 1e6,
		"s3_archive_storage_glacier_ir": 1e-6 * (400 - 30) / monthDays * 0.004 * 1e6,
		"s3_archive_puts":               0.005 * 1e3,
		"s3_archive_transitions":        0.02 * 1e3,
	}
	for name, w := range want {
		if math.Abs(got[name]-w) > 1e-6 {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
}

// TestMakefileStripsBootstraps: the bootstraps make builds for Lambda are the ones infra/bench
// measures (stripped, -trimpath).
func TestMakefileStripsBootstraps(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "go build -tags lambda.norpc") {
			if !strings.Contains(line, "-trimpath") || !strings.Contains(line, `-ldflags="-s -w"`) {
				t.Errorf("go_build_lambda does not strip: %s", line)
			}
			return
		}
	}
	t.Fatal("no go_build_lambda line in the Makefile")
}
