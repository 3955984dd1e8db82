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

	"github.com/resetnotify/resetnotify/shared/app"
	"github.com/resetnotify/resetnotify/shared/audit"
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

// newHandler builds the handler with the shared wiring (package app), which the local stack
// runs too.
func newHandler(ctx context.Context, getenv func(string) string, out io.Writer) (*audit.Handler, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit: aws config: %w", err)
	}
	return app.NewAuditHandler(ctx, getenv, awsCfg, lambdacontext.FunctionName, lambdacontext.FunctionVersion, out)
}
