// Command digest is the Lambda function run every minute by an EventBridge schedule: it
// closes each audit period that has ended (plus a grace) with a signed digest item in the
// audit table (see package audit, "Digests"). It loads its configuration once at cold start
// and hands audit.Digester to the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/shared/app"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/obs"
)

func main() {
	if err := run(context.Background()); err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error("digest cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	d, err := newDigester(ctx, os.Getenv, os.Stdout)
	if err != nil {
		return err
	}
	lambda.Start(d.Handle)
	return nil
}

// newDigester builds the digest step with the shared wiring (package app), which the local
// stack runs too.
func newDigester(ctx context.Context, getenv func(string) string, out io.Writer) (*audit.Digester, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("digest: aws config: %w", err)
	}
	return app.NewDigester(getenv, awsCfg, out)
}
