package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// TestStdinToMiniStack runs the command on lines the functions' emitter writes, mixed with
// log lines and a broken EMF line, against MiniStack's CloudWatch (the protocol the SDK
// speaks, as in the emulator stack), and reads the metrics back with GetMetricData.
func TestStdinToMiniStack(t *testing.T) {
	tools, err := emulator.FindToolsDir()
	if err == nil {
		_, err = os.Stat(filepath.Join(tools, "ministack", "bin", "ministack"))
	}
	if err != nil {
		if os.Getenv(emulator.EnvEmulators) == emulator.EmulatorsRequired {
			t.Fatalf("MiniStack is not installed (make tools): %v", err)
		}
		t.Skip("MiniStack not installed in .tools: make test installs it and runs this test")
	}
	ctx := context.Background()
	cw, err := emulator.StartCloudWatch(ctx, emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cw.Stop() })
	t.Setenv("AWS_ENDPOINT_URL", cw.Endpoint)
	t.Setenv("AWS_REGION", emulator.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")

	at := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	var in bytes.Buffer
	m := &obs.Metrics{W: &in, Function: "dispatch", Namespace: "resetnotify/bridge-test", Now: func() time.Time { return at.Add(time.Second) }}
	in.WriteString("START RequestId: 1 Version: $LATEST\n")
	for _, ms := range []float64{10, 20, 400} {
		m.Emit(map[string]string{"Provider": "simulator"}, obs.Metric{Name: "ProviderLatency", Unit: obs.UnitMilliseconds, Value: ms})
	}
	in.WriteString(`{"level":"INFO","msg":"sent"}` + "\n")
	in.WriteString(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"resetnotify/bridge-test","Metrics":[{"Name":"Broken"}]}]}}` + "\n")

	var stderr bytes.Buffer
	if err := run(ctx, "", time.Second, 50*time.Millisecond, true, &in, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "lines=6 emf=4 not_emf=2 invalid=1 datums=3 sent=3 dropped=0") {
		t.Errorf("counts: %s", stderr.String())
	}
	client := cloudwatch.NewFromConfig(aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()},
		func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(cw.Endpoint) })
	q := func(id, stat string) types.MetricDataQuery {
		return types.MetricDataQuery{Id: aws.String(id), MetricStat: &types.MetricStat{Metric: &types.Metric{
			Namespace: aws.String("resetnotify/bridge-test"), MetricName: aws.String("ProviderLatency"),
			Dimensions: []types.Dimension{{Name: aws.String("Function"), Value: aws.String("dispatch")}, {Name: aws.String("Provider"), Value: aws.String("simulator")}}},
			Period: aws.Int32(60), Stat: aws.String(stat)}}
	}
	out, err := client.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{StartTime: aws.Time(at.Add(-time.Hour)), EndTime: aws.Time(at.Add(time.Hour)),
		MetricDataQueries: []types.MetricDataQuery{q("n", "SampleCount"), q("max", "Maximum"), q("p50", "p50")}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range out.MetricDataResults {
		if len(r.Values) != 1 || !r.Timestamps[0].Equal(at) {
			t.Fatalf("%s: %v at %v, want one datapoint in the minute of %s", aws.ToString(r.Id), r.Values, r.Timestamps, at)
		}
		got[aws.ToString(r.Id)] = r.Values[0]
	}
	if got["n"] != 3 || got["max"] != 400 || got["p50"] != 20 {
		t.Errorf("SampleCount, Maximum, p50 = %v, want 3, 400, 20", got)
	}
	if err := cw.Stop(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Logf("stop: %v", err)
	}
}
