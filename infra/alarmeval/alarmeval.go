// Package alarmeval evaluates CloudWatch metric alarms, with their full definitions, over
// GetMetricData, as CloudWatch documents the semantics. It is dev-only machinery: the game day
// and the emulator tests use it to see the template's alarms go to ALARM and back to OK on the
// stack deployed to MiniStack.
//
// MiniStack's own evaluator is not CloudWatch's: it pools every dimension set of a metric
// name, reduces a whole window to one statistic (so DatapointsToAlarm means nothing), ignores
// TreatMissingData, runs only when a metric is written, and evaluates no metric math. Each of
// these changes verdicts of the template's alarms, so the game day never reads MiniStack's
// alarm state; it loads the deployed definitions with DescribeAlarms (LoadDeployed) and
// evaluates them here.
//
// Evaluate follows the CloudWatch User Guide ("Evaluating an alarm", missing data): one
// datapoint per ended Period, aligned on the epoch; an evaluation range of N+2 periods, whose
// N most recent real datapoints are evaluated when there are N, else the missing ones filled
// as TreatMissingData says (with none at all: missing gives INSUFFICIENT_DATA, ignore keeps the
// state, breaching ALARM, notBreaching OK); ALARM when at least DatapointsToAlarm of them
// breach. Metric-math alarms are computed here (+ - * /, ABS, FILL, SUM, AVG, MIN, MAX), on the
// timestamps both operands have.
//
// MiniStack publishes AWS/Lambda metrics only for Invoke API calls and no IteratorAge or AWS/SQS
// metric, so alarms on those see no data; and its GetMetricData pools dimension sets for a query
// with none, which MiniStack (a wrapping client) corrects for Sum and SampleCount.
//
// A composite alarm (AlarmRule) is ALARM while its rule over its children's states is true,
// else OK; a Watcher evaluates it right after the metric alarms (EvaluateRule).
package alarmeval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// CloudWatchAPI is the part of the CloudWatch client the evaluator calls (*cloudwatch.Client
// has it).
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// State is an alarm state.
type State string

// The alarm states.
const (
	StateOK                State = "OK"
	StateAlarm             State = "ALARM"
	StateInsufficientData  State = "INSUFFICIENT_DATA"
	TreatMissing                 = "missing"
	TreatIgnore                  = "ignore"
	TreatBreaching               = "breaching"
	TreatNotBreaching            = "notBreaching"
	defaultEvaluationExtra       = 2
)

// Alarm is one metric alarm's full definition, as PutMetricAlarm takes it.
type Alarm struct {
	// Name is the alarm's name (for a stack's alarm, "<stack>-<LogicalId>-<SUFFIX>").
	Name string
	// Namespace, MetricName and Dimensions name the metric of a single-metric alarm.
	Namespace  string
	MetricName string
	Dimensions map[string]string
	// Statistic is Sum, Average, Minimum, Maximum, SampleCount, or an extended statistic
	// such as p99 (ExtendedStatistic).
	Statistic string
	// Period is the length of one datapoint's period.
	Period time.Duration
	// Metrics, when set, makes the alarm a metric-math alarm (Namespace, MetricName,
	// Dimensions, Statistic and Period are then unused).
	Metrics []types.MetricDataQuery
	// EvaluationPeriods is N, DatapointsToAlarm M (0 means N).
	EvaluationPeriods  int
	DatapointsToAlarm  int
	ComparisonOperator types.ComparisonOperator
	Threshold          float64
	// TreatMissingData is missing (the default when empty), ignore, breaching or notBreaching.
	TreatMissingData string
	// Rule, when set, makes the alarm a composite alarm (AlarmRule over other alarms' states;
	// every metric field is unused): a Watcher evaluates it after the metric alarms.
	Rule string
	// State is the current state, which TreatMissingData ignore keeps: LoadDeployed sets
	// INSUFFICIENT_DATA, as for a new alarm (MiniStack's own state is not meaningful, see the
	// package doc); a Watcher updates its copies.
	State State
}

// FromMetricAlarm converts a DescribeAlarms entry.
func FromMetricAlarm(m types.MetricAlarm) Alarm {
	a := Alarm{
		Name:               aws.ToString(m.AlarmName),
		Namespace:          aws.ToString(m.Namespace),
		MetricName:         aws.ToString(m.MetricName),
		Statistic:          string(m.Statistic),
		Period:             time.Duration(aws.ToInt32(m.Period)) * time.Second,
		Metrics:            m.Metrics,
		EvaluationPeriods:  int(aws.ToInt32(m.EvaluationPeriods)),
		DatapointsToAlarm:  int(aws.ToInt32(m.DatapointsToAlarm)),
		ComparisonOperator: m.ComparisonOperator,
		Threshold:          aws.ToFloat64(m.Threshold),
		TreatMissingData:   aws.ToString(m.TreatMissingData),
		State:              StateInsufficientData,
	}
	if s := aws.ToString(m.ExtendedStatistic); s != "" {
		a.Statistic = s
	}
	if len(m.Dimensions) > 0 {
		a.Dimensions = map[string]string{}
		for _, d := range m.Dimensions {
			a.Dimensions[aws.ToString(d.Name)] = aws.ToString(d.Value)
		}
	}
	return a
}

// LoadDeployed returns every metric and composite alarm whose name starts with namePrefix (a
// stack's alarms: "<stack>-"), from DescribeAlarms, sorted by name.
func LoadDeployed(ctx context.Context, cw CloudWatchAPI, namePrefix string) ([]Alarm, error) {
	var out []Alarm
	in := &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String(namePrefix),
		AlarmTypes: []types.AlarmType{types.AlarmTypeMetricAlarm, types.AlarmTypeCompositeAlarm}}
	for {
		page, err := cw.DescribeAlarms(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("alarmeval: describe alarms %q: %w", namePrefix, err)
		}
		for _, m := range page.MetricAlarms {
			// A prefix filter the emulator ignored must not let another stack's alarms in.
			if strings.HasPrefix(aws.ToString(m.AlarmName), namePrefix) {
				out = append(out, FromMetricAlarm(m))
			}
		}
		for _, c := range page.CompositeAlarms {
			if strings.HasPrefix(aws.ToString(c.AlarmName), namePrefix) {
				out = append(out, FromCompositeAlarm(c))
			}
		}
		if aws.ToString(page.NextToken) == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	slices.SortFunc(out, func(a, b Alarm) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// LogicalID returns the template's logical ID of a stack's alarm named
// "<stack>-<LogicalId>-<SUFFIX>", or name itself when it is not one.
func LogicalID(name, stack string) string {
	rest, ok := strings.CutPrefix(name, stack+"-")
	if !ok {
		return name
	}
	if i := strings.LastIndex(rest, "-"); i > 0 {
		return rest[:i]
	}
	return rest
}

// period is one datapoint: its period's start and value.
type datapoint struct {
	start time.Time
	value float64
}

// Evaluate returns the alarm's state at now, and CloudWatch's kind of reason.
// A composite alarm has no metric: Watcher evaluates its Rule (EvaluateRule).
func (a Alarm) Evaluate(ctx context.Context, cw CloudWatchAPI, now time.Time) (State, string, error) {
	if a.Rule != "" {
		return "", "", fmt.Errorf("alarmeval: %s is a composite alarm: evaluate its rule over its children's states", a.Name)
	}
	period := a.period()
	if period <= 0 {
		return "", "", fmt.Errorf("alarmeval: %s: no period", a.Name)
	}
	n := max(a.EvaluationPeriods, 1)
	end := now.Truncate(period)
	start := end.Add(-time.Duration(n+defaultEvaluationExtra) * period)
	points, err := a.series(ctx, cw, start, end, period)
	if err != nil {
		return "", "", err
	}
	state, reason := a.verdict(points)
	return state, reason, nil
}

// verdict is the alarm's state over the real datapoints of its evaluation range, oldest
// first (see the package doc).
func (a Alarm) verdict(points []datapoint) (State, string) {
	n := max(a.EvaluationPeriods, 1)
	m := a.DatapointsToAlarm
	if m <= 0 || m > n {
		m = n
	}
	treat := cmp.Or(a.TreatMissingData, TreatMissing)
	if len(points) == 0 {
		return a.noData(n, treat)
	}
	evaluated := points[max(len(points)-n, 0):]
	breaching := 0
	for _, p := range evaluated {
		if breaches(a.ComparisonOperator, p.value, a.Threshold) {
			breaching++
		}
	}
	missing := n - len(evaluated)
	if treat == TreatBreaching {
		breaching += missing
	}
	state := StateOK
	if breaching >= m {
		state = StateAlarm
	}
	vals := make([]string, 0, len(evaluated))
	for _, p := range evaluated {
		vals = append(vals, fmt.Sprintf("%g (%s)", p.value, p.start.UTC().Format("02/01/06 15:04:05")))
	}
	reason := fmt.Sprintf("Threshold Crossed: %d out of the last %d datapoints [%s] breached the threshold (%s %g); %d needed for ALARM",
		breaching, n, strings.Join(vals, ", "), a.ComparisonOperator, a.Threshold, m)
	if missing > 0 {
		reason += fmt.Sprintf("; %d missing datapoints treated as %s", missing, treat)
	}
	return state, reason
}

// noData is the state with no real datapoint in the evaluation range of an alarm of n
// evaluation periods.
func (a Alarm) noData(n int, treat string) (State, string) {
	switch treat {
	case TreatIgnore:
		return cmp.Or(a.State, StateInsufficientData), fmt.Sprintf("no datapoint in the last %d periods: state kept (treat missing data as ignore)", n+defaultEvaluationExtra)
	case TreatBreaching:
		return StateAlarm, fmt.Sprintf("Threshold Crossed: no datapoints were received for %d periods and %d missing datapoints were treated as [Breaching].", n, n)
	case TreatNotBreaching:
		return StateOK, fmt.Sprintf("Threshold Crossed: no datapoints were received for %d periods and %d missing datapoints were treated as [NonBreaching].", n, n)
	}
	return StateInsufficientData, fmt.Sprintf("Insufficient Data: %d datapoints were unknown.", n)
}

// EvaluationWindow is Period × EvaluationPeriods: the span whose datapoints decide a verdict.
// A breach that lasts it is in ALARM at most one period after it ends; a datapoint keeps
// counting for the evaluation range, two periods longer (see the package doc).
func (a Alarm) EvaluationWindow() time.Duration {
	return a.period() * time.Duration(max(a.EvaluationPeriods, 1))
}

func (a Alarm) period() time.Duration {
	if len(a.Metrics) == 0 {
		return a.Period
	}
	for _, q := range a.Metrics {
		if q.MetricStat != nil && q.MetricStat.Period != nil {
			return time.Duration(*q.MetricStat.Period) * time.Second
		}
		if q.Period != nil {
			return time.Duration(*q.Period) * time.Second
		}
	}
	return a.Period
}

// breaches reports whether v breaches threshold under op.
func breaches(op types.ComparisonOperator, v, threshold float64) bool {
	switch op {
	case types.ComparisonOperatorGreaterThanThreshold:
		return v > threshold
	case types.ComparisonOperatorGreaterThanOrEqualToThreshold:
		return v >= threshold
	case types.ComparisonOperatorLessThanThreshold:
		return v < threshold
	case types.ComparisonOperatorLessThanOrEqualToThreshold:
		return v <= threshold
	}
	return false
}

// Datapoints returns how many periods of [start, end) hold a datapoint of the alarm's metric (of
// its expression, for a metric-math alarm): none means the alarm saw only silence there.
func (a Alarm) Datapoints(ctx context.Context, cw CloudWatchAPI, start, end time.Time) (int, error) {
	period := a.period()
	if period <= 0 {
		return 0, fmt.Errorf("alarmeval: %s: no period", a.Name)
	}
	points, err := a.series(ctx, cw, start.Truncate(period), end, period)
	return len(points), err
}

// series returns the alarm's datapoints in [start, end), oldest first.
func (a Alarm) series(ctx context.Context, cw CloudWatchAPI, start, end time.Time, period time.Duration) ([]datapoint, error) {
	if len(a.Metrics) > 0 {
		return a.mathSeries(ctx, cw, start, end, period)
	}
	q := types.MetricDataQuery{
		Id: aws.String("m"),
		MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String(a.Namespace), MetricName: aws.String(a.MetricName), Dimensions: dimensionList(a.Dimensions)},
			Period: aws.Int32(int32(period / time.Second)),
			Stat:   aws.String(a.Statistic),
		},
	}
	got, err := fetch(ctx, cw, []types.MetricDataQuery{q}, start, end)
	if err != nil {
		return nil, fmt.Errorf("alarmeval: %s: %w", a.Name, err)
	}
	return got["m"].points(), nil
}

func dimensionList(dims map[string]string) []types.Dimension {
	keys := make([]string, 0, len(dims))
	for k := range dims {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]types.Dimension, 0, len(keys))
	for _, k := range keys {
		out = append(out, types.Dimension{Name: aws.String(k), Value: aws.String(dims[k])})
	}
	return out
}

// series is a time series keyed by period start (Unix seconds).
type series map[int64]float64

func (s series) points() []datapoint {
	keys := make([]int64, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]datapoint, 0, len(keys))
	for _, k := range keys {
		if math.IsNaN(s[k]) || math.IsInf(s[k], 0) {
			continue
		}
		out = append(out, datapoint{start: time.Unix(k, 0).UTC(), value: s[k]})
	}
	return out
}

// fetch runs the MetricStat queries (GetMetricData, every page) and returns each one's
// series, keyed by Id.
func fetch(ctx context.Context, cw CloudWatchAPI, queries []types.MetricDataQuery, start, end time.Time) (map[string]series, error) {
	out := map[string]series{}
	if len(queries) == 0 {
		return out, nil
	}
	in := &cloudwatch.GetMetricDataInput{MetricDataQueries: queries, StartTime: aws.Time(start), EndTime: aws.Time(end), ScanBy: types.ScanByTimestampAscending}
	for {
		page, err := cw.GetMetricData(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("get metric data: %w", err)
		}
		for _, r := range page.MetricDataResults {
			id := aws.ToString(r.Id)
			if r.StatusCode == types.StatusCodeInternalError || r.StatusCode == types.StatusCodeForbidden {
				return nil, fmt.Errorf("get metric data: query %s: %s", id, r.StatusCode)
			}
			if len(r.Timestamps) != len(r.Values) {
				return nil, fmt.Errorf("get metric data: query %s: %d timestamps, %d values", id, len(r.Timestamps), len(r.Values))
			}
			s := out[id]
			if s == nil {
				s = series{}
				out[id] = s
			}
			for i, ts := range r.Timestamps {
				s[ts.Unix()] = r.Values[i]
			}
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// Transition is one change of an alarm's state seen by a Watcher.
type Transition struct {
	Alarm    string
	From, To State
	At       time.Time
	Reason   string
}

// Watcher evaluates a set of alarms each time Poll is called and records their transitions.
// Its methods are safe for concurrent use.
type Watcher struct {
	cw CloudWatchAPI

	mu          sync.Mutex
	alarms      []Alarm
	transitions []Transition
}

// NewWatcher watches alarms (each starts in its State, INSUFFICIENT_DATA when empty).
func NewWatcher(cw CloudWatchAPI, alarms []Alarm) *Watcher {
	w := &Watcher{cw: cw, alarms: slices.Clone(alarms)}
	for i := range w.alarms {
		if w.alarms[i].State == "" {
			w.alarms[i].State = StateInsufficientData
		}
	}
	return w
}

// Watch replaces the alarms watched, as a deploy that added, changed or removed some leaves
// them: an alarm still there keeps its state, a new one starts in its State (INSUFFICIENT_DATA
// when empty), a removed one is no longer evaluated; the transitions recorded so far stay.
func (w *Watcher) Watch(alarms []Alarm) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := map[string]State{}
	for _, a := range w.alarms {
		was[a.Name] = a.State
	}
	w.alarms = slices.Clone(alarms)
	for i, a := range w.alarms {
		if st, ok := was[a.Name]; ok {
			w.alarms[i].State = st
		} else if a.State == "" {
			w.alarms[i].State = StateInsufficientData
		}
	}
}

// Poll evaluates every alarm at now and records each change of state: the metric alarms
// first, then the composite ones over the states just found (in name order, so a composite
// of composites sees its children's new states when they sort first; otherwise the next
// Poll). It evaluates them all even when some fail, and returns their errors joined.
func (w *Watcher) Poll(ctx context.Context, now time.Time) error {
	w.mu.Lock()
	alarms := slices.Clone(w.alarms)
	w.mu.Unlock()
	var errs []error
	for _, a := range alarms {
		if a.Rule != "" {
			continue
		}
		state, reason, err := a.Evaluate(ctx, w.cw, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.record(a.Name, state, now, reason)
	}
	for _, a := range alarms {
		if a.Rule == "" {
			continue
		}
		state, err := EvaluateRule(a.Rule, w.States())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.Name, err))
			continue
		}
		w.record(a.Name, state, now, "alarm rule "+a.Rule+" evaluates to "+string(state))
	}
	return errors.Join(errs...)
}

// record sets the state of the alarm named name, recording a transition when it changed; an
// alarm Watch removed meanwhile is left out.
func (w *Watcher) record(name string, state State, now time.Time, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.alarms, func(a Alarm) bool { return a.Name == name })
	if i < 0 {
		return
	}
	if a := w.alarms[i]; state != a.State {
		w.transitions = append(w.transitions, Transition{Alarm: a.Name, From: a.State, To: state, At: now, Reason: reason})
		w.alarms[i].State = state
	}
}

// Transitions returns every transition recorded, oldest first.
func (w *Watcher) Transitions() []Transition {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.transitions)
}

// States returns each alarm's current state by name.
func (w *Watcher) States() map[string]State {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]State, len(w.alarms))
	for _, a := range w.alarms {
		out[a.Name] = a.State
	}
	return out
}

func sortedKeys(m map[int64]float64) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func unixTime(t int64) time.Time { return time.Unix(t, 0).UTC() }
