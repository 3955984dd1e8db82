// Command intake is the Lambda function behind the HTTP API: POST, GET and DELETE
// /v1/notifications. It loads its configuration once at cold start, wires the adapters with
// package app and hands httpapi.Handler to the Lambda runtime.
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
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/httpapi"
	"github.com/resetnotify/resetnotify/shared/obs"
)

func main() {
	if err := run(context.Background()); err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error("intake cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.FromEnv(config.NeedIntake)
	if err != nil {
		return err
	}
	h, err := newHandler(ctx, cfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.Start(h.Handle)
	return nil
}

// newHandler builds the handler with the shared wiring (package app), which the local stack
// runs too.
func newHandler(ctx context.Context, cfg config.Config, out io.Writer) (*httpapi.Handler, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("intake: aws config: %w", err)
	}
	return app.NewIntakeHandler(ctx, cfg, awsCfg, out)
}
