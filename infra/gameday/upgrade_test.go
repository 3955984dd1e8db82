package gameday

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/compat"
)

// previousRecord is the record PreviousRelease's code writes (infra/compat's fixture of it).
func previousRecord(t *testing.T) Item {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "compat", "testdata", PreviousRelease, compat.RecordFile))
	if err != nil {
		t.Fatalf("the previous release's record (make compat-fixtures COMPAT_FROM=%s writes it): %v", PreviousRelease, err)
	}
	item, err := compat.ParseItem(raw)
	if err != nil {
		t.Fatal(err)
	}
	return item
}

// incompatible are record shapes this checkout cannot read: each must fail the scenario.
var incompatible = map[string]func(Item){
	"dispatch_deadline renamed": func(it Item) {
		it["dispatch_deadline_at"] = it["dispatch_deadline"]
		delete(it, "dispatch_deadline")
	},
	"state retyped": func(it Item) { it["state"] = &ddbtypes.AttributeValueMemberN{Value: "5"} },
	"expires_at renamed": func(it Item) {
		it["expires"] = it["expires_at"]
		delete(it, "expires_at")
	},
	"notification_id renamed": func(it Item) {
		it["id"] = it["notification_id"]
		delete(it, "notification_id")
	},
}

// TestReadRecords: the previous release's record reads with this checkout's decoder; each
// incompatible shape is a problem naming the record.
func TestReadRecords(t *testing.T) {
	after := compat.At.Add(time.Hour)
	if before, problems := ReadRecords([]Item{previousRecord(t)}, after); before != 1 || len(problems) != 0 {
		t.Fatalf("the previous release's record: %d before the deploy, problems %v; want 1, none", before, problems)
	}
	if before, _ := ReadRecords([]Item{previousRecord(t)}, compat.At.Truncate(time.Second)); before != 0 {
		t.Errorf("a record created at the deploy counted as before it")
	}
	for name, change := range incompatible {
		it := previousRecord(t)
		change(it)
		before, problems := ReadRecords([]Item{previousRecord(t), it}, after)
		if len(problems) != 1 || !strings.Contains(problems[0], "own3r-fp!evt-1") {
			t.Errorf("%s: problems %v, want one naming the record", name, problems)
		}
		if before != 1 {
			t.Errorf("%s: %d readable records before the deploy, want 1", name, before)
		}
	}
}

// upgradeCheck is the upgrade scenario's check over items, the deploy having begun at at and
// ended with deployErr.
func upgradeCheck(t *testing.T, items []Item, at time.Time, deployErr error) []string {
	t.Helper()
	sc := Upgrade()
	var tag string
	u := &upgrade{deployedAt: at, err: deployErr, scan: func(_ context.Context, _ *Exec, got string) ([]Item, error) {
		tag = got
		return items, nil
	}}
	x := &Exec{Run: &Run{S: &Stack{RunID: "r1"}, Logf: t.Logf}, Scenario: sc}
	problems := u.check(context.Background(), x)
	if deployErr == nil && tag != "gd-r1-upgrade" {
		t.Errorf("scanned for %q, want the scenario's loads (gd-r1-upgrade)", tag)
	}
	return problems
}

// TestUpgradeCheck: the scenario fails when a record of its loads does not read, when none was
// written before the deploy, and when the deploy failed; it passes on the previous release's
// records.
func TestUpgradeCheck(t *testing.T) {
	after := compat.At.Add(time.Hour)
	if p := upgradeCheck(t, []Item{previousRecord(t)}, after, nil); len(p) != 0 {
		t.Errorf("the previous release's records: %v, want no problem", p)
	}
	for name, change := range incompatible {
		it := previousRecord(t)
		change(it)
		if p := upgradeCheck(t, []Item{previousRecord(t), it}, after, nil); len(p) != 1 || !strings.Contains(p[0], "does not read") {
			t.Errorf("%s: %v, want the scenario failed on the unreadable record", name, p)
		}
	}
	if p := upgradeCheck(t, []Item{previousRecord(t)}, compat.At.Truncate(time.Second), nil); len(p) != 1 || !strings.Contains(p[0], "vacuous") {
		t.Errorf("no record before the deploy: %v, want vacuous", p)
	}
	if p := upgradeCheck(t, []Item{previousRecord(t)}, after, errors.New("sam deploy: exit status 1")); len(p) != 1 || !strings.Contains(p[0], "sam deploy") {
		t.Errorf("deploy failed: %v, want it named", p)
	}
}

// TestUpgradeNeedsPreviousRelease: on a stack deployed as this checkout the scenario fails at
// once, naming how to start it from the previous release.
func TestUpgradeNeedsPreviousRelease(t *testing.T) {
	sc := Upgrade()
	x := &Exec{Run: &Run{S: &Stack{}, Logf: t.Logf}, Scenario: sc}
	t.Setenv("RESETNOTIFY_EMULATOR_DEPLOYED", "")
	if err := sc.Inject(context.Background(), x); err == nil || !strings.Contains(err.Error(), "RESETNOTIFY_EMULATOR_FROM="+PreviousRelease) {
		t.Errorf("stack of this checkout: %v, want it refused", err)
	}
	t.Setenv("RESETNOTIFY_EMULATOR_DEPLOYED", PreviousRelease)
	if err := sc.Inject(context.Background(), x); err == nil || !strings.Contains(err.Error(), "fault proxy") {
		t.Errorf("previous release, no proxy: %v, want only the proxy missing", err)
	}
}

// TestFromFirst: a scenario that starts from an earlier release runs first in its lane, the
// others in the catalogue's order.
func TestFromFirst(t *testing.T) {
	for n := 1; n <= 4; n++ {
		for _, lane := range PlanLanes(Scenarios(), n) {
			for i, sc := range lane {
				if sc.From != "" && i != 0 {
					t.Errorf("%d lanes: %s is scenario %d of its lane, want it first", n, sc.Name, i+1)
				}
			}
		}
	}
}

// TestUpgradeReloadsAlarmsAfterItsDeploy: once this checkout is deployed, the scenario is
// judged by this checkout's alarms; a failed deploy leaves them as they were and fails it.
func TestUpgradeReloadsAlarmsAfterItsDeploy(t *testing.T) {
	for _, deployErr := range []error{nil, errors.New("sam deploy: exit status 1")} {
		var order []string
		u := &upgrade{
			deploy: func(context.Context) ([]byte, error) { order = append(order, "deploy"); return nil, deployErr },
			reload: func(context.Context, *Exec) error { order = append(order, "reload"); return nil },
		}
		x := &Exec{Run: &Run{S: &Stack{RunID: "r1"}, Logf: t.Logf}, Scenario: Upgrade(), simFaults: map[string]int64{}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the loads beside the deploy submit nothing
		u.during(ctx, x)
		want := "deploy reload"
		if deployErr != nil {
			want = "deploy"
		}
		if got := strings.Join(order, " "); got != want {
			t.Errorf("deploy error %v: %q, want %q", deployErr, got, want)
		}
	}
	u := &upgrade{
		deploy: func(context.Context) ([]byte, error) { return nil, nil },
		reload: func(context.Context, *Exec) error { return errors.New("describe alarms: refused") },
	}
	x := &Exec{Run: &Run{S: &Stack{RunID: "r1"}, Logf: t.Logf}, Scenario: Upgrade(), simFaults: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u.during(ctx, x)
	if p := u.check(ctx, x); len(p) != 1 || !strings.Contains(p[0], "describe alarms") {
		t.Errorf("alarms not read after the deploy: %v, want the scenario failed naming it", p)
	}
}

// alarmsCW is a CloudWatch whose alarms a deploy replaces and whose metrics have no data, or,
// with value set, that value at the start of every query.
type alarmsCW struct {
	alarms []cwtypes.MetricAlarm
	value  *float64
}

func (c *alarmsCW) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		r := cwtypes.MetricDataResult{Id: q.Id, StatusCode: cwtypes.StatusCodeComplete}
		if c.value != nil {
			r.Timestamps, r.Values = []time.Time{aws.ToTime(in.StartTime)}, []float64{*c.value}
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	return out, nil
}

func (c *alarmsCW) DescribeAlarms(context.Context, *cloudwatch.DescribeAlarmsInput, ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	return &cloudwatch.DescribeAlarmsOutput{MetricAlarms: c.alarms}, nil
}

// TestEvalWatcherReload: after a reload the watcher evaluates, and judges silent, the alarms
// deployed now: not one the deploy removed, and one it added.
func TestEvalWatcherReload(t *testing.T) {
	alarm := func(name string) cwtypes.MetricAlarm {
		return cwtypes.MetricAlarm{AlarmName: aws.String("st-" + name + "-X"), Namespace: aws.String("resetnotify/st"),
			MetricName: aws.String(name), Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1),
			ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold, TreatMissingData: aws.String("notBreaching")}
	}
	cw := &alarmsCW{alarms: []cwtypes.MetricAlarm{alarm("Kept"), alarm("Gone")}}
	w, err := newEvalWatcher(context.Background(), cw, "st")
	if err != nil {
		t.Fatal(err)
	}
	silent := func() string {
		t.Helper()
		names, err := w.Silent(context.Background(), time.Unix(0, 0), time.Unix(600, 0))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(names, " ")
	}
	if got := silent(); got != "st-Gone-X st-Kept-X" {
		t.Fatalf("silent before the deploy: %q", got)
	}
	cw.alarms = []cwtypes.MetricAlarm{alarm("Kept"), alarm("Added")}
	if err := w.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := silent(); got != "st-Added-X st-Kept-X" {
		t.Errorf("silent after the deploy: %q, want the alarms deployed now", got)
	}
	if err := w.Poll(context.Background(), time.Unix(600, 0)); err != nil {
		t.Fatal(err)
	}
	if st := w.States(); len(st) != 2 || st["st-Gone-X"] != "" || st["st-Added-X"] == "" {
		t.Errorf("states after the deploy %v, want Kept and Added", st)
	}
}
