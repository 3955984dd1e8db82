package gameday

import (
	"context"
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
	alarms []alarmeval.Alarm
}

// Silent returns the alarms (deployed names) whose metric had no datapoint in [start, end) and
// whose missing data is not breaching: silence is not health, so such an alarm's "did not fire"
// proves nothing. A composite alarm has no metric of its own: its children are judged.
func (e *EvalWatcher) Silent(ctx context.Context, start, end time.Time) ([]string, error) {
	var out []string
	for _, a := range e.alarms {
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

// NewEvalWatcher loads the stack's alarms, with their full definitions, and watches them with
// infra/alarmeval over MiniStack's CloudWatch (alarmeval.MiniStack corrects its pooled queries
// with no dimensions).
func NewEvalWatcher(ctx context.Context, s *Stack) (*EvalWatcher, error) {
	cw := alarmeval.MiniStack(s.CW)
	alarms, err := alarmeval.LoadDeployed(ctx, cw, s.Name+"-")
	if err != nil {
		return nil, err
	}
	return &EvalWatcher{W: alarmeval.NewWatcher(cw, alarms), cw: cw, alarms: alarms}, nil
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
