package gameday

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// startRun is a Run over a CloudWatch holding DigestLagAlarm (missing data breaching) and
// AuditFailureAlarm (not breaching), polled once: with no datapoint, as with the EMF bridge
// stopped, DigestLagAlarm is in ALARM and AuditFailureAlarm OK.
func startRun(t *testing.T, cw *alarmsCW) *Run {
	t.Helper()
	alarm := func(name, metric, missing string, threshold float64) cwtypes.MetricAlarm {
		return cwtypes.MetricAlarm{AlarmName: aws.String("st-" + name + "-X"), Namespace: aws.String("resetnotify/st"),
			MetricName: aws.String(metric), Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(300), EvaluationPeriods: aws.Int32(1),
			Threshold: aws.Float64(threshold), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold, TreatMissingData: aws.String(missing)}
	}
	cw.alarms = []cwtypes.MetricAlarm{alarm("DigestLagAlarm", "DigestLag", "breaching", 900), alarm("AuditFailureAlarm", "AuditFailures", "notBreaching", 1e9)}
	w, err := newEvalWatcher(context.Background(), cw, "st")
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{S: &Stack{Name: "st"}, Watcher: w, Logf: t.Logf, StartWait: time.Minute, silentAfter: 10 * time.Millisecond,
		Defs: map[string]AlarmDef{
			"DigestLagAlarm":    {Namespace: "resetnotify/st", Metric: "DigestLag", Period: 5 * time.Minute, Evals: 1},
			"AuditFailureAlarm": {Namespace: "resetnotify/st", Metric: "AuditFailures", Period: 5 * time.Minute, Evals: 1},
		}}
	r.pollOnce(context.Background())
	if st := r.statesNow(); st["st-DigestLagAlarm-X"] != "ALARM" || st["st-AuditFailureAlarm-X"] != "OK" {
		t.Fatalf("states %v: want DigestLagAlarm in ALARM, AuditFailureAlarm OK", st)
	}
	return r
}

// TestSilentAlarmEndsTheStartWait: an alarm kept in ALARM by the silence of its metric ends the
// wait once silentBound has passed, named silent; one in ALARM on data of its own is waited for
// up to the limit, and named with its datapoints; with every alarm OK there is nothing to name.
func TestSilentAlarmEndsTheStartWait(t *testing.T) {
	r := startRun(t, &alarmsCW{})
	began := time.Now()
	got := r.waitNoAlarm(context.Background(), time.Minute)
	if waited := time.Since(began); waited > 5*time.Second {
		t.Errorf("waited %s for an alarm silence keeps in ALARM", waited)
	}
	if len(got) != 1 || got[0].Name != "DigestLagAlarm" || !got[0].Silent ||
		!strings.HasPrefix(got[0].Why, "silent: no datapoint of resetnotify/st/DigestLag since ") {
		t.Errorf("in ALARM: %+v, want DigestLagAlarm alone, silent, its metric named", got)
	}

	late := 2000.0
	r = startRun(t, &alarmsCW{value: &late})
	began = time.Now()
	got = r.waitNoAlarm(context.Background(), 300*time.Millisecond)
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Errorf("in ALARM on its data: waited %s, not the whole limit", waited)
	}
	if len(got) != 1 || got[0].Silent || !strings.Contains(got[0].Why, "with a datapoint of resetnotify/st/DigestLag") {
		t.Errorf("in ALARM on its data: %+v, want DigestLagAlarm, not silent", got)
	}

	r.history = append(r.history, stateSample{time.Now(), map[string]string{"st-DigestLagAlarm-X": "OK"}})
	if got := r.waitNoAlarm(context.Background(), time.Minute); len(got) != 0 {
		t.Errorf("all OK: %+v", got)
	}
}

// TestScenarioInAlarmAtStartIsNotRun: with the alarm path silent (no datapoint at all), a
// scenario fails before it begins, naming the silent alarm, and puts no load and no fault on
// the stack.
func TestScenarioInAlarmAtStartIsNotRun(t *testing.T) {
	r := startRun(t, &alarmsCW{})
	injected := false
	sc := Scenario{Name: "baseline", Rate: 1, Hold: time.Minute,
		Inject: func(context.Context, *Exec) error { injected = true; return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res := r.Execute(ctx, sc)
	if injected || res.Requests != 0 || !res.FaultStart.IsZero() {
		t.Errorf("the scenario ran (fault injected %v, %d requests)", injected, res.Requests)
	}
	if res.Passed || !res.NotRun || len(res.Silent) != 1 || res.Silent[0] != "DigestLagAlarm" ||
		len(res.AlarmAtStart) != 1 || res.AlarmAtStart[0] != "DigestLagAlarm" {
		t.Errorf("result %+v: want failed, not run, DigestLagAlarm named silent", res)
	}
	if all := strings.Join(res.Errors, "\n"); !strings.Contains(all, "DigestLagAlarm (silent: no datapoint of resetnotify/st/DigestLag since ") {
		t.Errorf("errors %q: want DigestLagAlarm named silent, with its metric", all)
	}
}

// TestSilentBound: twice the shortest alarm period plus the bridge's lag.
func TestSilentBound(t *testing.T) {
	defs := map[string]AlarmDef{"a": {Period: 5 * time.Minute}, "b": {Period: time.Minute}, "c": {}}
	if got := silentBound(defs); got != 2*time.Minute+bridgeLag {
		t.Errorf("silentBound = %s, want %s", got, 2*time.Minute+bridgeLag)
	}
}
