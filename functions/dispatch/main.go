// Command dispatch is the Lambda function on the dispatch queue. It loads its configuration
// once at cold start, builds the dispatch worker with worker.NewDispatcherFromConfig (the same
// wiring the local stack uses) and hands its SQS handler, which reports partial batch
// failures, to the Lambda runtime.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/worker"
)

func main() {
	if err := run(context.Background()); err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error("dispatch cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	w, err := worker.WiringFromEnv(ctx, config.NeedDispatch, true)
	if err != nil {
		return err
	}
	d, err := worker.NewDispatcherFromConfig(ctx, w)
	if err != nil {
		return err
	}
	d.Log.Info("dispatch ready", "config", w.Config, "provider", d.Provider)
	lambda.Start(d.Handle)
	return nil
}
