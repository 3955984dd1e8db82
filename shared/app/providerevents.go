package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dynamostore"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/receipts"
	"github.com/resetnotify/resetnotify/shared/secretparam"
	"github.com/resetnotify/resetnotify/shared/sms"
)

// NewProviderEventsHandler wires the provider-events handler: the receipts table
// (RECEIPTS_TABLE, RECEIPT_RETENTION_DAYS), the notifications store and its by_notification
// index (NOTIFICATIONS_TABLE), and the simulator webhook's token (SIMULATOR_WEBHOOK_TOKEN
// locally, else the SSM SecureString SIMULATOR_WEBHOOK_TOKEN_PARAM, read once here), all read
// through getenv. Logs and metrics go to out.
func NewProviderEventsHandler(ctx context.Context, getenv func(string) string, awsCfg aws.Config, out io.Writer) (*receipts.Handler, error) {
	cfg, err := config.Load(getenv, config.NeedNotificationsTable)
	rcfg, rerr := receipts.ConfigFromEnv(getenv, true)
	if err := errors.Join(err, rerr); err != nil {
		return nil, err
	}
	if len(rcfg.WebhookToken) == 0 && rcfg.WebhookTokenParam != "" {
		token, err := secretparam.Read(ctx, ssm.NewFromConfig(awsCfg), rcfg.WebhookTokenParam, receipts.MinWebhookTokenLen)
		if err != nil {
			return nil, fmt.Errorf("app.provider events: %w", err)
		}
		rcfg.WebhookToken = token
	}
	db := awsclient.DynamoDB(awsCfg, "")
	notifications := dynamostore.New(db, cfg.NotificationsTable)
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("provider-events ready", "notifications_table", cfg.NotificationsTable, "receipts", rcfg.String())
	return &receipts.Handler{
		Recorder: &receipts.Recorder{
			Receipts:      receipts.NewStore(db, rcfg.Table, rcfg.Retention, notify.SystemClock{}),
			Keys:          notifications,
			Notifications: notifications,
			Clock:         notify.SystemClock{},
			Log:           log,
			Metrics:       &obs.Metrics{W: out, Function: "provider-events"},
		},
		WebhookToken: rcfg.WebhookToken,
	}, nil
}

// NewReceiptReader returns the receipts table (RECEIPTS_TABLE, read through getenv) as an
// sms.ReceiptReader for the reconcile worker of a provider without a lookup API (AWS End User
// Messaging SMS), or nil when RECEIPTS_TABLE is not set. The result is a true nil interface
// then, so sms.ReceiptLookup reports its lookups as inconclusive rather than failing.
func NewReceiptReader(getenv func(string) string, awsCfg aws.Config) (sms.ReceiptReader, error) {
	rcfg, err := receipts.ConfigFromEnv(getenv, false)
	if err != nil {
		return nil, fmt.Errorf("app.receipt reader: %w", err)
	}
	if rcfg.Table == "" {
		return nil, nil
	}
	return receipts.NewStore(awsclient.DynamoDB(awsCfg, ""), rcfg.Table, rcfg.Retention, notify.SystemClock{}), nil
}
