package gameday

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// AlarmDef is what the runner needs of a deployed alarm: its metric, for the chart, and its
// evaluation window, for "fired within its window".
type AlarmDef struct {
	Name       string
	Namespace  string
	Metric     string
	Dimensions map[string]string
	Stat       string
	Period     time.Duration
	Evals      int
	Threshold  float64
}

// Window is the alarm's evaluation window: its periods times their number.
func (a AlarmDef) Window() time.Duration { return a.Period * time.Duration(max(a.Evals, 1)) }

// AlarmTransition is one change of an alarm's state.
type AlarmTransition struct {
	Alarm    string    `json:"alarm"`
	From, To string    `json:"-"`
	At       time.Time `json:"at"`
}

// AlarmWatcher evaluates the deployed alarms over time.
type AlarmWatcher interface {
	Poll(ctx context.Context, now time.Time) error
	Transitions() []AlarmTransition
	// States maps each alarm to its current state (OK, ALARM, INSUFFICIENT_DATA).
	States() map[string]string
}

// AlarmDefs reads the stack's alarms from the emulator (DescribeAlarms), by name.
func AlarmDefs(ctx context.Context, s *Stack) (map[string]AlarmDef, error) {
	out := map[string]AlarmDef{}
	rules := map[string]string{}
	p := cloudwatch.NewDescribeAlarmsPaginator(s.CW, &cloudwatch.DescribeAlarmsInput{
		AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm, cwtypes.AlarmTypeCompositeAlarm}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range page.CompositeAlarms {
			rules[aws.ToString(c.AlarmName)] = aws.ToString(c.AlarmRule)
		}
		for _, a := range page.MetricAlarms {
			a = mathMetric(a)
			d := AlarmDef{
				Name: aws.ToString(a.AlarmName), Namespace: aws.ToString(a.Namespace), Metric: aws.ToString(a.MetricName),
				Dimensions: map[string]string{}, Stat: string(a.Statistic), Period: time.Duration(aws.ToInt32(a.Period)) * time.Second,
				Evals: int(aws.ToInt32(a.EvaluationPeriods)), Threshold: aws.ToFloat64(a.Threshold),
			}
			if d.Stat == "" {
				d.Stat = aws.ToString(a.ExtendedStatistic)
			}
			for _, dim := range a.Dimensions {
				d.Dimensions[aws.ToString(dim.Name)] = aws.ToString(dim.Value)
			}
			out[d.Name] = d
		}
	}
	for name, rule := range rules {
		out[name] = compositeDef(name, rule, out)
	}
	return out, nil
}

// mathMetric gives a metric-math alarm the period and metric of its first MetricStat query:
// in the template's burn-rate alarms, the denominator (admissions), whose datapoints are what
// makes the ratio a datapoint, so it is the metric the chart and a silence check should read.
func mathMetric(a cwtypes.MetricAlarm) cwtypes.MetricAlarm {
	for _, q := range a.Metrics {
		if q.MetricStat != nil && q.MetricStat.Metric != nil {
			a.Period, a.Statistic = q.MetricStat.Period, cwtypes.Statistic(aws.ToString(q.MetricStat.Stat))
			a.Namespace, a.MetricName, a.Dimensions = q.MetricStat.Metric.Namespace, q.MetricStat.Metric.MetricName, q.MetricStat.Metric.Dimensions
			return a
		}
	}
	return a
}

var ruleChild = regexp.MustCompile(`\(\s*"?([^")]+?)"?\s*\)`)

// compositeDef is a composite alarm's definition: the metric and window of the child with the
// longest window (a composite reacts when its slowest child does).
func compositeDef(name, rule string, defs map[string]AlarmDef) AlarmDef {
	d := AlarmDef{Name: name}
	for _, m := range ruleChild.FindAllStringSubmatch(rule, -1) {
		child := m[1][strings.LastIndex(m[1], ":")+1:]
		if c, ok := defs[child]; ok && c.Window() > d.Window() {
			d = c
			d.Name = name
		}
	}
	return d
}

// LogicalName is the template's logical ID of a deployed alarm: CloudFormation names an alarm
// "<stack>-<LogicalId>-<suffix>", and a logical ID holds no dash.
func LogicalName(stack, name string) string {
	n := strings.TrimPrefix(name, stack+"-")
	if i := strings.Index(n, "-"); i > 0 {
		n = n[:i]
	}
	return n
}

// NativeWatcher reads the alarms' states as the emulator's own evaluator set them
// (DescribeAlarms). MiniStack's evaluator ignores dimensions and TreatMissingData, so the game
// day uses it only where no evaluator of the template's full definitions is available.
type NativeWatcher struct {
	s           *Stack
	states      map[string]string
	transitions []AlarmTransition
}

// NewNativeWatcher returns a watcher of the emulator's alarm states.
func NewNativeWatcher(s *Stack) *NativeWatcher {
	return &NativeWatcher{s: s, states: map[string]string{}}
}

// Poll reads every alarm's state and records the changes.
func (w *NativeWatcher) Poll(ctx context.Context, now time.Time) error {
	p := cloudwatch.NewDescribeAlarmsPaginator(w.s.CW, &cloudwatch.DescribeAlarmsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, a := range page.MetricAlarms {
			name, st := aws.ToString(a.AlarmName), string(a.StateValue)
			if old := w.states[name]; old != st {
				w.transitions = append(w.transitions, AlarmTransition{Alarm: name, From: old, To: st, At: now})
				w.states[name] = st
			}
		}
	}
	return nil
}

// Transitions returns every change seen.
func (w *NativeWatcher) Transitions() []AlarmTransition { return w.transitions }

// States returns the current states.
func (w *NativeWatcher) States() map[string]string { return maps.Clone(w.states) }
