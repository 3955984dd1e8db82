package worker_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/worker"
)

// emfLine is one parsed EMF line: its dimension values, its dimension sets, and each metric's
// unit and value.
type emfLine struct {
	dims   map[string]string
	sets   [][]string
	units  map[string]string
	values map[string]float64
}

// has reports whether the line publishes its metrics under exactly the dimension keys set
// (Function first, the rest sorted, as obs writes them).
func (l emfLine) has(set ...string) bool {
	return slices.ContainsFunc(l.sets, func(s []string) bool { return slices.Equal(s, set) })
}

// parseEMF parses every line of out as an EMF line in the resetnotify namespace.
func parseEMF(t *testing.T, out string) []emfLine {
	t.Helper()
	var lines []emfLine
	for _, raw := range strings.Split(strings.TrimSpace(out), "\n") {
		if raw == "" {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatalf("metric line is not JSON: %v\n%s", err, raw)
		}
		var meta struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(raw), &meta); err != nil || len(meta.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("not one EMF directive (%v):\n%s", err, raw)
		}
		d := meta.AWS.CloudWatchMetrics[0]
		if d.Namespace != obs.Namespace {
			t.Errorf("namespace %q, want %q", d.Namespace, obs.Namespace)
		}
		l := emfLine{dims: map[string]string{}, sets: d.Dimensions, units: map[string]string{}, values: map[string]float64{}}
		for _, set := range d.Dimensions {
			for _, k := range set {
				v, ok := doc[k].(string)
				if !ok {
					t.Errorf("dimension %s has no string value:\n%s", k, raw)
				}
				l.dims[k] = v
			}
		}
		for _, m := range d.Metrics {
			v, ok := doc[m.Name].(float64)
			if !ok {
				t.Errorf("metric %s has no numeric value:\n%s", m.Name, raw)
			}
			l.units[m.Name], l.values[m.Name] = m.Unit, v
		}
		lines = append(lines, l)
	}
	return lines
}

// withMetric returns the lines that carry the metric name.
func withMetric(lines []emfLine, name string) []emfLine {
	var out []emfLine
	for _, l := range lines {
		if _, ok := l.values[name]; ok {
			out = append(out, l)
		}
	}
	return out
}

func TestProviderCallMetrics(t *testing.T) {
	tests := []struct {
		name    string
		outcome sms.Outcome
		class   sms.Class
	}{
		{"accepted", sms.Accepted("pm-1"), sms.ClassAccepted},
		{"timeout", sms.Unknown(sms.DetailTimeout, errors.New("deadline exceeded")), sms.ClassUnknown},
		{"throttled", sms.NotAccepted(sms.DetailThrottled, time.Second, errors.New("429")), sms.ClassNotAccepted},
		{"rejected", sms.Rejected("opted_out", errors.New("400")), sms.ClassRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sender.Outcomes = []sms.Outcome{tc.outcome}
			f.dispatch(t, notify.MessageOf(f.admitKey(t, "k")))

			lines := withMetric(parseEMF(t, f.metrics.String()), worker.MetricProviderLatency)
			if len(lines) != 1 {
				t.Fatalf("%d lines with %s, want 1 per provider call", len(lines), worker.MetricProviderLatency)
			}
			l := lines[0]
			if !l.has(obs.DimFunction, worker.DimProvider) {
				t.Errorf("dimension sets %v lack [Function Provider], which the latency alarm reads", l.sets)
			}
			if !l.has(obs.DimFunction, "Class", "Detail", worker.DimProvider) {
				t.Errorf("dimension sets %v lack [Function Class Detail Provider]", l.sets)
			}
			if l.dims[worker.DimProvider] != providerSim || l.dims["Class"] != string(tc.class) {
				t.Errorf("dimensions %v, want Provider %s and Class %s", l.dims, providerSim, tc.class)
			}
			if l.units[worker.MetricProviderLatency] != string(obs.UnitMilliseconds) || l.values[worker.MetricProviderLatency] < 0 {
				t.Errorf("latency %v %s", l.values[worker.MetricProviderLatency], l.units[worker.MetricProviderLatency])
			}
			if l.values[worker.MetricProviderCalls] != 1 {
				t.Errorf("%s = %v, want 1", worker.MetricProviderCalls, l.values[worker.MetricProviderCalls])
			}
		})
	}
}

// overdue returns the sweep's MetricOverdue gauge by state.
func overdue(t *testing.T, f *fixture) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, l := range withMetric(parseEMF(t, f.metrics.String()), worker.MetricOverdue) {
		if !l.has(obs.DimFunction, worker.DimState) {
			t.Errorf("%s dimension sets %v, want [[Function State]]", worker.MetricOverdue, l.sets)
		}
		got[l.dims[worker.DimState]] += l.values[worker.MetricOverdue]
	}
	return got
}

func TestSweeperReportsOverdueByState(t *testing.T) {
	t.Run("nothing due still reports zeros", func(t *testing.T) {
		f := newFixture(t)
		f.sweep(t)
		want := map[string]float64{"accepted": 0, "retry_scheduled": 0, "dispatching": 0, "dispatch_unknown": 0}
		if diff := cmp.Diff(want, overdue(t, f)); diff != "" {
			t.Errorf("overdue (-want +got):\n%s", diff)
		}
	})
	t.Run("backlog", func(t *testing.T) {
		f := newFixture(t)
		f.admitKey(t, "lost") // accepted, its dispatch message lost
		for _, k := range []string{"u1", "u2"} {
			f.admitKey(t, k)
			f.lease(t, k)
			f.move(t, k, notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: t0.Add(time.Minute)})
		}
		// Still inside its visibility window: scheduled, not a backlog.
		f.admitKey(t, "waiting")
		f.lease(t, "waiting")
		f.move(t, "waiting", notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: t0.Add(time.Hour)})
		f.clock.Set(t0.Add(3 * time.Minute))
		f.sweep(t)
		want := map[string]float64{"accepted": 1, "retry_scheduled": 0, "dispatching": 0, "dispatch_unknown": 2}
		if diff := cmp.Diff(want, overdue(t, f)); diff != "" {
			t.Errorf("overdue (-want +got):\n%s", diff)
		}
	})
}

func TestExpiryIsCountedByTargetState(t *testing.T) {
	f := newFixture(t)
	f.admit(t, request("late", 3*time.Minute))
	f.clock.Set(t0.Add(3 * time.Minute))
	if rep := f.sweep(t); rep.Expired != 1 {
		t.Fatalf("report %+v, want one expiry", rep)
	}
	var expired []emfLine
	for _, l := range withMetric(parseEMF(t, f.metrics.String()), obs.MetricTransitions) {
		if l.dims[obs.DimToState] == string(notify.StateExpired) {
			expired = append(expired, l)
		}
	}
	if len(expired) != 1 {
		t.Fatalf("%d expired transitions counted, want 1", len(expired))
	}
	l := expired[0]
	if !l.has(obs.DimFunction, obs.DimToState) || !l.has(obs.DimFunction, obs.DimReason, obs.DimToState) {
		t.Errorf("dimension sets %v, want [Function Reason ToState] and [Function ToState]", l.sets)
	}
	if l.dims[obs.DimReason] != string(notify.ReasonExpiredBeforeDispatch) {
		t.Errorf("reason %q", l.dims[obs.DimReason])
	}
}
