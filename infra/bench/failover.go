package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/resetnotify/resetnotify/infra/awscount"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
)

// failoverBench measures the provider chain with its primary down: n notifications through
// the chain simulator,simulator2, the primary answering every send "not processed" (503), the
// secondary accepting, with the dispatch and reconcile workers running until every record is
// done sending. It runs twice, with the template's cool-down (workercore.NewHealth, what users
// deploy) and without one, and prints:
//
//   - requests_per_notification_failover: AWS requests per notification with the cool-down,
//     admission included, and its breakdown;
//   - provider_calls_per_notification_failover and ..._no_cooldown: calls to either provider;
//   - provider_calls_saved_per_notification_by_cooldown: the difference, the failed first
//     calls the cool-down spares.
func failoverBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, n, pollers int, out io.Writer) error {
	with, err := failoverRun(ctx, ddbEndpoint, sqsEndpoint, n, pollers, true)
	if err != nil {
		return err
	}
	without, err := failoverRun(ctx, ddbEndpoint, sqsEndpoint, n, pollers, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "failover_notifications=%d\nfailover_final_states=%s\n", n, with.states)
	fmt.Fprintf(out, "requests_per_notification_failover=%.2f\n", with.requests)
	fmt.Fprintf(out, "requests_per_notification_failover_breakdown=%s\n", with.breakdown)
	fmt.Fprintf(out, "failover_no_cooldown_final_states=%s\n", without.states)
	fmt.Fprintf(out, "requests_per_notification_failover_no_cooldown=%.2f\n", without.requests)
	fmt.Fprintf(out, "requests_per_notification_failover_no_cooldown_breakdown=%s\n", without.breakdown)
	fmt.Fprintf(out, "provider_calls_per_notification_failover=%.2f\n", with.calls)
	fmt.Fprintf(out, "provider_calls_per_notification_failover_no_cooldown=%.2f\n", without.calls)
	fmt.Fprintf(out, "provider_calls_saved_per_notification_by_cooldown=%.2f\n", without.calls-with.calls)
	return nil
}

// failoverResult is one run of failoverBench: per notification, AWS requests and provider
// calls.
type failoverResult struct {
	requests, calls float64
	breakdown       string
	states          string
}

// failoverRun is one run of failoverBench, with or without the cool-down.
func failoverRun(ctx context.Context, ddbEndpoint, sqsEndpoint string, n, pollers int, cooldown bool) (failoverResult, error) {
	primary := smssim.Config{Mix: smssim.Mix{{Mode: smssim.ModeUnavailable, Weight: 1}}, RetryAfter: time.Second, Visibility: time.Second, DeliveryDelay: time.Hour}
	p, err := newPipeline(ctx, ddbEndpoint, sqsEndpoint, primary, "failover")
	if err != nil {
		return failoverResult{}, err
	}
	defer p.close()
	sim2 := smssim.New(smssim.Config{Provider: config.SMSSimulator2, Visibility: time.Second, DeliveryDelay: time.Hour})
	defer func() { _ = sim2.Close() }()
	url2, err := sim2.Start("127.0.0.1:0")
	if err != nil {
		return failoverResult{}, err
	}
	p.setChain(url2, provider.Simulator, provider.Simulator2)
	if err := p.buildWorkers(ctx); err != nil {
		return failoverResult{}, err
	}
	if !cooldown {
		p.dispatcher.Health = nil
	}
	if err := p.admit(ctx, n); err != nil {
		return failoverResult{}, err
	}
	states, err := p.runUntilDone(ctx, pollers, 3*time.Minute)
	if err != nil {
		return failoverResult{}, err
	}
	if got := len(sim2.Messages()); got != n {
		return failoverResult{}, fmt.Errorf("failover bench: the secondary accepted %d of %d", got, n)
	}
	counts := p.counter.Counts()
	return failoverResult{
		requests:  float64(total(counts)) / float64(n),
		calls:     float64(len(p.sim.Requests())+len(sim2.Requests())) / float64(n),
		breakdown: awscount.FormatCounts(counts, float64(n)),
		states:    states,
	}, nil
}
