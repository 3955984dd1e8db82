package emfbridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/emfbridge"
	"github.com/resetnotify/resetnotify/shared/obs"
)

var t0 = time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)

// datum is a MetricDatum flattened for comparison.
type datum struct {
	NS, Name, Unit string
	Dims           string
	Value          float64
	Values, Counts []float64
	Res            int32
	At             time.Time
}

func flatten(batches []emfbridge.Batch) []datum {
	var out []datum
	for _, b := range batches {
		for _, d := range b.Data {
			var dims []string
			for _, dm := range d.Dimensions {
				dims = append(dims, aws.ToString(dm.Name)+"="+aws.ToString(dm.Value))
			}
			out = append(out, datum{NS: b.Namespace, Name: aws.ToString(d.MetricName), Unit: string(d.Unit), Dims: strings.Join(dims, ","),
				Value: aws.ToFloat64(d.Value), Values: d.Values, Counts: d.Counts, Res: aws.ToInt32(d.StorageResolution), At: aws.ToTime(d.Timestamp)})
		}
	}
	return out
}

// TestParseCarriesWhatObsWrites parses lines written by shared/obs, the functions' own
// emitter: every dimension set (the rollups, and the empty set of NoDimensions), the units,
// the namespace and the timestamp.
func TestParseCarriesWhatObsWrites(t *testing.T) {
	var buf bytes.Buffer
	m := &obs.Metrics{W: &buf, Function: "intake", Namespace: "resetnotify/stack", Now: func() time.Time { return t0.Add(1500 * time.Millisecond) }}
	m.Refusal("prefix_velocity", "JM")
	m.Request("POST /v1/notifications", 202, 2500*time.Microsecond)
	m.EmitRollup(nil, [][]string{{obs.NoDimensions}}, obs.Metric{Name: "WorkerExpirations", Unit: obs.UnitCount, Value: 1})

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	var got []datum
	for _, l := range lines {
		b, err := emfbridge.Parse([]byte(l))
		if err != nil {
			t.Fatalf("parse %s: %v", l, err)
		}
		got = append(got, flatten(b)...)
	}
	at := t0.Add(1500 * time.Millisecond)
	want := []datum{
		{NS: "resetnotify/stack", Name: "Refusals", Unit: "Count", Dims: "Function=intake,CountryCode=JM,Reason=prefix_velocity", Value: 1, At: at},
		{NS: "resetnotify/stack", Name: "Refusals", Unit: "Count", Dims: "Function=intake,Reason=prefix_velocity", Value: 1, At: at},
		{NS: "resetnotify/stack", Name: "Refusals", Unit: "Count", Dims: "Function=intake", Value: 1, At: at},
		{NS: "resetnotify/stack", Name: "Requests", Unit: "Count", Dims: "Function=intake,Route=POST /v1/notifications,Status=202", Value: 1, At: at},
		{NS: "resetnotify/stack", Name: "Requests", Unit: "Count", Dims: "Function=intake,Route=POST /v1/notifications", Value: 1, At: at},
		{NS: "resetnotify/stack", Name: "Latency", Unit: "Milliseconds", Dims: "Function=intake,Route=POST /v1/notifications,Status=202", Value: 2.5, At: at},
		{NS: "resetnotify/stack", Name: "Latency", Unit: "Milliseconds", Dims: "Function=intake,Route=POST /v1/notifications", Value: 2.5, At: at},
		{NS: "resetnotify/stack", Name: "WorkerExpirations", Unit: "Count", Dims: "Function=intake", Value: 1, At: at},
		{NS: "resetnotify/stack", Name: "WorkerExpirations", Unit: "Count", Dims: "", Value: 1, At: at},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("datums (-want +got):\n%s", diff)
	}
}

// TestParseEveryField covers what obs does not write: several directives, StorageResolution,
// value arrays, units, and a directive without dimensions.
func TestParseEveryField(t *testing.T) {
	line := `{"_aws":{"Timestamp":1796403600123,"CloudWatchMetrics":[
		{"Namespace":"a","Dimensions":[["Fn","Op"],[]],"Metrics":[{"Name":"Lat","Unit":"Milliseconds","StorageResolution":1},{"Name":"N"}]},
		{"Namespace":"b","Metrics":[{"Name":"Bytes","Unit":"Bytes","StorageResolution":60}]}]},
		"Fn":"dispatch","Op":"send","Lat":[3,1,3,2.5],"N":7,"Bytes":[42],"other":"ignored"}`
	b, err := emfbridge.Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1796403600123).UTC()
	want := []datum{
		{NS: "a", Name: "Lat", Unit: "Milliseconds", Dims: "Fn=dispatch,Op=send", Values: []float64{3, 1, 2.5}, Counts: []float64{2, 1, 1}, Res: 1, At: at},
		{NS: "a", Name: "Lat", Unit: "Milliseconds", Dims: "", Values: []float64{3, 1, 2.5}, Counts: []float64{2, 1, 1}, Res: 1, At: at},
		{NS: "a", Name: "N", Unit: "None", Dims: "Fn=dispatch,Op=send", Value: 7, At: at},
		{NS: "a", Name: "N", Unit: "None", Dims: "", Value: 7, At: at},
		{NS: "b", Name: "Bytes", Unit: "Bytes", Dims: "", Value: 42, Res: 60, At: at},
	}
	if diff := cmp.Diff(want, flatten(b)); diff != "" {
		t.Errorf("datums (-want +got):\n%s", diff)
	}
}

func TestParseRejects(t *testing.T) {
	ok := `"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"a","Dimensions":[["F"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]`
	notEMF := []string{"", "START RequestId: 1 Version: $LATEST", `{"level":"INFO","msg":"hello"}`, `{"_aws":`, "[1,2]", `{not json`}
	for _, l := range notEMF {
		if _, err := emfbridge.Parse([]byte(l)); !errors.Is(err, emfbridge.ErrNotEMF) {
			t.Errorf("%q: %v, want ErrNotEMF", l, err)
		}
	}
	if _, err := emfbridge.Parse([]byte(`{"_aws":{` + ok + `},"F":"x","M":1}`)); err != nil {
		t.Fatalf("the valid line: %v", err)
	}
	invalid := map[string]string{
		"no timestamp":         `{"_aws":{"CloudWatchMetrics":[{"Namespace":"a","Dimensions":[["F"]],"Metrics":[{"Name":"M"}]}]},"F":"x","M":1}`,
		"no directive":         `{"_aws":{"Timestamp":1},"F":"x","M":1}`,
		"no namespace":         `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Dimensions":[["F"]],"Metrics":[{"Name":"M"}]}]},"F":"x","M":1}`,
		"dimension missing":    `{"_aws":{` + ok + `},"M":1}`,
		"dimension not string": `{"_aws":{` + ok + `},"F":3,"M":1}`,
		"value missing":        `{"_aws":{` + ok + `},"F":"x"}`,
		"value a string":       `{"_aws":{` + ok + `},"F":"x","M":"1"}`,
		"empty value array":    `{"_aws":{` + ok + `},"F":"x","M":[]}`,
		"unknown unit":         `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"a","Metrics":[{"Name":"M","Unit":"Parsecs"}]}]},"M":1}`,
		"bad resolution":       `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"a","Metrics":[{"Name":"M","StorageResolution":5}]}]},"M":1}`,
		"_aws not an object":   `{"_aws":[1],"M":1}`,
		"too many dimensions":  `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"a","Dimensions":[[` + strings.TrimSuffix(strings.Repeat(`"F",`, 31), ",") + `]],"Metrics":[{"Name":"M"}]}]},"F":"x","M":1}`,
	}
	for name, l := range invalid {
		b, err := emfbridge.Parse([]byte(l))
		if err == nil || errors.Is(err, emfbridge.ErrNotEMF) {
			t.Errorf("%s: %v (%d batches), want a specification error", name, err, len(b))
		}
	}
}

// fakeCW records PutMetricData calls and fails them while fail is set.
type fakeCW struct {
	mu    sync.Mutex
	calls []*cloudwatch.PutMetricDataInput
	fail  bool
}

func (f *fakeCW) PutMetricData(_ context.Context, in *cloudwatch.PutMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return nil, errors.New("unavailable")
	}
	f.calls = append(f.calls, in)
	return &cloudwatch.PutMetricDataOutput{}, nil
}

// TestBridgeBatchesAndCounts feeds a function's output (log lines, EMF lines split across
// writes, a bad EMF line) and checks the PutMetricData calls: by namespace, at most MaxBatch
// datums each, nothing lost or invented, and the counts.
func TestBridgeBatchesAndCounts(t *testing.T) {
	cw := &fakeCW{}
	b := emfbridge.New(cw)
	var out bytes.Buffer
	for i := range emfbridge.MaxBatch + 1 {
		fmt.Fprintf(&out, `{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"ns1","Dimensions":[["F"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"F":"f","M":%d}`+"\n", t0.UnixMilli(), i)
	}
	out.WriteString(`{"level":"INFO","msg":"sent"}` + "\n")
	out.WriteString(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"ns2","Metrics":[{"Name":"X"}]}]}}` + "\n") // no value: invalid
	out.WriteString(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"ns2","Metrics":[{"Name":"X"}]}]},"X":5}` + "\n")
	raw := out.Bytes()
	// Writes cut anywhere, as a pipe delivers them.
	for len(raw) > 0 {
		n := min(len(raw), 77)
		if _, err := b.Write(raw[:n]); err != nil {
			t.Fatal(err)
		}
		raw = raw[n:]
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	perNS := map[string][]float64{}
	for _, c := range cw.calls {
		if len(c.MetricData) > emfbridge.MaxBatch {
			t.Errorf("a call of %d datums", len(c.MetricData))
		}
		for _, d := range c.MetricData {
			perNS[aws.ToString(c.Namespace)] = append(perNS[aws.ToString(c.Namespace)], aws.ToFloat64(d.Value))
		}
	}
	if got := len(perNS["ns1"]); got != emfbridge.MaxBatch+1 {
		t.Errorf("ns1: %d datums, want %d", got, emfbridge.MaxBatch+1)
	}
	for i, v := range perNS["ns1"] {
		if v != float64(i) {
			t.Fatalf("ns1 datum %d = %v: order or values changed", i, v)
		}
	}
	if diff := cmp.Diff([]float64{5}, perNS["ns2"]); diff != "" {
		t.Errorf("ns2 (-want +got):\n%s", diff)
	}
	want := emfbridge.Stats{Lines: emfbridge.MaxBatch + 4, EMF: emfbridge.MaxBatch + 3, NotEMF: 1, Invalid: 1,
		Datums: emfbridge.MaxBatch + 2, Sent: emfbridge.MaxBatch + 2, Puts: 3}
	if diff := cmp.Diff(want, b.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}

	// A failing CloudWatch loses that batch, says so, and never stops the bridge.
	cw.fail = true
	var told error
	b.OnError = func(err error) { told = err }
	b.Line([]byte(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"ns2","Metrics":[{"Name":"X"}]}]},"X":6}`))
	if err := b.Flush(context.Background()); err == nil || told == nil {
		t.Errorf("flush error %v, told %v: want both", err, told)
	}
	if s := b.Stats(); s.PutErrors != 1 || s.Dropped != 1 {
		t.Errorf("stats %+v, want 1 put error and 1 dropped", s)
	}
	cw.fail = false
	b.Line([]byte(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"ns2","Metrics":[{"Name":"X"}]}]},"X":7}`))
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := cw.calls[len(cw.calls)-1]
	if aws.ToFloat64(last.MetricData[0].Value) != 7 {
		t.Errorf("after the outage the bridge sent %v, want 7", aws.ToFloat64(last.MetricData[0].Value))
	}
}
