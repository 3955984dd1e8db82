// Package providerevents assembles the provider-events function that takes SMS delivery
// receipts: AWS End User Messaging SMS events through the receipts SNS topic, Sinch's delivery
// reports through the HTTP API route POST /v1/provider-events/sinch, and the simulator's
// webhook through POST /v1/provider-events/simulator. One function's code serves every
// source (template.yaml gives each webhook a function of its own, with its own token):
// providerevents.Handler.Handle takes the raw payload and dispatches on its shape and route.
package providerevents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/secretparam"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/wire"
)

// Function is the provider-events function.
var Function = wire.Function[*providerevents.Handler]{Name: "provider-events", New: New, Handler: func(h *providerevents.Handler) any { return h.Handle }}

// New builds the provider-events handler from env: the receipts table (RECEIPTS_TABLE,
// RECEIPT_RETENTION_DAYS), the notifications store and its by_notification index
// (NOTIFICATIONS_TABLE), the simulator webhook's token (SIMULATOR_WEBHOOK_TOKEN locally,
// else the SSM SecureString SIMULATOR_WEBHOOK_TOKEN_PARAM, read once here), the Sinch
// webhook's (SINCH_CALLBACK_TOKEN, else SINCH_CALLBACK_TOKEN_PARAM, likewise), Twilio's auth
// tokens and callback URL (TWILIO_AUTH_TOKEN[_PARAM], TWILIO_SECONDARY_AUTH_TOKEN[_PARAM],
// TWILIO_CALLBACK_URL), and the End
// User Messaging configuration set whose events it applies (SMS_CONFIGURATION_SET).
func New(ctx context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*providerevents.Handler, error) {
	cfg, err := config.Load(env, config.NeedNotificationsTable)
	rcfg, rerr := config.LoadReceipts(env, true)
	if err := errors.Join(err, rerr); err != nil {
		return nil, err
	}
	if err := readTokens(ctx, ssm.NewFromConfig(awsCfg), &rcfg); err != nil {
		return nil, err
	}
	db := awsclient.DynamoDB(awsCfg, "")
	notifications := dynamostore.New(db, cfg.NotificationsTable)
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("provider-events ready", "notifications_table", cfg.NotificationsTable, "receipts", rcfg.String())
	return &providerevents.Handler{
		Recorder: &providerevents.Recorder{
			Receipts:      providerevents.NewStore(db, rcfg.Table, rcfg.Retention, notify.SystemClock{}),
			Keys:          notifications,
			Notifications: notifications,
			Clock:         notify.SystemClock{},
			Log:           log,
			Metrics:       &obs.Metrics{W: out, Function: "provider-events", Namespace: cfg.MetricsNamespace},
			// The End User Messaging events of this stack's configuration set only.
			ConfigurationSet: strings.TrimSpace(env(config.EnvSMSConfigurationSet)),
		},
		WebhookToken:      rcfg.WebhookToken,
		SinchToken:        rcfg.SinchToken,
		TwilioTokens:      rcfg.TwilioTokens,
		TwilioCallbackURL: rcfg.TwilioCallbackURL,
		// During a rotation of the Sinch callback token, the one being retired.
		SinchPreviousToken: rcfg.SinchPreviousToken,
	}, nil
}

// readTokens reads the webhooks' tokens that rcfg names in SSM but does not hold. A webhook
// given neither stays off. None is ever logged.
func readTokens(ctx context.Context, api secretparam.API, rcfg *config.Receipts) error {
	for _, t := range []struct {
		token *[]byte
		param string
	}{{&rcfg.WebhookToken, rcfg.WebhookTokenParam}, {&rcfg.SinchToken, rcfg.SinchTokenParam}, {&rcfg.SinchPreviousToken, rcfg.SinchPreviousTokenParam}} {
		v, err := secretparam.Resolve(ctx, api, *t.token, t.param, config.MinWebhookTokenLen)
		switch {
		case errors.Is(err, secretparam.ErrUnset):
		case err != nil:
			return fmt.Errorf("wire.provider events: %w", err)
		default:
			*t.token = v
		}
	}
	// Twilio's auth tokens: the current one and, during a rotation, the secondary.
	for _, param := range rcfg.TwilioTokenParams {
		v, err := secretparam.Read(ctx, api, param, config.MinTwilioAuthTokenLen)
		if err != nil {
			return fmt.Errorf("wire.provider events: %w", err)
		}
		rcfg.TwilioTokens = append(rcfg.TwilioTokens, v)
	}
	rcfg.TwilioTokenParams = nil
	return nil
}
