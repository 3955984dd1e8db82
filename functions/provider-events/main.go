// Command provider-events is the Lambda function that takes SMS delivery receipts: AWS End User
// Messaging SMS events through the receipts SNS topic, and the simulator's webhook through the
// HTTP API route POST /v1/provider-events/simulator. One function serves both sources:
// receipts.Handler.Handle takes the raw payload and dispatches on its shape. It loads its
// configuration once at cold start with the shared wiring (package app).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/shared/app"
	"github.com/resetnotify/resetnotify/shared/obs"
)

func main() {
	if err := run(context.Background()); err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error("provider-events cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("provider-events: aws config: %w", err)
	}
	h, err := app.NewProviderEventsHandler(ctx, os.Getenv, awsCfg, os.Stdout)
	if err != nil {
		return err
	}
	lambda.Start(h.Handle)
	return nil
}
