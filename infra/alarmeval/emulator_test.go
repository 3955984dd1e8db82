package alarmeval_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/resetnotify/resetnotify/infra/alarmeval"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// The emulator tests run against the stack infra/emulator/emulator.sh deploys to MiniStack, with the
// EMF bridge (infra/emfbridge/cmd) it starts: make emulator-e2e runs them after the black-box suite.
// RESETNOTIFY_E2E_STACK names the stack, AWS_ENDPOINT_URL the emulator, RESETNOTIFY_E2E_API
// its API.
type emulatorStack struct {
	name, api string
	cfg       aws.Config
	cw        *cloudwatch.Client
	logs      *cloudwatchlogs.Client
}

func emulator(t *testing.T) emulatorStack {
	t.Helper()
	name := os.Getenv("RESETNOTIFY_E2E_STACK")
	if name == "" || os.Getenv("AWS_ENDPOINT_URL") == "" {
		if os.Getenv("RESETNOTIFY_E2E") == "required" {
			t.Fatal("RESETNOTIFY_E2E=required but RESETNOTIFY_E2E_STACK or AWS_ENDPOINT_URL is not set")
		}
		t.Skip("no emulator stack (RESETNOTIFY_E2E_STACK, AWS_ENDPOINT_URL): make emulator-e2e runs this test against MiniStack")
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return emulatorStack{name: name, api: os.Getenv("RESETNOTIFY_E2E_API"), cfg: cfg, cw: cloudwatch.NewFromConfig(cfg), logs: cloudwatchlogs.NewFromConfig(cfg)}
}

// physical returns the physical ID of the stack's resource id.
func (s emulatorStack) physical(t *testing.T, id string) string {
	t.Helper()
	out, err := cloudformation.NewFromConfig(s.cfg).DescribeStackResource(context.Background(), &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(s.name), LogicalResourceId: aws.String(id)})
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	return aws.ToString(out.StackResourceDetail.PhysicalResourceId)
}

// logAsFunction writes lines to the function's log group, in a stream of its own, as Lambda
// writes a function's output.
func (s emulatorStack) logAsFunction(t *testing.T, function string, lines []string) {
	t.Helper()
	ctx := context.Background()
	group := "/aws/lambda/" + function
	_, err := s.logs.CreateLogGroup(ctx, &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(group)})
	var exists *logtypes.ResourceAlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		t.Fatal(err)
	}
	stream := "alarmeval-test/" + rand.Text()
	if _, err := s.logs.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	var events []logtypes.InputLogEvent
	for _, l := range lines {
		events = append(events, logtypes.InputLogEvent{Message: aws.String(l), Timestamp: aws.Int64(now)})
	}
	if _, err := s.logs.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream), LogEvents: events}); err != nil {
		t.Fatal(err)
	}
}

// sum returns the Sum of the stack's metric over [from, to) and whether it has any datapoint.
func (s emulatorStack) sum(t *testing.T, name string, dims map[string]string, from, to time.Time) (float64, bool) {
	t.Helper()
	return s.sumIn(t, obs.StackNamespace(s.name), name, dims, from, to)
}

// sumIn is sum for a metric of namespace ns.
func (s emulatorStack) sumIn(t *testing.T, ns, name string, dims map[string]string, from, to time.Time) (float64, bool) {
	t.Helper()
	var dl []types.Dimension
	for k, v := range dims {
		dl = append(dl, types.Dimension{Name: aws.String(k), Value: aws.String(v)})
	}
	out, err := s.cw.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{StartTime: aws.Time(from), EndTime: aws.Time(to),
		MetricDataQueries: []types.MetricDataQuery{{Id: aws.String("m"), MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String(ns), MetricName: aws.String(name), Dimensions: dl},
			Period: aws.Int32(60), Stat: aws.String("Sum")}}}})
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, v := range out.MetricDataResults[0].Values {
		total += v
	}
	return total, len(out.MetricDataResults[0].Values) > 0
}

// waitSum waits until the metric's Sum over [from, to) reaches want.
func (s emulatorStack) waitSum(t *testing.T, name string, dims map[string]string, from, to time.Time, want float64) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		got, _ := s.sum(t, name, dims, from, to)
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %v over [%s, %s): Sum %v after 45 s, want %v: the EMF lines did not become metrics (the bridge's log is emfbridge.log in infra/emulator/emulator.sh's work directory)",
				name, dims, from.Format(time.TimeOnly), to.Format(time.TimeOnly), got, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestEmulatorFunctionMetrics: a request to the deployed intake function becomes its Requests
// metric in the emulator, by route and status, as get-metric-data reads it: the bridge tails
// what MiniStack logs of the function's real bootstrap.
func TestEmulatorFunctionMetrics(t *testing.T) {
	s := emulator(t)
	if s.api == "" {
		t.Fatal("RESETNOTIFY_E2E_API is not set")
	}
	dims := map[string]string{"Function": "intake", "Route": "GET /v1/notifications/{key}", "Status": "404"}
	from := time.Now().Truncate(time.Minute).Add(-time.Minute)
	before, _ := s.sum(t, "Requests", dims, from, from.Add(time.Hour))

	req, err := http.NewRequest(http.MethodGet, s.api+"/v1/notifications/alarmeval-"+strings.ToLower(rand.Text()), nil)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := s.cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	empty := sha256.Sum256(nil)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(empty[:]), "execute-api", s.cfg.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET an unknown notification: %d, want 404", resp.StatusCode)
	}
	s.waitSum(t, "Requests", dims, from, from.Add(time.Hour), before+1)
	// Its latency too, with the unit the line carries.
	if _, ok := s.sum(t, "Latency", dims, from, from.Add(time.Hour)); !ok {
		t.Error("no Latency datapoint beside the Requests one")
	}
}

// TestEmulatorPlatformMetrics: the platform's own metrics exist for every invocation path, not
// only the Invoke API, so that the template's AWS/Lambda and AWS/SQS alarms have data on the
// emulator (infra/emulator/ministack_platform.py): dispatch, invoked by its queue's mapping, has
// Invocations and Errors; the audit function, invoked by the stream's, an IteratorAge; the
// dispatch queue NumberOfMessagesSent and, within a minute, ApproximateNumberOfMessagesVisible.
// It runs after the black-box suite, whose requests are the traffic.
func TestEmulatorPlatformMetrics(t *testing.T) {
	s := emulator(t)
	from, to := time.Now().Add(-time.Hour).Truncate(time.Minute), time.Now().Add(time.Minute)
	dispatch := map[string]string{"FunctionName": s.physical(t, "DispatchFunction")}
	if n, _ := s.sumIn(t, "AWS/Lambda", "Invocations", dispatch, from, to); n == 0 {
		t.Errorf("AWS/Lambda Invocations %v: no datapoint for the function the dispatch queue's mapping invokes", dispatch)
	}
	if _, ok := s.sumIn(t, "AWS/Lambda", "Errors", dispatch, from, to); !ok {
		t.Errorf("AWS/Lambda Errors %v: no datapoint (an invocation without error is a 0)", dispatch)
	}
	audit := map[string]string{"FunctionName": s.physical(t, "AuditFunction")}
	if _, ok := s.sumIn(t, "AWS/Lambda", "IteratorAge", audit, from, to); !ok {
		t.Errorf("AWS/Lambda IteratorAge %v: no datapoint for the function the stream's mapping invokes", audit)
	}
	queue := s.physical(t, "DispatchQueue")
	queue = queue[strings.LastIndex(queue, "/")+1:]
	if n, _ := s.sumIn(t, "AWS/SQS", "NumberOfMessagesSent", map[string]string{"QueueName": queue}, from, to); n == 0 {
		t.Errorf("AWS/SQS NumberOfMessagesSent of %s: none, after the suite's admissions", queue)
	}
	deadline := time.Now().Add(75 * time.Second)
	for {
		if _, ok := s.sumIn(t, "AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]string{"QueueName": queue}, from, time.Now().Add(time.Minute)); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("AWS/SQS ApproximateNumberOfMessagesVisible of %s: no datapoint after 75 s (published every minute)", queue)
		}
		time.Sleep(5 * time.Second)
	}
}

// TestEmulatorPrefixVelocityAlarm feeds the EMF lines the intake function writes for
// prefix-velocity refusals (obs.Metrics.Refusal, the code's own emitter) through the intake
// function's log group, the bridge and MiniStack, and evaluates the deployed
// PrefixVelocityAlarm, loaded with its full definition from DescribeAlarms: ALARM once the
// minute of the refusals has ended, OK again once that datapoint has left the evaluation
// range. The lines are stamped in a minute an hour ago, when the stack had no traffic, so that
// the verdicts are the test's own whatever the black-box suite did; the evaluator is asked at
// the times in question.
func TestEmulatorPrefixVelocityAlarm(t *testing.T) {
	s := emulator(t)
	ctx := context.Background()
	cw := alarmeval.MiniStack(s.cw)
	alarms, err := alarmeval.LoadDeployed(ctx, cw, s.name+"-")
	if err != nil {
		t.Fatal(err)
	}
	var alarm alarmeval.Alarm
	byID := map[string]bool{}
	for _, a := range alarms {
		byID[alarmeval.LogicalID(a.Name, s.name)] = true
		if alarmeval.LogicalID(a.Name, s.name) == "PrefixVelocityAlarm" {
			alarm = a
		}
	}
	if want := templateAlarmCount(t); len(alarms) != want || !byID["DigestLagAlarm"] {
		t.Fatalf("%d alarms deployed (%v), want the template's %d", len(alarms), byID, want)
	}
	// The full definition, as the template declares it: MiniStack's DescribeAlarms has it.
	want := alarmeval.Alarm{Name: alarm.Name, Namespace: obs.StackNamespace(s.name), MetricName: "Refusals",
		Dimensions: map[string]string{"Function": "intake", "Reason": "prefix_velocity"}, Statistic: "Sum", Period: time.Minute,
		EvaluationPeriods: 1, ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, Threshold: 0,
		TreatMissingData: alarmeval.TreatNotBreaching, State: alarmeval.StateInsufficientData}
	if fmt.Sprint(alarm) != fmt.Sprint(want) {
		t.Fatalf("deployed PrefixVelocityAlarm\n %+v\nwant\n %+v", alarm, want)
	}

	minute := time.Now().Add(-time.Hour).Truncate(time.Minute)
	if got, ok := s.sum(t, "Refusals", alarm.Dimensions, minute.Add(-5*time.Minute), minute.Add(5*time.Minute)); ok {
		t.Fatalf("the stack already has prefix-velocity refusals around %s (%v): the test needs a quiet minute", minute, got)
	}
	var buf bytes.Buffer
	m := &obs.Metrics{W: &buf, Function: "intake", Namespace: obs.StackNamespace(s.name), Now: func() time.Time { return minute.Add(20 * time.Second) }}
	for range 3 {
		m.Refusal("prefix_velocity", "JM")
	}
	// A refusal of another reason, in the minute after: not this alarm's metric.
	m.Now = func() time.Time { return minute.Add(80 * time.Second) }
	m.Refusal("destination_rate", "JM")
	s.logAsFunction(t, s.physical(t, "IntakeFunction"), strings.Split(strings.TrimSpace(buf.String()), "\n"))
	s.waitSum(t, "Refusals", alarm.Dimensions, minute, minute.Add(time.Minute), 3)
	s.waitSum(t, "Refusals", map[string]string{"Function": "intake", "Reason": "destination_rate"}, minute, minute.Add(2*time.Minute), 1)

	w := alarmeval.NewWatcher(cw, []alarmeval.Alarm{alarm})
	for _, at := range []time.Duration{30 * time.Second, 59 * time.Second, time.Minute, 2 * time.Minute, 3*time.Minute + 59*time.Second, 4 * time.Minute} {
		if err := w.Poll(ctx, minute.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, tr := range w.Transitions() {
		got = append(got, fmt.Sprintf("%s->%s at +%s", tr.From, tr.To, tr.At.Sub(minute)))
	}
	wantTr := []string{"INSUFFICIENT_DATA->OK at +30s", "OK->ALARM at +1m0s", "ALARM->OK at +4m0s"}
	if strings.Join(got, "; ") != strings.Join(wantTr, "; ") {
		t.Errorf("transitions %q, want %q", got, wantTr)
	}
	t.Logf("PrefixVelocityAlarm: %s", strings.Join(got, "; "))
}

// TestEmulatorMiniStackEvaluator records why the game day does not read MiniStack's own alarm
// states: on an alarm of its own (a namespace of this run), MiniStack's evaluator fires on a
// datapoint of another dimension set, and leaves a notBreaching alarm in INSUFFICIENT_DATA
// without data, where CloudWatch (and this package) says OK.
func TestEmulatorMiniStackEvaluator(t *testing.T) {
	s := emulator(t)
	ctx := context.Background()
	ns := "alarmeval-probe/" + rand.Text()
	name := "alarmeval-probe-" + rand.Text()
	put := &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name), Namespace: aws.String(ns), MetricName: aws.String("Refusals"),
		Dimensions: []types.Dimension{{Name: aws.String("Reason"), Value: aws.String("prefix_velocity")}}, Statistic: types.StatisticSum,
		Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(0), ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold,
		TreatMissingData: aws.String("notBreaching")}
	if _, err := s.cw.PutMetricAlarm(ctx, put); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.cw.DeleteAlarms(context.Background(), &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{name}})
	})
	state := func() (types.StateValue, alarmeval.Alarm) {
		out, err := s.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
		if err != nil || len(out.MetricAlarms) != 1 {
			t.Fatalf("describe %s: %v", name, err)
		}
		return out.MetricAlarms[0].StateValue, alarmeval.FromMetricAlarm(out.MetricAlarms[0])
	}
	ministack, a := state()
	ours, _, err := a.Evaluate(ctx, s.cw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("no data: MiniStack %s, alarmeval %s", ministack, ours)
	if ours != alarmeval.StateOK {
		t.Errorf("alarmeval without data, notBreaching: %s, want OK", ours)
	}
	now := time.Now()
	_, err = s.cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String(ns), MetricData: []types.MetricDatum{{
		MetricName: aws.String("Refusals"), Dimensions: []types.Dimension{{Name: aws.String("Reason"), Value: aws.String("destination_rate")}},
		Value: aws.Float64(5), Unit: types.StandardUnitCount, Timestamp: aws.Time(now)}}})
	if err != nil {
		t.Fatal(err)
	}
	ministack, a = state()
	ours, _, err = a.Evaluate(ctx, s.cw, now.Truncate(time.Minute).Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a refusal of another reason: MiniStack %s, alarmeval %s", ministack, ours)
	if ours != alarmeval.StateOK {
		t.Errorf("alarmeval on another dimension set's datapoint: %s, want OK", ours)
	}
	if ministack != types.StateValueAlarm {
		t.Errorf("MiniStack's own state %s, want the ALARM of its evaluator, which pools dimension sets: if it now respects them, revisit the package doc", ministack)
	}
}

// templateAlarmCount is how many metric and composite alarms template.yaml declares (none of
// them under a condition, so the emulator stack deploys every one).
func templateAlarmCount(t *testing.T) int {
	t.Helper()
	tmpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for id, r := range tmpl.Resources {
		if r.Type == "AWS::CloudWatch::Alarm" || r.Type == "AWS::CloudWatch::CompositeAlarm" {
			if r.Condition != "" {
				t.Fatalf("%s is deployed only under %s: count it by the stack's parameters", id, r.Condition)
			}
			n++
		}
	}
	return n
}
