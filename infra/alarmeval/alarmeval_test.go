package alarmeval_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/alarmeval"
)

// t0 is a period boundary of every period used here.
var t0 = time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC)

// fakeCW answers GetMetricData from datapoints stored per metric, dimensions and statistic,
// as CloudWatch would: only the exact dimension set, only [start, end).
type fakeCW struct {
	points  map[string]map[time.Time]float64
	queries []types.MetricDataQuery
	alarms  []types.MetricAlarm
	// composites are DescribeAlarms' CompositeAlarms.
	composites []types.CompositeAlarm
}

func key(ns, name string, dims map[string]string, stat string) string {
	var d []string
	for k, v := range dims {
		d = append(d, k+"="+v)
	}
	slices.Sort(d)
	return ns + "|" + name + "|" + strings.Join(d, ",") + "|" + stat
}

func (f *fakeCW) put(ns, name string, dims map[string]string, stat string, at time.Time, v float64) {
	if f.points == nil {
		f.points = map[string]map[time.Time]float64{}
	}
	k := key(ns, name, dims, stat)
	if f.points[k] == nil {
		f.points[k] = map[time.Time]float64{}
	}
	f.points[k][at] = v
}

func (f *fakeCW) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		f.queries = append(f.queries, q)
		if q.MetricStat == nil {
			return nil, fmt.Errorf("the fake, like MiniStack, has no metric math: %s", aws.ToString(q.Expression))
		}
		dims := map[string]string{}
		for _, d := range q.MetricStat.Metric.Dimensions {
			dims[aws.ToString(d.Name)] = aws.ToString(d.Value)
		}
		k := key(aws.ToString(q.MetricStat.Metric.Namespace), aws.ToString(q.MetricStat.Metric.MetricName), dims, aws.ToString(q.MetricStat.Stat))
		r := types.MetricDataResult{Id: q.Id, StatusCode: types.StatusCodeComplete}
		var ts []time.Time
		for at := range f.points[k] {
			if !at.Before(*in.StartTime) && at.Before(*in.EndTime) {
				ts = append(ts, at)
			}
		}
		slices.SortFunc(ts, time.Time.Compare)
		for _, at := range ts {
			r.Timestamps = append(r.Timestamps, at)
			r.Values = append(r.Values, f.points[k][at])
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	return out, nil
}

func (f *fakeCW) DescribeAlarms(_ context.Context, in *cloudwatch.DescribeAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	out := &cloudwatch.DescribeAlarmsOutput{MetricAlarms: f.alarms}
	if slices.Contains(in.AlarmTypes, types.AlarmTypeCompositeAlarm) {
		out.CompositeAlarms = f.composites
	}
	return out, nil
}

const ns = "resetnotify/s"

// latency is a 2-of-3 p99 alarm, as the template's provider latency alarms.
func latency(treat string) alarmeval.Alarm {
	return alarmeval.Alarm{Name: "lat", Namespace: ns, MetricName: "ProviderLatency", Dimensions: map[string]string{"Function": "dispatch", "Provider": "simulator"},
		Statistic: "p99", Period: 5 * time.Minute, EvaluationPeriods: 3, DatapointsToAlarm: 2,
		ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, Threshold: 1000, TreatMissingData: treat}
}

func evaluate(t *testing.T, a alarmeval.Alarm, cw *fakeCW, now time.Time) alarmeval.State {
	t.Helper()
	s, reason, err := a.Evaluate(context.Background(), cw, now)
	if err != nil {
		t.Fatal(err)
	}
	if reason == "" {
		t.Error("no reason")
	}
	return s
}

func TestMOfN(t *testing.T) {
	dims := map[string]string{"Function": "dispatch", "Provider": "simulator"}
	p := 5 * time.Minute
	tests := []struct {
		name   string
		values []float64 // the three periods before now, oldest first
		want   alarmeval.State
	}{
		{"none breach", []float64{10, 20, 30}, alarmeval.StateOK},
		{"one of three", []float64{5000, 20, 30}, alarmeval.StateOK},
		{"two of three, apart", []float64{5000, 20, 3000}, alarmeval.StateAlarm},
		{"two of three, latest", []float64{1, 2000, 3000}, alarmeval.StateAlarm},
		{"at the threshold is not over it", []float64{1000, 1000, 1000}, alarmeval.StateOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cw := &fakeCW{}
			// Older breaching datapoints outside the three most recent must not count.
			cw.put(ns, "ProviderLatency", dims, "p99", t0.Add(-5*p), 9999)
			cw.put(ns, "ProviderLatency", dims, "p99", t0.Add(-4*p), 9999)
			for i, v := range tc.values {
				cw.put(ns, "ProviderLatency", dims, "p99", t0.Add(time.Duration(i-3)*p), v)
			}
			if got := evaluate(t, latency(alarmeval.TreatNotBreaching), cw, t0.Add(time.Second)); got != tc.want {
				t.Errorf("state %s, want %s", got, tc.want)
			}
		})
	}
}

// TestStatisticAndDimensions checks the query: the alarm's extended statistic, its exact
// dimensions (a breaching series of another dimension set is not read), its period.
func TestStatisticAndDimensions(t *testing.T) {
	cw := &fakeCW{}
	p := 5 * time.Minute
	for i := range 3 {
		at := t0.Add(time.Duration(i-3) * p)
		cw.put(ns, "ProviderLatency", map[string]string{"Function": "dispatch", "Provider": "twilio"}, "p99", at, 9000)
		cw.put(ns, "ProviderLatency", map[string]string{"Function": "dispatch"}, "p99", at, 9000)
		cw.put(ns, "ProviderLatency", map[string]string{"Function": "dispatch", "Provider": "simulator"}, "Average", at, 9000)
		cw.put(ns, "ProviderLatency", map[string]string{"Function": "dispatch", "Provider": "simulator"}, "p99", at, 10)
	}
	if got := evaluate(t, latency(alarmeval.TreatMissing), cw, t0); got != alarmeval.StateOK {
		t.Errorf("state %s, want OK: only simulator's p99 counts", got)
	}
	q := cw.queries[0].MetricStat
	if aws.ToString(q.Stat) != "p99" || aws.ToInt32(q.Period) != 300 || len(q.Metric.Dimensions) != 2 {
		t.Errorf("query %+v", q)
	}
}

func TestMissingData(t *testing.T) {
	p := 5 * time.Minute
	dims := map[string]string{"Function": "dispatch", "Provider": "simulator"}
	t.Run("no datapoint at all", func(t *testing.T) {
		for treat, want := range map[string]alarmeval.State{
			alarmeval.TreatMissing: alarmeval.StateInsufficientData, "": alarmeval.StateInsufficientData,
			alarmeval.TreatBreaching: alarmeval.StateAlarm, alarmeval.TreatNotBreaching: alarmeval.StateOK,
		} {
			if got := evaluate(t, latency(treat), &fakeCW{}, t0); got != want {
				t.Errorf("treat %q: %s, want %s", treat, got, want)
			}
		}
		for _, cur := range []alarmeval.State{alarmeval.StateAlarm, alarmeval.StateOK} {
			a := latency(alarmeval.TreatIgnore)
			a.State = cur
			if got := evaluate(t, a, &fakeCW{}, t0); got != cur {
				t.Errorf("ignore in %s: %s, want the state kept", cur, got)
			}
		}
	})
	t.Run("fewer real datapoints than periods", func(t *testing.T) {
		// One breaching datapoint, two periods missing: 2 of 3 needed.
		cw := &fakeCW{}
		cw.put(ns, "ProviderLatency", dims, "p99", t0.Add(-p), 5000)
		for treat, want := range map[string]alarmeval.State{
			alarmeval.TreatBreaching: alarmeval.StateAlarm, alarmeval.TreatNotBreaching: alarmeval.StateOK,
			alarmeval.TreatMissing: alarmeval.StateOK, alarmeval.TreatIgnore: alarmeval.StateOK,
		} {
			if got := evaluate(t, latency(treat), cw, t0); got != want {
				t.Errorf("treat %q: %s, want %s", treat, got, want)
			}
		}
		// Two real breaching datapoints reach M whatever the treatment.
		cw.put(ns, "ProviderLatency", dims, "p99", t0.Add(-3*p), 5000)
		for _, treat := range []string{alarmeval.TreatNotBreaching, alarmeval.TreatMissing} {
			if got := evaluate(t, latency(treat), cw, t0); got != alarmeval.StateAlarm {
				t.Errorf("treat %q with two breaching: %s, want ALARM", treat, got)
			}
		}
	})
}

// prefixAlarm is the template's PrefixVelocityAlarm: 1 period of 60 s, notBreaching.
func prefixAlarm() alarmeval.Alarm {
	return alarmeval.Alarm{Name: "s-PrefixVelocityAlarm-X", Namespace: ns, MetricName: "Refusals",
		Dimensions: map[string]string{"Function": "intake", "Reason": "prefix_velocity"}, Statistic: "Sum", Period: time.Minute,
		EvaluationPeriods: 1, ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, Threshold: 0, TreatMissingData: alarmeval.TreatNotBreaching}
}

// TestEvaluationRangeAndCompletePeriods: a period is evaluated once it has ended, and, as
// CloudWatch does, the last real datapoint keeps being evaluated while it is inside the
// evaluation range (N+2 periods) even after the metric stops.
func TestEvaluationRangeAndCompletePeriods(t *testing.T) {
	cw := &fakeCW{}
	cw.put(ns, "Refusals", map[string]string{"Function": "intake", "Reason": "prefix_velocity"}, "Sum", t0, 4)
	a := prefixAlarm()
	for _, tc := range []struct {
		at   time.Duration
		want alarmeval.State
	}{
		{30 * time.Second, alarmeval.StateOK}, // its period has not ended
		{60 * time.Second, alarmeval.StateAlarm},
		{150 * time.Second, alarmeval.StateAlarm},
		{179 * time.Second, alarmeval.StateAlarm},
		{180 * time.Second, alarmeval.StateAlarm},
		{239 * time.Second, alarmeval.StateAlarm},
		{240 * time.Second, alarmeval.StateOK},
	} {
		if got := evaluate(t, a, cw, t0.Add(tc.at)); got != tc.want {
			t.Errorf("at +%s: %s, want %s", tc.at, got, tc.want)
		}
	}
}

// TestMetricMath evaluates an error-rate alarm: the expression is computed here (MiniStack's
// GetMetricData has no math), over the MetricStat queries it fetches.
func TestMetricMath(t *testing.T) {
	cw := &fakeCW{}
	p := time.Minute
	dims := map[string]string{"Function": "intake"}
	for i, v := range []struct{ errs, reqs float64 }{{1, 100}, {10, 100}, {30, 100}} {
		at := t0.Add(time.Duration(i-3) * p)
		cw.put(ns, "Errors", dims, "Sum", at, v.errs)
		cw.put(ns, "Requests", dims, "Sum", at, v.reqs)
	}
	stat := func(id, name string) types.MetricDataQuery {
		return types.MetricDataQuery{Id: aws.String(id), ReturnData: aws.Bool(false), MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String(ns), MetricName: aws.String(name), Dimensions: []types.Dimension{{Name: aws.String("Function"), Value: aws.String("intake")}}},
			Period: aws.Int32(60), Stat: aws.String("Sum")}}
	}
	a := alarmeval.Alarm{Name: "rate", EvaluationPeriods: 3, DatapointsToAlarm: 2, ComparisonOperator: types.ComparisonOperatorGreaterThanOrEqualToThreshold,
		Threshold: 10, TreatMissingData: alarmeval.TreatMissing, Metrics: []types.MetricDataQuery{
			stat("e", "Errors"), stat("r", "Requests"),
			{Id: aws.String("rate"), Expression: aws.String("100 * FILL(e, 0) / r"), ReturnData: aws.Bool(true)},
		}}
	if got := evaluate(t, a, cw, t0); got != alarmeval.StateAlarm {
		t.Errorf("rates 1, 10, 30 %% against >= 10 (2 of 3): %s, want ALARM", got)
	}
	a.Threshold = 11
	if got := evaluate(t, a, cw, t0); got != alarmeval.StateOK {
		t.Errorf("rates 1, 10, 30 %% against >= 11 (2 of 3): %s, want OK", got)
	}
	for _, q := range cw.queries {
		if q.Expression != nil {
			t.Errorf("an expression was sent to GetMetricData: %s", aws.ToString(q.Expression))
		}
	}
}

func TestEval(t *testing.T) {
	p := time.Minute
	start, end := t0, t0.Add(4*p)
	m1 := map[int64]float64{t0.Unix(): 1, t0.Add(p).Unix(): 2, t0.Add(3 * p).Unix(): 4}
	m2 := map[int64]float64{t0.Unix(): 10, t0.Add(2 * p).Unix(): 30, t0.Add(3 * p).Unix(): 40}
	lookup := func(id string) (alarmeval.Value, error) {
		switch id {
		case "m1":
			return alarmeval.Value{Series: m1}, nil
		case "m2":
			return alarmeval.Value{Series: m2}, nil
		}
		return alarmeval.Value{}, fmt.Errorf("no %s", id)
	}
	at := func(i int) int64 { return t0.Add(time.Duration(i) * p).Unix() }
	for expr, want := range map[string]map[int64]float64{
		"m1 + m2":             {at(0): 11, at(3): 44},
		"m2 / m1 * 2":         {at(0): 20, at(3): 20},
		"-m1 + 1":             {at(0): 0, at(1): -1, at(3): -3},
		"(m1 + 1) * 2":        {at(0): 4, at(1): 6, at(3): 10},
		"FILL(m1, 0)":         {at(0): 1, at(1): 2, at(2): 0, at(3): 4},
		"FILL(m1, REPEAT)":    {at(0): 1, at(1): 2, at(2): 2, at(3): 4},
		"SUM(m1, m2)":         {at(0): 11, at(1): 2, at(2): 30, at(3): 44},
		"MAX(m1, m2)":         {at(0): 10, at(1): 2, at(2): 30, at(3): 40},
		"ABS(m1 - m2)":        {at(0): 9, at(3): 36},
		"AVG(FILL(m1,0), m2)": {at(0): 5.5, at(1): 2, at(2): 15, at(3): 22},
	} {
		v, err := alarmeval.Eval(expr, lookup, start, end, p)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got := map[int64]float64(v.Series)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", expr, diff)
		}
	}
	for _, bad := range []string{"m1 +", "m3", "RATE(m1)", "(m1", "m1 m2", "FILL(m1)"} {
		if _, err := alarmeval.Eval(bad, lookup, start, end, p); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWatcherAndLoadDeployed(t *testing.T) {
	cw := &fakeCW{alarms: []types.MetricAlarm{
		{AlarmName: aws.String("s-PrefixVelocityAlarm-ABC"), Namespace: aws.String(ns), MetricName: aws.String("Refusals"),
			Dimensions: []types.Dimension{{Name: aws.String("Function"), Value: aws.String("intake")}, {Name: aws.String("Reason"), Value: aws.String("prefix_velocity")}},
			Statistic:  types.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(0),
			ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, TreatMissingData: aws.String("notBreaching"), StateValue: types.StateValueAlarm},
		{AlarmName: aws.String("other-stack-Alarm-X"), Namespace: aws.String(ns), MetricName: aws.String("Refusals"), Period: aws.Int32(60)},
	}}
	alarms, err := alarmeval.LoadDeployed(context.Background(), cw, "s-")
	if err != nil {
		t.Fatal(err)
	}
	want := prefixAlarm()
	want.Name = "s-PrefixVelocityAlarm-ABC"
	want.State = alarmeval.StateInsufficientData
	if diff := cmp.Diff([]alarmeval.Alarm{want}, alarms); diff != "" {
		t.Fatalf("alarms (-want +got):\n%s", diff)
	}
	if w := alarms[0].EvaluationWindow(); w != time.Minute {
		t.Errorf("evaluation window %s, want 1m", w)
	}
	if w := latency("").EvaluationWindow(); w != 15*time.Minute {
		t.Errorf("latency alarm's evaluation window %s, want 15m", w)
	}
	if id := alarmeval.LogicalID(alarms[0].Name, "s"); id != "PrefixVelocityAlarm" {
		t.Errorf("logical ID %q", id)
	}
	w := alarmeval.NewWatcher(cw, alarms)
	cw.put(ns, "Refusals", want.Dimensions, "Sum", t0, 3)
	for _, at := range []time.Duration{-time.Minute, 0, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute} {
		if err := w.Poll(context.Background(), t0.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, tr := range w.Transitions() {
		got = append(got, fmt.Sprintf("%s %s->%s at %s", alarmeval.LogicalID(tr.Alarm, "s"), tr.From, tr.To, tr.At.Sub(t0)))
	}
	wantTr := []string{"PrefixVelocityAlarm INSUFFICIENT_DATA->OK at -1m0s", "PrefixVelocityAlarm OK->ALARM at 1m0s", "PrefixVelocityAlarm ALARM->OK at 4m0s"}
	if diff := cmp.Diff(wantTr, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if s := w.States()[want.Name]; s != alarmeval.StateOK {
		t.Errorf("state %s", s)
	}
}

// TestWatchAfterADeploy: once a deploy changed the alarms, an alarm kept keeps its state and
// its history, a removed one is evaluated no more, a new one is; a composite reads the new set.
func TestWatchAfterADeploy(t *testing.T) {
	cw := &fakeCW{}
	kept, gone := prefixAlarm(), prefixAlarm()
	gone.Name, gone.MetricName = "s-RefusalSpikeAlarm-X", "Spikes"
	w := alarmeval.NewWatcher(cw, []alarmeval.Alarm{kept, gone})
	cw.put(ns, "Refusals", kept.Dimensions, "Sum", t0, 3)
	if err := w.Poll(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	added := prefixAlarm()
	added.Name, added.MetricName = "s-NewAlarm-X", "New"
	page := alarmeval.Alarm{Name: "s-AdmissionPage-X", Rule: "ALARM(\"s-NewAlarm-X\")"}
	w.Watch([]alarmeval.Alarm{kept, added, page})
	states := w.States()
	if len(states) != 3 || states[kept.Name] != alarmeval.StateAlarm || states[added.Name] != alarmeval.StateInsufficientData {
		t.Fatalf("states after Watch %v: want the kept alarm still in ALARM, the new one INSUFFICIENT_DATA, the removed one gone", states)
	}
	cw.put(ns, "Spikes", gone.Dimensions, "Sum", t0.Add(time.Minute), 9)
	cw.put(ns, "New", added.Dimensions, "Sum", t0.Add(time.Minute), 9)
	if err := w.Poll(context.Background(), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range w.Transitions() {
		got = append(got, fmt.Sprintf("%s %s->%s", alarmeval.LogicalID(tr.Alarm, "s"), tr.From, tr.To))
	}
	// The removed alarm's breach is not seen; the metric alarms are evaluated before the page.
	want := []string{"PrefixVelocityAlarm INSUFFICIENT_DATA->ALARM", "RefusalSpikeAlarm INSUFFICIENT_DATA->OK",
		"NewAlarm INSUFFICIENT_DATA->ALARM", "AdmissionPage INSUFFICIENT_DATA->ALARM"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}
