// Command sweeper is the Lambda function run every minute by an EventBridge schedule. It
// builds the sweeper with worker.NewSweeperFromConfig; each run reads every shard of the due
// index and re-enqueues, expires or reclaims the overdue records.
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
		obs.NewLogger(os.Stderr, slog.LevelError).Error("sweeper cold start failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	w, err := worker.WiringFromEnv(ctx, config.NeedSweeper, true)
	if err != nil {
		return err
	}
	s, err := worker.NewSweeperFromConfig(ctx, w)
	if err != nil {
		return err
	}
	s.Log.Info("sweeper ready", "config", w.Config)
	lambda.Start(s.Handle)
	return nil
}
