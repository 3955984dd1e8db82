package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// twilioBench measures the Twilio path: n notifications through a chain of twilio alone (the
// simulator in its Twilio mode, accepting everything), each delivered by its signed status
// callback, which provider-events' handler takes on the Twilio route (signature checked,
// receipt recorded, record moved to delivered) with counted clients:
//
//   - requests_per_notification_twilio: AWS requests per notification from admission to
//     delivered, the status callback's included (the happy path's figure has no receipt),
//     at the template's defaults (SmsTimeoutSeconds 5, SmsVisibilitySeconds 300);
//   - twilio_final_states, and a check that Twilio accepted each notification exactly once.
func twilioBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, n, pollers int, out io.Writer) error {
	p, err := newPipeline(ctx, ddbEndpoint, sqsEndpoint, smssim.Config{}, "twilio")
	if err != nil {
		return err
	}
	defer p.close()
	receipts := p.name + "-receipts"
	if err := tablesetup.Create(ctx, p.db, tables.Names{Notifications: p.table, Audit: p.audit, Receipts: receipts}); err != nil {
		return err
	}
	defer dropTables(context.Background(), p.db, tables.Names{Receipts: receipts})
	account, token, keySID, keySecret := "AC"+randomHex(16), randomHex(16), "SK"+randomHex(16), randomHex(16)

	hook, stop, err := p.twilioWebhook(ddbEndpoint, receipts, token)
	if err != nil {
		return err
	}
	defer stop()

	// Callbacks a second after acceptance: Twilio's come after the create's answer.
	sim := smssim.New(smssim.Config{Provider: smssim.ProviderTwilio, TwilioAccountSID: account, TwilioAuthToken: token,
		TwilioAPIKeySID: keySID, TwilioAPIKeySecret: keySecret, DeliveryDelay: time.Second})
	defer func() { _ = sim.Close() }()
	base, err := sim.Start("127.0.0.1:0")
	if err != nil {
		return err
	}
	// The template's provider timeout and visibility window, Twilio's simulator as the chain.
	p.wiring.SMS = provider.Config{
		Kind: provider.Twilio, Chain: []string{provider.Twilio}, Timeout: p.wiring.SMS.Timeout, Visibility: p.wiring.SMS.Visibility,
		TwilioBaseURL: base, TwilioAccountSID: account, TwilioAPIKey: keySID + ":" + keySecret, TwilioFrom: "+15005550006", TwilioCallbackURL: hook,
	}
	if err := p.buildWorkers(ctx); err != nil {
		return err
	}
	if err := p.admit(ctx, n); err != nil {
		return err
	}
	if err := p.drainDispatch(ctx, n, pollers); err != nil {
		return err
	}
	states, err := p.waitDelivered(ctx, 2*time.Minute)
	if err != nil {
		return err
	}
	if got := len(sim.Messages()); got != n {
		return fmt.Errorf("twilio bench: Twilio accepted %d messages for %d notifications", got, n)
	}
	counts := p.counter.Counts()
	fmt.Fprintf(out, "twilio_notifications=%d\ntwilio_final_states=%s\n", n, states)
	fmt.Fprintf(out, "requests_per_notification_twilio=%.2f\n", float64(total(counts))/float64(n))
	fmt.Fprintf(out, "requests_per_notification_twilio_breakdown=%s\n", awscount.FormatCounts(counts, float64(n)))
	return nil
}

// twilioWebhook serves provider-events' handler on the Twilio route, as TwilioWebhookFunction
// runs it, with counted clients over the pipeline's table and receipts, checking signatures
// under token; it returns the route's URL and a function that stops it.
func (p *pipeline) twilioWebhook(ddbEndpoint, receipts, token string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hook := "http://" + ln.Addr().String() + "/v1/provider-events/twilio"
	db := awsclient.DynamoDB(p.countedCfg, ddbEndpoint)
	notifications := dynamostore.New(db, p.table)
	h := &providerevents.Handler{
		Recorder: &providerevents.Recorder{
			Receipts: providerevents.NewStore(db, receipts, config.DefaultReceiptRetention, notify.SystemClock{}),
			Keys:     notifications, Notifications: notifications, Clock: notify.SystemClock{},
			Metrics: &obs.Metrics{W: io.Discard, Function: "provider-events"},
		},
		TwilioTokens: [][]byte{[]byte(token)}, TwilioCallbackURL: hook,
	}
	srv := &http.Server{Handler: localapi.NewServer([]localapi.Route{{Function: "TwilioWebhookFunction", Method: http.MethodPost, Path: "/v1/provider-events/twilio"}},
		map[string]localapi.HandlerFunc{"TwilioWebhookFunction": h.HandleHTTP}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return hook, func() { _ = srv.Close() }, nil
}

// waitDelivered polls, with the uncounted client, until every record of the pipeline is
// delivered or within has passed, and returns the final states, counted.
func (p *pipeline) waitDelivered(ctx context.Context, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		states, delivered := map[string]int{}, 0
		for _, k := range p.keys {
			rec, err := p.store.Get(ctx, k)
			if err != nil {
				return "", err
			}
			states[string(rec.State)+"/"+string(rec.Reason)]++
			if rec.State == notify.StateDelivered {
				delivered++
			}
		}
		if delivered == len(p.keys) {
			return formatSorted(states, "%s:%d"), nil
		}
		if time.Now().After(deadline) {
			return "", errors.New("twilio bench: not every notification was delivered: " + formatSorted(states, "%s:%d"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
