package gameday

import (
	"context"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/infra/alarmeval"
)

// Evaluator is the game day's alarm evaluator, for the report: infra/alarmeval, since MiniStack's
// own evaluator changes the verdicts of the template's alarms (it pools dimension sets, ignores
// TreatMissingData and M of N; docs/operations.md, "Metrics and alarms locally").
const Evaluator = "infra/alarmeval (each deployed alarm's full definition from DescribeAlarms, evaluated over GetMetricData)"

// EvalWatcher adapts an alarmeval.Watcher to AlarmWatcher.
type EvalWatcher struct {
	W      *alarmeval.Watcher
	cw     alarmeval.CloudWatchAPI
	prefix string
	mu     sync.Mutex
	alarms []alarmeval.Alarm
}

// Silent returns the alarms (deployed names) whose metric had no datapoint in [start, end) and
// whose missing data is not breaching: silence is not health, so such an alarm's "did not fire"
// proves nothing. A composite alarm has no metric of its own: its children are judged.
func (e *EvalWatcher) Silent(ctx context.Context, start, end time.Time) ([]string, error) {
	e.mu.Lock()
	alarms := e.alarms
	e.mu.Unlock()
	var out []string
	for _, a := range alarms {
		if a.TreatMissingData == "breaching" || a.Rule != "" {
			continue
		}
		n, err := a.Datapoints(ctx, e.cw, start, end)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			out = append(out, a.Name)
		}
	}
	return out, nil
}

// Datapoints returns how many periods of [start, end) hold a datapoint of the metric of the
// alarm named, and its TreatMissingData (MetricCounter); known is false for a composite alarm
// or one not watched.
func (e *EvalWatcher) Datapoints(ctx context.Context, name string, start, end time.Time) (n int, missing string, known bool, err error) {
	e.mu.Lock()
	alarms := e.alarms
	e.mu.Unlock()
	for _, a := range alarms {
		if a.Name == name && a.Rule == "" {
			n, err := a.Datapoints(ctx, e.cw, start, end)
			return n, a.TreatMissingData, true, err
		}
	}
	return 0, "", false, nil
}

// NewEvalWatcher loads the stack's alarms, with their full definitions, and watches them with
// infra/alarmeval over MiniStack's CloudWatch (alarmeval.MiniStack corrects its pooled queries
// with no dimensions).
func NewEvalWatcher(ctx context.Context, s *Stack) (*EvalWatcher, error) {
	return newEvalWatcher(ctx, alarmeval.MiniStack(s.CW), s.Name)
}

// newEvalWatcher watches the alarms of stack over cw.
func newEvalWatcher(ctx context.Context, cw alarmeval.CloudWatchAPI, stack string) (*EvalWatcher, error) {
	alarms, err := alarmeval.LoadDeployed(ctx, cw, stack+"-")
	if err != nil {
		return nil, err
	}
	return &EvalWatcher{W: alarmeval.NewWatcher(cw, alarms), cw: cw, prefix: stack + "-", alarms: alarms}, nil
}

// Reload loads the stack's alarms again, as a deploy left them, and watches those: what a
// removed alarm did before stays in the transitions, but it is no longer evaluated, nor judged
// silent; an added one is.
func (e *EvalWatcher) Reload(ctx context.Context) error {
	alarms, err := alarmeval.LoadDeployed(ctx, e.cw, e.prefix)
	if err != nil {
		return err
	}
	e.W.Watch(alarms)
	e.mu.Lock()
	e.alarms = alarms
	e.mu.Unlock()
	return nil
}

// Poll evaluates every alarm at now.
func (e *EvalWatcher) Poll(ctx context.Context, now time.Time) error { return e.W.Poll(ctx, now) }

// Transitions returns every change seen.
func (e *EvalWatcher) Transitions() []AlarmTransition {
	var out []AlarmTransition
	for _, t := range e.W.Transitions() {
		out = append(out, AlarmTransition{Alarm: t.Alarm, From: string(t.From), To: string(t.To), At: t.At})
	}
	return out
}

// States returns every alarm's current state.
func (e *EvalWatcher) States() map[string]string {
	out := map[string]string{}
	for k, v := range e.W.States() {
		out[k] = string(v)
	}
	return out
}
