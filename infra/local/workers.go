package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// startSimulator starts a simulated SMS provider named provider (simulator, or simulator2 for
// the second provider of the chain) on a free loopback port; its delivery receipts go to the
// provider-events route at webhookURL. The first provider's fault mix and per-number rules
// come from RESETNOTIFY_SIM_MIX and RESETNOTIFY_SIM_RULES (the syntax of infra/smssim/cmd's -mix and
// -rules); by default, and always for the second, every message is accepted. Faults can also
// be set per number while it runs: POST <url>/control/faults {"to": "+1555...", "mode": "throttle"}.
func startSimulator(webhookURL, webhookToken, provider string) (*smssim.Server, error) {
	cfg := smssim.Config{
		Seed: time.Now().UnixNano(), DeliveryDelay: 2 * time.Second,
		WebhookURL: webhookURL, WebhookToken: webhookToken, Provider: provider,
	}
	if provider == config.SMSSimulator {
		var err error
		if cfg.Mix, err = smssim.ParseMix(os.Getenv("RESETNOTIFY_SIM_MIX")); err != nil {
			return nil, fmt.Errorf("RESETNOTIFY_SIM_MIX: %w", err)
		}
		if cfg.Rules, err = smssim.ParseRules(os.Getenv("RESETNOTIFY_SIM_RULES")); err != nil {
			return nil, fmt.Errorf("RESETNOTIFY_SIM_RULES: %w", err)
		}
	}
	sim := smssim.New(cfg)
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	if provider == config.SMSSimulator {
		// The stack sends to the primary's send port, which the suite can close to have
		// every connection refused (POST /control/connections on the simulator's address).
		if _, err := sim.StartSendPort("127.0.0.1:0"); err != nil {
			sim.Close()
			return nil, err
		}
	}
	return sim, nil
}

// twilioDeliveryDelay is how long after acceptance the Twilio simulator reports a message's
// final status: longer than a send's timeout (SMS_TIMEOUT, 5 s by default), so that the
// status callback of an attempt whose answer was lost arrives after dispatch has recorded it
// as unknown, as a late callback does.
const twilioDeliveryDelay = 8 * time.Second

// twilioListLag is how long the Twilio simulator leaves a message out of its message list:
// far past any visibility window, so that a client reading the list as "not found" would
// send twice (ours never reads it).
const twilioListLag = 10 * time.Minute

// startTwilioSimulator starts the simulator in its Twilio mode for account, its auth token
// and its API key ("<key SID>:<key secret>") on a free loopback port. Faults can be set per
// number as for the others.
func startTwilioSimulator(account, token, key string) (*smssim.Server, error) {
	keySID, keySecret, err := config.ParseTwilioAPIKey(key)
	if err != nil {
		return nil, err
	}
	sim := smssim.New(smssim.Config{
		Seed: time.Now().UnixNano(), DeliveryDelay: twilioDeliveryDelay, ListLag: twilioListLag,
		Provider: smssim.ProviderTwilio, TwilioAccountSID: account, TwilioAuthToken: token,
		TwilioAPIKeySID: keySID, TwilioAPIKeySecret: keySecret,
	})
	if _, err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return sim, nil
}

// pumpQueue receives batches from queueURL and hands them to h, as the SQS event source
// mapping src of template.yaml would (its batch size, partial batch failures), until ctx ends.
func pumpQueue(ctx context.Context, client *sqs.Client, queueURL string, src samtemplate.Source, h workercore.BatchHandler, log *slog.Logger) error {
	for ctx.Err() == nil {
		_, err := pump.Once(ctx, client, queueURL, h, pump.Options{
			MaxMessages: int32(src.BatchSize), WaitTime: time.Second, Region: emulator.Region,
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("queue poll failed", "queue", queueURL, "error", err)
			sleep(ctx, time.Second)
		}
	}
	return nil
}

// runSchedule invokes fn (the sweeper, the digest step) at the rate of the template's schedule
// src, as EventBridge would.
func runSchedule(ctx context.Context, src samtemplate.Source, sweep func(context.Context, events.EventBridgeEvent) error, log *slog.Logger) error {
	t := time.NewTicker(src.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			ev := events.EventBridgeEvent{DetailType: "Scheduled Event", Source: "aws.events", Time: now.UTC(), ID: fmt.Sprintf("local-%d", now.Unix())}
			if err := sweep(ctx, ev); err != nil && ctx.Err() == nil {
				log.Warn("scheduled run failed", "function", src.Function, "error", err)
			}
		}
	}
}
