package gameday

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// templateDashboard is template.yaml's DashboardBody with its !Sub resolved as a deploy of
// stack "stk" without overrides would: parameters to their defaults, resources to their names.
func templateDashboard(t *testing.T) string {
	t.Helper()
	tmpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sub, ok := tmpl.Resources["Dashboard"].Properties["DashboardBody"].(map[string]any)["Fn::Sub"].(string)
	if !ok {
		t.Fatal("template.yaml: Dashboard's DashboardBody is not a !Sub string")
	}
	var bad []string
	body := regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(sub, func(m string) string {
		name := m[2 : len(m)-1]
		switch name {
		case "AWS::StackName":
			return "stk"
		case "AWS::Region":
			return "us-east-1"
		}
		if _, isParam := tmpl.Parameters[name]; isParam {
			v, err := tmpl.Param(name)
			if err != nil {
				bad = append(bad, err.Error())
			}
			return v
		}
		res, _, _ := strings.Cut(name, ".")
		if _, ok := tmpl.Resources[res]; !ok {
			bad = append(bad, "unknown "+name)
		}
		return "stk-" + res
	})
	if len(bad) > 0 {
		t.Fatal(bad)
	}
	return body
}

// TestTemplateDashboardParses: every widget of the deployed dashboard is parsed, every line of
// every metric widget is one the renderer reads (a metric or a SEARCH it understands), and
// every custom metric is in the stack's namespace.
func TestTemplateDashboardParses(t *testing.T) {
	body := templateDashboard(t)
	var raw struct {
		Widgets []struct {
			Type       string
			Properties struct{ Metrics []json.RawMessage }
		}
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	ws, err := ParseDashboard(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != len(raw.Widgets) || len(ws) < 20 {
		t.Fatalf("parsed %d widgets of %d", len(ws), len(raw.Widgets))
	}
	lines, metrics := 0, 0
	for _, w := range raw.Widgets {
		lines += len(w.Properties.Metrics)
	}
	for _, w := range ws {
		if w.Type == "text" {
			continue
		}
		if w.Type != "metric" || len(w.Lines) == 0 || w.Region != "us-east-1" {
			t.Errorf("widget %q: type %s, %d lines, region %q", w.Title, w.Type, len(w.Lines), w.Region)
		}
		metrics += len(w.Lines)
		for _, l := range w.Lines {
			switch {
			case l.Unsupported != "":
				t.Errorf("widget %q: line %s cannot be drawn: %s", w.Title, l.Label, l.Unsupported)
			case l.Search != nil && (l.Search.Namespace != "resetnotify/stk" || len(l.Search.Schema) == 0 || l.Search.Terms["MetricName"] == ""):
				t.Errorf("widget %q: SEARCH %+v", w.Title, *l.Search)
			case l.Search == nil && (l.Metric == "" || !strings.HasPrefix(l.Namespace, "AWS/") && l.Namespace != "resetnotify/stk"):
				t.Errorf("widget %q: metric %s in namespace %s", w.Title, l.Metric, l.Namespace)
			}
		}
	}
	if metrics != lines {
		t.Errorf("parsed %d lines of %d", metrics, lines)
	}
	// Spot checks of what the renderer reads: a line's own stat, the widget's period.
	for _, w := range ws {
		if w.Title == "dispatch_unknown backlog" {
			if l := w.Lines[4]; l.Stat != "Sum" || l.Period != 300 || l.Dimensions[1] != [2]string{"ToState", "dispatch_unknown"} {
				t.Errorf("dispatch_unknown backlog line 5: %+v", l)
			}
		}
		if w.Title == "Admissions (POST) by HTTP status" {
			s := w.Lines[0].Search
			if s.Terms["Route"] != "POST /v1/notifications" || strings.Join(s.Schema, ",") != "Function,Route,Status" || s.Stat != "Sum" || s.Period != 300 {
				t.Errorf("admissions SEARCH %+v", *s)
			}
		}
	}
}

// TestDashboardDotRepeats: "." repeats the previous metric's value in the same position, the
// widget's stat and period are each line's unless it has its own, and a "." with nothing
// above is an error.
func TestDashboardDotRepeats(t *testing.T) {
	ws, err := ParseDashboard(`{"widgets": [{"type": "metric", "x": 0, "y": 0, "properties": {"title": "q", "stat": "Maximum", "period": 60, "metrics": [
		["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "dispatch"],
		[".", "ApproximateAgeOfOldestMessage", ".", ".", {"stat": "Sum", "label": "age"}],
		[".", ".", ".", "reconcile", {"period": 300}]]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	got := ws[0].Lines
	want := []WidgetLine{
		{Label: "ApproximateNumberOfMessagesVisible dispatch", Stat: "Maximum", Period: 60, Namespace: "AWS/SQS", Metric: "ApproximateNumberOfMessagesVisible", Dimensions: [][2]string{{"QueueName", "dispatch"}}},
		{Label: "age", Stat: "Sum", Period: 60, Namespace: "AWS/SQS", Metric: "ApproximateAgeOfOldestMessage", Dimensions: [][2]string{{"QueueName", "dispatch"}}},
		{Label: "ApproximateAgeOfOldestMessage reconcile", Stat: "Maximum", Period: 300, Namespace: "AWS/SQS", Metric: "ApproximateAgeOfOldestMessage", Dimensions: [][2]string{{"QueueName", "reconcile"}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines\n got %+v\nwant %+v", got, want)
	}
	if _, err := ParseDashboard(`{"widgets": [{"type": "metric", "properties": {"metrics": [[".", "Errors"]]}}]}`); err == nil {
		t.Error(`a "." with nothing above it parsed`)
	}
	ws, err = ParseDashboard(`{"widgets": [{"type": "metric", "properties": {"title": "m", "metrics": [[{"expression": "m1 * 2", "id": "e"}]]}}]}`)
	if err != nil || ws[0].Lines[0].Unsupported == "" {
		t.Errorf("a math expression other than SEARCH: %v, %+v", err, ws)
	}
}

// fakeCW is CloudWatch with one dashboard and the metrics that have points.
type fakeCW struct {
	body    string
	metrics []cwtypes.Metric
	points  map[string][]time.Time // metricKey -> timestamps (value 1 each)
}

func metricKey(m cwtypes.Metric) string {
	var ds []string
	for _, d := range m.Dimensions {
		ds = append(ds, aws.ToString(d.Name)+"="+aws.ToString(d.Value))
	}
	sort.Strings(ds)
	return aws.ToString(m.Namespace) + "|" + aws.ToString(m.MetricName) + "|" + strings.Join(ds, ",")
}

func (f *fakeCW) GetDashboard(_ context.Context, in *cloudwatch.GetDashboardInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetDashboardOutput, error) {
	if aws.ToString(in.DashboardName) != "stk-resetnotify" {
		return nil, fmt.Errorf("no dashboard %s", aws.ToString(in.DashboardName))
	}
	return &cloudwatch.GetDashboardOutput{DashboardBody: aws.String(f.body)}, nil
}

func (f *fakeCW) ListMetrics(_ context.Context, in *cloudwatch.ListMetricsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.ListMetricsOutput, error) {
	var out []cwtypes.Metric
	for _, m := range f.metrics {
		if aws.ToString(m.Namespace) == aws.ToString(in.Namespace) && (in.MetricName == nil || aws.ToString(m.MetricName) == *in.MetricName) {
			out = append(out, m)
		}
	}
	return &cloudwatch.ListMetricsOutput{Metrics: out}, nil
}

func (f *fakeCW) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		r := cwtypes.MetricDataResult{Id: q.Id, StatusCode: cwtypes.StatusCodeComplete}
		for _, ts := range f.points[metricKey(*q.MetricStat.Metric)] {
			if !ts.Before(*in.StartTime) && ts.Before(*in.EndTime) {
				r.Timestamps, r.Values = append(r.Timestamps, ts), append(r.Values, 1)
			}
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	return out, nil
}

func cwMetric(ns, name string, dims ...string) cwtypes.Metric {
	m := cwtypes.Metric{Namespace: aws.String(ns), MetricName: aws.String(name)}
	for i := 0; i+1 < len(dims); i += 2 {
		m.Dimensions = append(m.Dimensions, cwtypes.Dimension{Name: aws.String(dims[i]), Value: aws.String(dims[i+1])})
	}
	return m
}

const fakeBody = `{"widgets": [
	{"type": "text", "x": 0, "y": 0, "properties": {"markdown": "hello"}},
	{"type": "metric", "x": 0, "y": 2, "properties": {"title": "Admissions", "period": 60, "metrics": [
		[{"id": "a", "expression": "SEARCH('{ns,Function,Status} MetricName=\"Requests\" Function=\"intake\"', 'Sum', 60)"}]]}},
	{"type": "metric", "x": 8, "y": 2, "properties": {"title": "Expirations", "stat": "Sum", "period": 60, "metrics": [
		["ns", "Transitions", "Function", "dispatch", "ToState", "expired", {"label": "dispatch"}],
		[".", ".", ".", "sweeper", ".", ".", {"label": "sweeper"}]]}},
	{"type": "alarm", "x": 16, "y": 2, "properties": {"title": "Pages", "alarms": ["arn:x"]}},
	{"type": "metric", "x": 0, "y": 8, "properties": {"title": "Failovers", "metrics": [
		[{"id": "f", "expression": "SEARCH('{ns,Function,Provider} MetricName=\"Failovers\"', 'Sum', 300)"}],
		["ns", "ProviderCoolDowns", "Function", "dispatch", {"stat": "Sum"}]]}}]}`

// TestDashboardEmptyWidgetFailsBaseline: the deployed dashboard is drawn to a PNG; a widget none
// of whose lines had a datapoint fails the baseline naming the widget and its lines, and not
// another scenario; a line without a datapoint beside others with one is listed, not failed; a
// SEARCH reads only the metrics of exactly its schema; text and alarm widgets are listed.
func TestDashboardEmptyWidgetFailsBaseline(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	var every []time.Time
	for m := 0; m < 10; m++ {
		every = append(every, t0.Add(time.Duration(m)*time.Minute))
	}
	admitted := cwMetric("ns", "Requests", "Function", "intake", "Status", "202")
	rollup := cwMetric("ns", "Requests", "Function", "intake") // not of the SEARCH's schema
	dispatchExp := cwMetric("ns", "Transitions", "Function", "dispatch", "ToState", "expired")
	cw := &fakeCW{body: fakeBody, metrics: []cwtypes.Metric{admitted, rollup, dispatchExp},
		points: map[string][]time.Time{metricKey(admitted): every, metricKey(rollup): every, metricKey(dispatchExp): every[3:4]}}

	for _, name := range []string{BaselineScenario, "provider-down"} {
		res := &Result{Name: name, Start: t0, End: t0.Add(9 * time.Minute), Passed: true}
		dir := t.TempDir()
		if err := drawDashboard(context.Background(), cw, "stk-resetnotify", res, dir); err != nil {
			t.Fatal(err)
		}
		byTitle := map[string]WidgetResult{}
		for _, w := range res.Widgets {
			byTitle[w.Title] = w
		}
		if w := byTitle["Admissions"]; !w.Drawn || len(w.Empty) != 0 || w.Series != 1 {
			t.Errorf("%s: Admissions %+v, want one series (the SEARCH's schema, not the rollup)", name, w)
		}
		if w := byTitle["Expirations"]; !w.Drawn || strings.Join(w.Empty, ",") != "sweeper" {
			t.Errorf("%s: Expirations %+v, want its sweeper line empty", name, w)
		}
		if w := byTitle["Failovers"]; !w.EmptyTile() || w.Lines != 2 || w.Series != 1 {
			t.Errorf("%s: Failovers %+v, want an empty tile", name, w)
		}
		if w := byTitle["Pages"]; w.Drawn || w.NotDrawn == "" || len(res.Widgets) != 5 {
			t.Errorf("%s: widgets %+v, want the alarm widget listed as not drawn", name, res.Widgets)
		}
		failed := strings.Join(res.Errors, "\n")
		if name == BaselineScenario && (res.Passed || len(res.Errors) != 1 || !strings.Contains(failed, `widget "Failovers"`) || !strings.Contains(failed, "ProviderCoolDowns dispatch")) {
			t.Errorf("baseline: passed %v, errors %q; want it failed naming the Failovers tile and its lines only", res.Passed, failed)
		}
		if name != BaselineScenario && (!res.Passed || failed != "") {
			t.Errorf("%s: an empty widget failed a scenario other than the baseline: %q", name, failed)
		}
		if md := (&Report{Results: []Result{*res}}).Markdown(); !strings.Contains(md, "](dashboard-"+name+".png)") || !strings.Contains(md, `"Expirations": no datapoint of sweeper (its other lines had)`) || !strings.Contains(md, `"Failovers": **an empty tile**`) || !strings.Contains(md, `"Pages" not drawn`) {
			t.Errorf("%s: the report does not show the dashboard:\n%s", name, md)
		}
		f, err := os.Open(filepath.Join(dir, res.Dashboard))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 1000 {
			t.Errorf("%s: dashboard PNG %v, %v", name, err, img)
		}
		if out := os.Getenv("GAMEDAY_DASHBOARD_OUT"); out != "" && name == BaselineScenario {
			_ = os.WriteFile(out, mustRead(t, filepath.Join(dir, res.Dashboard)), 0o644)
		}
	}

	// With a datapoint in the empty tile, the baseline passes; no dashboard fails it.
	cw.points[metricKey(cwMetric("ns", "ProviderCoolDowns", "Function", "dispatch"))] = every[:1]
	res := &Result{Name: BaselineScenario, Start: t0, End: t0.Add(9 * time.Minute), Passed: true}
	if err := drawDashboard(context.Background(), cw, "stk-resetnotify", res, t.TempDir()); err != nil || !res.Passed {
		t.Errorf("every line with data: %v, errors %q", err, res.Errors)
	}
	if err := drawDashboard(context.Background(), cw, "", res, t.TempDir()); err == nil {
		t.Error("no dashboard on the stack, and no error")
	}
}
