// Command audit-replay is the Lambda function on the audit function's on-failure queue: each
// message names a stream batch the audit function gave up on, and the function re-reads it
// from the stream and writes the missing audit entries, or, once the stream no longer holds
// the records, a reconstructed gap entry per affected notification (see audit.Replayer).
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
		obs.NewLogger(os.Stderr, slog.LevelError).Error("audit-replay cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	r, err := newReplayer(ctx, os.Getenv, os.Stdout)
	if err != nil {
		return err
	}
	lambda.Start(r.Handle)
	return nil
}

// newReplayer builds the replay with the shared wiring (package app), which the local stack
// runs too.
func newReplayer(ctx context.Context, getenv func(string) string, out io.Writer) (*audit.Replayer, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("audit-replay: aws config: %w", err)
	}
	return app.NewAuditReplayer(getenv, awsCfg, lambdacontext.FunctionName, lambdacontext.FunctionVersion, out)
}
