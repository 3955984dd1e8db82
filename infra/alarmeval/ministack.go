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

// fix is a query with no dimensions whose answer the wrapper corrects.
type fix struct {
	id  string
	sum bool
	// parts are the ids of the extra queries: the pooled SampleCount, then each other
	// dimension set's value and SampleCount.
	parts []string
}

func (m miniStack) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	fixed := *in
	fixed.MetricDataQueries = nil
	var fixes []fix
	for _, q := range in.MetricDataQueries {
		fixed.MetricDataQueries = append(fixed.MetricDataQueries, q)
		if q.MetricStat == nil || q.MetricStat.Metric == nil || len(q.MetricStat.Metric.Dimensions) > 0 {
			continue
		}
		f, extra, err := m.plan(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(f.parts) > 0 {
			fixes = append(fixes, f)
			fixed.MetricDataQueries = append(fixed.MetricDataQueries, extra...)
		}
	}
	out, err := m.MiniStackAPI.GetMetricData(ctx, &fixed, opts...)
	if err != nil || len(fixes) == 0 {
		return out, err
	}
	apply(out, fixes)
	return out, nil
}

// plan returns the correction of q, a query with no dimensions, and the extra queries it
// needs: none when the name has no other dimension set.
func (m miniStack) plan(ctx context.Context, q types.MetricDataQuery) (fix, []types.MetricDataQuery, error) {
	stat := aws.ToString(q.MetricStat.Stat)
	metric := q.MetricStat.Metric
	listed, err := m.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: metric.Namespace, MetricName: metric.MetricName})
	if err != nil {
		return fix{}, nil, fmt.Errorf("list metrics %s: %w", aws.ToString(metric.MetricName), err)
	}
	var others [][]types.Dimension
	for _, lm := range listed.Metrics {
		if len(lm.Dimensions) > 0 && aws.ToString(lm.MetricName) == aws.ToString(metric.MetricName) {
			others = append(others, lm.Dimensions)
		}
	}
	if len(others) == 0 {
		return fix{}, nil, nil
	}
	if stat != "Sum" && stat != "SampleCount" {
		return fix{}, nil, fmt.Errorf("alarmeval: MiniStack pools every dimension set of %s for a query with no dimensions; only Sum and SampleCount can be corrected, not %s",
			aws.ToString(metric.MetricName), stat)
	}
	f := fix{id: aws.ToString(q.Id), sum: stat == "Sum"}
	var extra []types.MetricDataQuery
	add := func(dims []types.Dimension, stat string) {
		qid := fmt.Sprintf("%s_ms%d", f.id, len(f.parts))
		f.parts = append(f.parts, qid)
		extra = append(extra, types.MetricDataQuery{Id: aws.String(qid), ReturnData: aws.Bool(true),
			MetricStat: &types.MetricStat{Metric: &types.Metric{Namespace: metric.Namespace, MetricName: metric.MetricName, Dimensions: dims},
				Period: q.MetricStat.Period, Stat: aws.String(stat), Unit: q.MetricStat.Unit}})
	}
	add(nil, "SampleCount")
	for _, d := range others {
		add(d, stat)
		add(d, "SampleCount")
	}
	return f, extra, nil
}

// apply subtracts the other dimension sets from each fixed result, drops the periods where
// nothing was published without dimensions, and removes the extra results.
func apply(out *cloudwatch.GetMetricDataOutput, fixes []fix) {
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
	extra, fixOf := map[string]bool{}, map[string]fix{}
	for _, f := range fixes {
		fixOf[f.id] = f
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
		if f, ok := fixOf[id]; ok {
			r.Timestamps, r.Values = nil, nil
			for _, t := range sortedKeys(byID[id]) {
				v, c := byID[id][t], byID[f.parts[0]][t]
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
}
