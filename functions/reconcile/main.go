// Command reconcile is the Lambda function on the reconcile queue. It builds the reconcile
// worker with worker.NewReconcilerFromConfig, which gives it the provider's lookup only: it can
// read the provider's view of an attempt but holds nothing that can send. Its IAM role has no
// send permission either.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/resetnotify/resetnotify/shared/app"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/worker"
)

func main() {
	if err := run(context.Background()); err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error("reconcile cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	w, err := worker.WiringFromEnv(ctx, config.NeedReconcile, true)
	if err != nil {
		return err
	}
	// A provider without a lookup API (End User Messaging SMS) reconciles through the receipts
	// that provider-events records; RECEIPTS_TABLE names them.
	if w.Receipts, err = app.NewReceiptReader(os.Getenv, w.AWS); err != nil {
		return err
	}
	r, err := worker.NewReconcilerFromConfig(ctx, w)
	if err != nil {
		return err
	}
	r.Log.Info("reconcile ready", "config", w.Config, "provider", r.Provider)
	lambda.Start(r.Handle)
	return nil
}
