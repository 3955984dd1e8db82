// Command audit is the Lambda function on the notifications table's stream: it writes one
// redacted, hash-chained audit entry per transition (see package audit). It loads its
// configuration once at cold start and hands audit.Handler to the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

func main() {
	if err := run(context.Background()); err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error("audit cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	h, err := newHandler(ctx, os.Getenv, os.Stdout)
	if err != nil {
		return err
	}
	lambda.Start(h.Handle)
	return nil
}

// newHandler wires the audit handler from the environment. The endpoint comes from the SDK's
// usual resolution, so AWS_ENDPOINT_URL_DYNAMODB points a local run at DynamoDB Local.
func newHandler(ctx context.Context, getenv func(string) string, out io.Writer) (*audit.Handler, error) {
	cfg, err := config.Load(getenv, config.NeedAuditTable)
	if err != nil {
		return nil, err
	}
	retention, err := audit.ParseRetention(getenv(audit.EnvRetentionDays))
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: aws config: %w", err)
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("audit ready", "audit_table", cfg.AuditTable, "retention_days", int(retention.Hours()/24))
	return &audit.Handler{
		Writer:          &audit.Writer{DB: awsclient.DynamoDB(awsCfg, ""), Table: cfg.AuditTable},
		Retention:       retention,
		Function:        lambdacontext.FunctionName,
		FunctionVersion: lambdacontext.FunctionVersion,
		Clock:           notify.SystemClock{},
		Log:             log,
		Metrics:         &obs.Metrics{W: out, Function: "audit"},
	}, nil
}
