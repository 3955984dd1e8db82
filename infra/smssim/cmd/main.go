// Command smssim runs the SMS provider simulator (package smssim) as a standalone HTTP server
// for local runs. It prints "listening: http://HOST:PORT" once it serves (and, with
// -send-addr, "send: http://HOST:PORT", the address to give the stack: it serves the same API
// and can refuse every connection, POST /control/connections), and stops on SIGINT or
// SIGTERM.
//
//	smssim -addr 127.0.0.1:0 -seed 42 \
//	    -mix accept=55,accept_then_timeout=15,accept_then_drop=10,timeout_before_accept=10,throttle=10 \
//	    -rules 13=reject,14=throttle -visibility 2s -webhook http://127.0.0.1:9000/receipts
//
// Modes can also be scripted per destination at run time with POST /control/faults; see
// package simapi for the API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "smssim:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx is done, and then closes the simulator.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("smssim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr          = fs.String("addr", "127.0.0.1:0", "listen address")
		sendAddr      = fs.String("send-addr", "", "a second listen address, for the stack's sends, that POST /control/connections can close (connections refused) and reopen (default: none)")
		seed          = fs.Int64("seed", 1, "seed of the per-destination random mix")
		mixFlag       = fs.String("mix", "", "random mix of modes, e.g. accept=55,accept_then_timeout=15,throttle=10 (default: accept all)")
		rulesFlag     = fs.String("rules", "", "modes by the number's last digits, e.g. 13=reject,14=throttle")
		visibility    = fs.Duration("visibility", 0, "how long an accepted message stays invisible to lookups")
		webhook       = fs.String("webhook", "", "URL that receives delivery receipts")
		webhookToken  = fs.String("webhook-token", "", "token sent with every receipt in the X-Webhook-Token header (default: none)")
		deliveryDelay = fs.Duration("delivery-delay", time.Second, "time from acceptance to delivery and receipt")
		latency       = fs.Duration("latency", smssim.DefaultLatency, "delay of the latency mode")
		hang          = fs.Duration("hang", smssim.DefaultHang, "longest hang of the timeout modes")
		retryAfter    = fs.Duration("retry-after", smssim.DefaultRetryAfter, "Retry-After of 429 and 503")
		token         = fs.String("token", "", "bearer token required on /messages (default: none)")
		providerName  = fs.String("provider", "simulator", "provider stood in for: simulator, simulator2 (the second-provider mode: its own receipts and message IDs), or twilio (Twilio's Messages API and signed status callbacks)")
		twilioAccount = fs.String("twilio-account-sid", "", "the account SID the twilio mode requires")
		twilioToken   = fs.String("twilio-auth-token-file", "", "file holding the auth token the twilio mode signs its callbacks with")
		twilioKey     = fs.String("twilio-api-key-file", "", "file holding the API key, <key SID>:<key secret>, the twilio mode requires (HTTP basic)")
		listLag       = fs.Duration("list-lag", 0, "how long the twilio mode leaves an accepted message out of its message list")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	mix, err := smssim.ParseMix(*mixFlag)
	if err != nil {
		return err
	}
	rules, err := smssim.ParseRules(*rulesFlag)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	cfg := smssim.Config{
		Seed:          *seed,
		Mix:           mix,
		Rules:         rules,
		Latency:       *latency,
		Hang:          *hang,
		RetryAfter:    *retryAfter,
		Visibility:    *visibility,
		DeliveryDelay: *deliveryDelay,
		WebhookURL:    *webhook,
		WebhookToken:  *webhookToken,
		Token:         *token,
		Logger:        logger,
		Provider:      *providerName,
		ListLag:       *listLag,
	}
	if err := twilioMode(&cfg, *twilioAccount, *twilioToken, *twilioKey); err != nil {
		return err
	}
	return serve(ctx, smssim.New(cfg), *addr, *sendAddr, stdout, logger.With("seed", *seed, "mix", mix.String(), "rules", len(rules), "visibility", *visibility))
}

// twilioMode sets cfg's Twilio account, auth token and API key, read from their files.
func twilioMode(cfg *smssim.Config, account, tokenFile, keyFile string) error {
	token, err := twilioAuthToken(cfg.Provider, account, tokenFile)
	if err != nil {
		return err
	}
	sid, secret, err := twilioAPIKey(cfg.Provider, keyFile)
	if err != nil {
		return err
	}
	cfg.TwilioAccountSID, cfg.TwilioAuthToken, cfg.TwilioAPIKeySID, cfg.TwilioAPIKeySecret = account, token, sid, secret
	return nil
}

// twilioAuthToken reads the Twilio mode's auth token from file (never a flag's value, which
// other users could see), and checks that the twilio mode has its account and token.
func twilioAuthToken(provider, account, file string) (string, error) {
	var token string
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("twilio auth token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if provider == smssim.ProviderTwilio && (account == "" || token == "") {
		return "", errors.New("-provider twilio needs -twilio-account-sid and -twilio-auth-token-file")
	}
	return token, nil
}

// twilioAPIKey reads the Twilio mode's API key from file (never a flag's value), as
// "<key SID>:<key secret>"; the twilio mode requires one.
func twilioAPIKey(provider, file string) (sid, secret string, err error) {
	if provider != smssim.ProviderTwilio && file == "" {
		return "", "", nil
	}
	if file == "" {
		return "", "", errors.New("-provider twilio needs -twilio-api-key-file")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("twilio API key: %w", err)
	}
	if sid, secret, err = config.ParseTwilioAPIKey(string(b)); err != nil {
		return "", "", fmt.Errorf("-twilio-api-key-file: %w", err)
	}
	return sid, secret, nil
}

// serve starts srv on addr, and its send port on sendAddr when set, prints their URLs, serves
// until ctx is done, and then closes it.
func serve(ctx context.Context, srv *smssim.Server, addr, sendAddr string, stdout io.Writer, logger *slog.Logger) error {
	url, err := srv.Start(addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening: %s\n", url)
	if sendAddr != "" {
		sendURL, err := srv.StartSendPort(sendAddr)
		if err != nil {
			_ = srv.Close()
			return err
		}
		fmt.Fprintf(stdout, "send: %s\n", sendURL)
	}
	logger.Info("smssim.start", "url", url, "send_url", srv.SendURL())
	<-ctx.Done()
	logger.Info("smssim.stop")
	if err := srv.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}
