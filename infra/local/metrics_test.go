package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// checkMetrics reads, at the AWS_ENDPOINT_URL_CLOUDWATCH make local exports, what the
// functions' EMF lines became: intake's Requests by route and status (at least admitted, all
// 202s of the run), and metrics of the workers under the RIE (dispatch's).
func checkMetrics(t *testing.T, exports []string, admitted int, logs func() string) {
	t.Helper()
	var endpoint string
	for _, kv := range exports {
		if v, ok := strings.CutPrefix(kv, "AWS_ENDPOINT_URL_CLOUDWATCH="); ok {
			endpoint = v
		}
	}
	if endpoint == "" {
		t.Fatalf("make local exports no AWS_ENDPOINT_URL_CLOUDWATCH: %v", exports)
	}
	cfg := aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()}
	cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(endpoint) })
	ctx := context.Background()
	now := time.Now()
	var sum float64
	var dispatch bool
	for deadline := now.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		out, err := cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now.Add(time.Hour)),
			MetricDataQueries: []types.MetricDataQuery{{Id: aws.String("r"), MetricStat: &types.MetricStat{Metric: &types.Metric{
				Namespace: aws.String(obs.Namespace), MetricName: aws.String(obs.MetricRequests), Dimensions: []types.Dimension{
					{Name: aws.String(obs.DimFunction), Value: aws.String("intake")},
					{Name: aws.String(obs.DimRoute), Value: aws.String("POST /v1/notifications")},
					{Name: aws.String(obs.DimStatus), Value: aws.String("202")}}},
				Period: aws.Int32(3600), Stat: aws.String("Sum")}}}})
		if err != nil {
			t.Fatal(err)
		}
		sum = 0
		for _, v := range out.MetricDataResults[0].Values {
			sum += v
		}
		listed, err := cw.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: aws.String(obs.Namespace),
			Dimensions: []types.DimensionFilter{{Name: aws.String(obs.DimFunction), Value: aws.String("dispatch")}}})
		if err != nil {
			t.Fatal(err)
		}
		dispatch = len(listed.Metrics) > 0
		if sum >= float64(admitted) && dispatch {
			return
		}
	}
	t.Errorf("CloudWatch at %s: intake's 202 Requests sum to %v, want at least %d; dispatch's metrics listed: %v\n%s",
		endpoint, sum, admitted, dispatch, tail(logs()))
}
