// Command intake is the Lambda function behind the HTTP API: POST, GET and DELETE
// /v1/notifications. It loads its configuration once at cold start, wires the DynamoDB store,
// the sealing box, the destination fingerprinter and the dispatch queue into notify.Intake, and
// hands httpapi.Handler to the Lambda runtime.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dynamostore"
	"github.com/resetnotify/resetnotify/shared/httpapi"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/sqsqueue"
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

// newHandler wires the intake handler from cfg. Endpoints come from the SDK's usual resolution,
// so the standard AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS variables point a local run
// at DynamoDB Local and moto_server.
func newHandler(ctx context.Context, cfg config.Config, out io.Writer) (*httpapi.Handler, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("intake: aws config: %w", err)
	}
	var keys seal.KeySource
	if cfg.SealKMSKeyID != "" {
		keys = seal.NewKMSKeys(kms.NewFromConfig(awsCfg), cfg.SealKMSKeyID)
	} else if keys, err = seal.NewStaticKey(cfg.SealLocalKey); err != nil {
		return nil, fmt.Errorf("intake: %s: %w", config.EnvSealLocalKey, err)
	}
	hasher, err := seal.NewFingerprinter(cfg.DestinationPepper)
	if err != nil {
		return nil, fmt.Errorf("intake: %s: %w", config.EnvDestinationPepper, err)
	}
	in := &notify.Intake{
		Store:  dynamostore.New(awsclient.DynamoDB(awsCfg, ""), cfg.NotificationsTable),
		Sealer: seal.New(keys),
		Hasher: hasher,
		Queue:  sqsqueue.New(awsclient.SQS(awsCfg, ""), cfg.DispatchQueueURL),
		Clock:  notify.SystemClock{},
		Policy: cfg.Policy,
		NewID:  func() string { return ulid.Make().String() },
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("intake ready", "config", cfg)
	return httpapi.New(in, log, &obs.Metrics{W: out, Function: "intake"}), nil
}
