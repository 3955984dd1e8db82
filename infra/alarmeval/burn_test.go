package alarmeval_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/resetnotify/resetnotify/infra/alarmeval"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// templateAlarms returns the template's burn-rate alarms and pages as a stack "s" deployed at
// the parameters' defaults would hold them (physical names "s-<LogicalId>").
func templateAlarms(t *testing.T, ids ...string) map[string]alarmeval.Alarm {
	t.Helper()
	tmpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sub := regexp.MustCompile(`\$\{([^}]+)\}`)
	var resolve func(v any) any
	resolve = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["Fn::Sub"].(string); ok {
				return sub.ReplaceAllStringFunc(s, func(m string) string {
					name := m[2 : len(m)-1]
					if name == "AWS::StackName" {
						return "s"
					}
					if p, ok := tmpl.Parameters[name]; ok {
						return fmt.Sprint(p["Default"])
					}
					return "s-" + name
				})
			}
			out := map[string]any{}
			for k, x := range v {
				out[k] = resolve(x)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = resolve(x)
			}
			return out
		}
		return v
	}
	num := func(v any) float64 {
		f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
		if err != nil && v != nil {
			t.Fatalf("not a number: %v", v)
		}
		return f
	}
	str := func(v any) string { s, _ := v.(string); return s }
	out := map[string]alarmeval.Alarm{}
	for _, id := range ids {
		r, ok := tmpl.Resources[id]
		if !ok {
			t.Fatalf("template has no %s", id)
		}
		p, _ := resolve(r.Properties).(map[string]any)
		a := alarmeval.Alarm{Name: "s-" + id, Rule: str(p["AlarmRule"]), EvaluationPeriods: int(num(p["EvaluationPeriods"])),
			DatapointsToAlarm: int(num(p["DatapointsToAlarm"])), Threshold: num(p["Threshold"]),
			ComparisonOperator: types.ComparisonOperator(str(p["ComparisonOperator"])), TreatMissingData: str(p["TreatMissingData"])}
		qs, _ := p["Metrics"].([]any)
		for _, q := range qs {
			q, _ := q.(map[string]any)
			mq := types.MetricDataQuery{Id: aws.String(str(q["Id"])), ReturnData: aws.Bool(q["ReturnData"] == true)}
			if e := str(q["Expression"]); e != "" {
				mq.Expression = aws.String(e)
			}
			if ms, ok := q["MetricStat"].(map[string]any); ok {
				m, _ := ms["Metric"].(map[string]any)
				var dims []types.Dimension
				ds, _ := m["Dimensions"].([]any)
				for _, d := range ds {
					d, _ := d.(map[string]any)
					dims = append(dims, types.Dimension{Name: aws.String(str(d["Name"])), Value: aws.String(fmt.Sprint(d["Value"]))})
				}
				mq.MetricStat = &types.MetricStat{Period: aws.Int32(int32(num(ms["Period"]))), Stat: aws.String(str(ms["Stat"])),
					Metric: &types.Metric{Namespace: aws.String(str(m["Namespace"])), MetricName: aws.String(str(m["MetricName"])), Dimensions: dims}}
			}
			a.Metrics = append(a.Metrics, mq)
		}
		out[id] = a
	}
	return out
}

const route = "POST /v1/notifications"

// admissions puts, for each 5-minute window ending at t0 (oldest first), n requests of which
// bad answered 503 (and one 500 when bad > 1).
func admissions(cw *fakeCW, n float64, bad ...float64) {
	for i, b := range bad {
		at := t0.Add(time.Duration(i-len(bad)) * 5 * time.Minute)
		cw.put("resetnotify/s", "Requests", map[string]string{"Function": "intake", "Route": route}, "Sum", at, n)
		if b > 1 {
			cw.put("resetnotify/s", "Requests", map[string]string{"Function": "intake", "Route": route, "Status": "500"}, "Sum", at, 1)
			b--
		}
		if b > 0 {
			cw.put("resetnotify/s", "Requests", map[string]string{"Function": "intake", "Route": route, "Status": "503"}, "Sum", at, b)
		}
	}
}

// deliveries puts, for each 5-minute window ending at t0, n admissions of which expired
// expired unsent in a worker.
func deliveries(cw *fakeCW, n float64, expired ...float64) {
	for i, e := range expired {
		at := t0.Add(time.Duration(i-len(expired)) * 5 * time.Minute)
		cw.put("resetnotify/s", "Transitions", map[string]string{"Function": "intake", "ToState": "accepted"}, "Sum", at, n)
		if e > 0 {
			cw.put("resetnotify/s", "WorkerExpirations", map[string]string{}, "Sum", at, e)
		}
	}
}

// TestBurnRateAlarms: each objective's window alarms, as the template declares them at its
// defaults (budget 0.1 %), fire on a burn and stay OK on errors at the budget's rate.
func TestBurnRateAlarms(t *testing.T) {
	alarms := templateAlarms(t, "AdmissionFastBurnAlarm", "AdmissionSlowBurnAlarm", "DeliveryFastBurnAlarm", "DeliverySlowBurnAlarm")
	for _, c := range []struct {
		name, alarm string
		put         func(*fakeCW)
		want        alarmeval.State
	}{
		{"no traffic", "AdmissionFastBurnAlarm", func(*fakeCW) {}, alarmeval.StateOK},
		{"budget rate: 1 of 1000", "AdmissionFastBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 1) }, alarmeval.StateOK},
		{"burn 14: 14 of 1000", "AdmissionFastBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 14) }, alarmeval.StateOK},
		{"burn 15: 500 and 503s", "AdmissionFastBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 15) }, alarmeval.StateAlarm},
		{"a minute of 503s at 2/s", "AdmissionFastBurnAlarm", func(cw *fakeCW) { admissions(cw, 600, 120) }, alarmeval.StateAlarm},
		{"burn 7 for 30 min, fast", "AdmissionFastBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 7, 7, 7, 7, 7, 7) }, alarmeval.StateOK},
		{"burn 7 for 30 min, slow", "AdmissionSlowBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 7, 7, 7, 7, 7, 7) }, alarmeval.StateAlarm},
		{"burn 7 for 25 min", "AdmissionSlowBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 0, 7, 7, 7, 7, 7) }, alarmeval.StateOK},
		{"budget rate for 30 min", "AdmissionSlowBurnAlarm", func(cw *fakeCW) { admissions(cw, 1000, 1, 1, 1, 1, 1, 1) }, alarmeval.StateOK},
		{"budget rate", "DeliveryFastBurnAlarm", func(cw *fakeCW) { deliveries(cw, 1000, 1) }, alarmeval.StateOK},
		{"burn 15", "DeliveryFastBurnAlarm", func(cw *fakeCW) { deliveries(cw, 1000, 15) }, alarmeval.StateAlarm},
		{"burn 7 for 30 min, fast", "DeliveryFastBurnAlarm", func(cw *fakeCW) { deliveries(cw, 1000, 7, 7, 7, 7, 7, 7) }, alarmeval.StateOK},
		{"burn 7 for 30 min, slow", "DeliverySlowBurnAlarm", func(cw *fakeCW) { deliveries(cw, 1000, 7, 7, 7, 7, 7, 7) }, alarmeval.StateAlarm},
		{"budget rate for 30 min", "DeliverySlowBurnAlarm", func(cw *fakeCW) { deliveries(cw, 1000, 1, 1, 1, 1, 1, 1) }, alarmeval.StateOK},
	} {
		cw := &fakeCW{}
		c.put(cw)
		if got := evaluate(t, alarms[c.alarm], cw, t0); got != c.want {
			t.Errorf("%s, %s: %s, want %s", c.alarm, c.name, got, c.want)
		}
	}
}

// TestPagesFireAndClear: a minute of 503s at 2 a second raises AdmissionPage through its fast
// window within a period of the fault, and it clears the period after; DeliveryPage, with no
// expiry, stays OK.
func TestPagesFireAndClear(t *testing.T) {
	ids := []string{"AdmissionFastBurnAlarm", "AdmissionSlowBurnAlarm", "AdmissionPage", "DeliveryFastBurnAlarm", "DeliverySlowBurnAlarm", "DeliveryPage"}
	m := templateAlarms(t, ids...)
	var alarms []alarmeval.Alarm
	for _, id := range ids {
		alarms = append(alarms, m[id])
	}
	cw := &fakeCW{}
	// Windows from t0-30m to t0+15m: the fault is in the window starting at t0.
	for i := -6; i < 3; i++ {
		at := t0.Add(time.Duration(i) * 5 * time.Minute)
		bad := 0.0
		if i == 0 {
			bad = 120
		}
		cw.put("resetnotify/s", "Requests", map[string]string{"Function": "intake", "Route": route}, "Sum", at, 600)
		cw.put("resetnotify/s", "Requests", map[string]string{"Function": "intake", "Route": route, "Status": "503"}, "Sum", at, bad)
		cw.put("resetnotify/s", "Transitions", map[string]string{"Function": "intake", "ToState": "accepted"}, "Sum", at, 600-bad)
	}
	w := alarmeval.NewWatcher(cw, alarms)
	for at := t0; at.Before(t0.Add(15 * time.Minute)); at = at.Add(time.Minute) {
		if err := w.Poll(context.Background(), at); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, tr := range w.Transitions() {
		if tr.From != alarmeval.StateInsufficientData {
			got = append(got, fmt.Sprintf("%s %s at %s", tr.Alarm, tr.To, tr.At.Sub(t0)))
		}
	}
	want := fmt.Sprint([]string{"s-AdmissionFastBurnAlarm ALARM at 5m0s", "s-AdmissionPage ALARM at 5m0s",
		"s-AdmissionFastBurnAlarm OK at 10m0s", "s-AdmissionPage OK at 10m0s"})
	if fmt.Sprint(got) != want {
		t.Errorf("transitions %v, want %v", got, want)
	}
	if s := w.States()["s-DeliveryPage"]; s != alarmeval.StateOK {
		t.Errorf("DeliveryPage %s, want OK", s)
	}
}

func TestEvaluateRule(t *testing.T) {
	states := map[string]alarmeval.State{"a": alarmeval.StateAlarm, "b": alarmeval.StateOK, "c": alarmeval.StateInsufficientData}
	for rule, want := range map[string]alarmeval.State{
		`ALARM("a") OR ALARM("b")`:                                   alarmeval.StateAlarm,
		`ALARM(a) AND ALARM(b)`:                                      alarmeval.StateOK,
		`ALARM(b) OR ALARM(a) AND OK(b)`:                             alarmeval.StateAlarm,
		`(ALARM(b) OR ALARM(a)) AND NOT OK(b)`:                       alarmeval.StateOK,
		`INSUFFICIENT_DATA(c) AND TRUE`:                              alarmeval.StateAlarm,
		`ALARM("arn:aws:cloudwatch:us-east-1:000000000000:alarm:a")`: alarmeval.StateAlarm,
		`NOT NOT FALSE`:                                              alarmeval.StateOK,
	} {
		got, err := alarmeval.EvaluateRule(rule, states)
		if err != nil || got != want {
			t.Errorf("%s: %s, %v; want %s", rule, got, err, want)
		}
	}
	for _, bad := range []string{`ALARM(z)`, `ALARM(a) OR`, `ALARM a`, `(ALARM(a)`, `ALARM(a) ALARM(b)`} {
		if _, err := alarmeval.EvaluateRule(bad, states); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestLoadDeployedComposite: LoadDeployed asks for composite alarms too, and a Watcher
// evaluates them rather than failing on their missing metric.
func TestLoadDeployedComposite(t *testing.T) {
	cw := &fakeCW{composites: []types.CompositeAlarm{
		{AlarmName: aws.String("s-AdmissionPage-X"), AlarmRule: aws.String(`ALARM("s-Fast-Y")`)},
		{AlarmName: aws.String("other-Page-X"), AlarmRule: aws.String(`TRUE`)},
	}, alarms: []types.MetricAlarm{{AlarmName: aws.String("s-Fast-Y"), Namespace: aws.String(ns), MetricName: aws.String("Requests"),
		Statistic: types.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(0),
		ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, TreatMissingData: aws.String("notBreaching")}}}
	alarms, err := alarmeval.LoadDeployed(context.Background(), cw, "s-")
	if err != nil {
		t.Fatal(err)
	}
	if len(alarms) != 2 || alarms[0].Rule != `ALARM("s-Fast-Y")` || alarms[1].Rule != "" {
		t.Fatalf("alarms %+v", alarms)
	}
	w := alarmeval.NewWatcher(cw, alarms)
	if err := w.Poll(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if s := w.States()["s-AdmissionPage-X"]; s != alarmeval.StateOK {
		t.Errorf("page %s, want OK", s)
	}
	cw.put(ns, "Requests", nil, "Sum", t0, 1)
	if err := w.Poll(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if s := w.States()["s-AdmissionPage-X"]; s != alarmeval.StateAlarm {
		t.Errorf("page %s after its child breached, want ALARM", s)
	}
}
