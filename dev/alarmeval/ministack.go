package alarmeval

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// MiniStackAPI is a CloudWatch client that can also list metrics (*cloudwatch.Client).
type MiniStackAPI interface {
	CloudWatchAPI
	ListMetrics(ctx context.Context, in *cloudwatch.ListMetricsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.ListMetricsOutput, error)
}

// MiniStack wraps a client of MiniStack's CloudWatch so that a GetMetricData query with no
// dimensions returns, as in CloudWatch, the metric published with no dimension only.
// MiniStack pools every dimension set of the name instead; the wrapper subtracts the others
// (found with ListMetrics) for Sum and SampleCount, using SampleCount to tell a period with
// no datapoint of its own from one that sums to 0. A query with no dimensions and another
// statistic fails, rather than return a pooled value. Use it only with MiniStack: on AWS
// the subtraction would be wrong.
func MiniStack(cw MiniStackAPI) CloudWatchAPI { return miniStack{cw} }

type miniStack struct{ MiniStackAPI }

func (m miniStack) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	fixed := *in
	fixed.MetricDataQueries = nil
	type fix struct {
		id    string
		sum   bool
		parts []string // ids of the extra queries: pooled count, then each set's value and count
	}
	var fixes []fix
	for _, q := range in.MetricDataQueries {
		fixed.MetricDataQueries = append(fixed.MetricDataQueries, q)
		if q.MetricStat == nil || q.MetricStat.Metric == nil || len(q.MetricStat.Metric.Dimensions) > 0 {
			continue
		}
		stat := aws.ToString(q.MetricStat.Stat)
		metric := q.MetricStat.Metric
		listed, err := m.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: metric.Namespace, MetricName: metric.MetricName})
		if err != nil {
			return nil, fmt.Errorf("list metrics %s: %w", aws.ToString(metric.MetricName), err)
		}
		var others [][]types.Dimension
		for _, lm := range listed.Metrics {
			if len(lm.Dimensions) > 0 && aws.ToString(lm.MetricName) == aws.ToString(metric.MetricName) {
				others = append(others, lm.Dimensions)
			}
		}
		if len(others) == 0 {
			continue
		}
		if stat != "Sum" && stat != "SampleCount" {
			return nil, fmt.Errorf("alarmeval: MiniStack pools every dimension set of %s for a query with no dimensions; only Sum and SampleCount can be corrected, not %s",
				aws.ToString(metric.MetricName), stat)
		}
		id := aws.ToString(q.Id)
		f := fix{id: id, sum: stat == "Sum"}
		add := func(dims []types.Dimension, stat string) {
			qid := fmt.Sprintf("%s_ms%d", id, len(f.parts))
			f.parts = append(f.parts, qid)
			fixed.MetricDataQueries = append(fixed.MetricDataQueries, types.MetricDataQuery{Id: aws.String(qid), ReturnData: aws.Bool(true),
				MetricStat: &types.MetricStat{Metric: &types.Metric{Namespace: metric.Namespace, MetricName: metric.MetricName, Dimensions: dims},
					Period: q.MetricStat.Period, Stat: aws.String(stat), Unit: q.MetricStat.Unit}})
		}
		add(nil, "SampleCount")
		for _, d := range others {
			add(d, stat)
			add(d, "SampleCount")
		}
		fixes = append(fixes, f)
	}
	out, err := m.MiniStackAPI.GetMetricData(ctx, &fixed, opts...)
	if err != nil || len(fixes) == 0 {
		return out, err
	}
	byID := map[string]map[int64]float64{}
	for _, r := range out.MetricDataResults {
		s := map[int64]float64{}
		for i, ts := range r.Timestamps {
			if i < len(r.Values) {
				s[ts.Unix()] = r.Values[i]
			}
		}
		byID[aws.ToString(r.Id)] = s
	}
	extra := map[string]bool{}
	for _, f := range fixes {
		for _, p := range f.parts {
			extra[p] = true
		}
	}
	results := out.MetricDataResults[:0]
	for _, r := range out.MetricDataResults {
		id := aws.ToString(r.Id)
		if extra[id] {
			continue
		}
		for _, f := range fixes {
			if f.id != id {
				continue
			}
			count := byID[f.parts[0]]
			var ts []int64
			for t := range byID[id] {
				ts = append(ts, t)
			}
			r.Timestamps, r.Values = r.Timestamps[:0], r.Values[:0]
			for _, t := range sortedInts(ts) {
				v, c := byID[id][t], count[t]
				for i := 1; i+1 < len(f.parts); i += 2 {
					v -= byID[f.parts[i]][t]
					c -= byID[f.parts[i+1]][t]
				}
				if c <= 0 {
					continue // only the dimensioned metrics had a datapoint here
				}
				if !f.sum {
					v = c
				}
				r.Timestamps = append(r.Timestamps, unixTime(t))
				r.Values = append(r.Values, v)
			}
		}
		results = append(results, r)
	}
	out.MetricDataResults = results
	return out, nil
}
