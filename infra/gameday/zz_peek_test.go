package gameday

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
)

func TestZZPeek(t *testing.T) {
	ep := os.Getenv("PEEK_ENDPOINT")
	if ep == "" {
		t.Skip("PEEK_ENDPOINT unset")
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(ep) })
	now := time.Now().UTC()
	res := &Result{Name: BaselineScenario, Start: now.Add(-12 * time.Minute), End: now, Passed: true}
	if err := drawDashboard(context.Background(), cw, "resetnotify-e2e-resetnotify", res, "/tmp"); err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Widgets {
		t.Logf("%+v", w)
	}
	for _, e := range res.Errors {
		t.Log(e)
	}
}
