package alarmeval_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/resetnotify/resetnotify/infra/alarmeval"
)

// poolingCW is fakeCW as MiniStack answers a query with no dimensions: every dimension set of
// the name pooled (Sum and SampleCount added up).
type poolingCW struct {
	*fakeCW
	sets []map[string]string
}

func (p poolingCW) ListMetrics(_ context.Context, in *cloudwatch.ListMetricsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.ListMetricsOutput, error) {
	out := &cloudwatch.ListMetricsOutput{}
	for _, s := range p.sets {
		m := types.Metric{Namespace: in.Namespace, MetricName: in.MetricName}
		for k, v := range s {
			m.Dimensions = append(m.Dimensions, types.Dimension{Name: aws.String(k), Value: aws.String(v)})
		}
		out.Metrics = append(out.Metrics, m)
	}
	return out, nil
}

func (p poolingCW) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out, err := p.fakeCW.GetMetricData(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	for i, q := range in.MetricDataQueries {
		if len(q.MetricStat.Metric.Dimensions) > 0 {
			continue
		}
		pooled := map[time.Time]float64{}
		for _, s := range p.sets {
			for at, v := range p.points[key(ns, aws.ToString(q.MetricStat.Metric.MetricName), s, aws.ToString(q.MetricStat.Stat))] {
				pooled[at] += v
			}
		}
		r := &out.MetricDataResults[i]
		r.Timestamps, r.Values = nil, nil
		for _, at := range []time.Time{t0.Add(-3 * time.Minute), t0.Add(-2 * time.Minute), t0.Add(-time.Minute)} {
			if v, ok := pooled[at]; ok {
				r.Timestamps, r.Values = append(r.Timestamps, at), append(r.Values, v)
			}
		}
	}
	return out, nil
}

// TestMiniStackNoDimensions: DeliveryFastBurnAlarm reads WorkerExpirations with no dimension, which
// the code also publishes by Function; on MiniStack the wrapper takes the Function set out.
func TestMiniStackNoDimensions(t *testing.T) {
	f := &fakeCW{}
	none, byFn := map[string]string{}, map[string]string{"Function": "sweeper"}
	for _, s := range []map[string]string{none, byFn} {
		f.put(ns, "WorkerExpirations", s, "Sum", t0.Add(-3*time.Minute), 3)
		f.put(ns, "WorkerExpirations", s, "SampleCount", t0.Add(-3*time.Minute), 3)
	}
	// A period where only the Function set has a datapoint: no datapoint with no dimension.
	f.put(ns, "WorkerExpirations", byFn, "Sum", t0.Add(-time.Minute), 0)
	f.put(ns, "WorkerExpirations", byFn, "SampleCount", t0.Add(-time.Minute), 1)
	cw := poolingCW{fakeCW: f, sets: []map[string]string{none, byFn}}
	a := alarmeval.Alarm{Name: "expiry", Namespace: ns, MetricName: "WorkerExpirations", Statistic: "Sum", Period: time.Minute,
		EvaluationPeriods: 3, DatapointsToAlarm: 1, ComparisonOperator: types.ComparisonOperatorGreaterThanThreshold, Threshold: 5, TreatMissingData: alarmeval.TreatNotBreaching}
	if s, _, err := a.Evaluate(context.Background(), cw, t0); err != nil || s != alarmeval.StateAlarm {
		t.Fatalf("pooled, unwrapped: %s %v; want the false ALARM this wrapper exists for (6 > 5)", s, err)
	}
	s, reason, err := a.Evaluate(context.Background(), alarmeval.MiniStack(cw), t0)
	if err != nil || s != alarmeval.StateOK {
		t.Fatalf("wrapped: %s %v, want OK (3 expirations)", s, err)
	}
	if want := "3 (04/12/26 16:57:00)]"; !contains(reason, want) || contains(reason, "16:59") {
		t.Errorf("reason %q, want only the datapoint %s", reason, want)
	}
	a.Statistic = "Maximum"
	if _, _, err := a.Evaluate(context.Background(), alarmeval.MiniStack(cw), t0); err == nil {
		t.Error("Maximum with no dimensions on MiniStack: no error")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
