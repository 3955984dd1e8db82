package main

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/resetnotify/resetnotify/infra/emfbridge"
	"github.com/resetnotify/resetnotify/infra/emulator"
)

// metrics is make local's CloudWatch: a MiniStack serving CloudWatch (moto cannot speak its
// protocol, see emulator.CloudWatch) and the EMF bridge, fed every line the functions write
// (their bootstraps' output under the RIE, or the in-process handlers'), as CloudWatch Logs
// would be in AWS. `aws cloudwatch get-metric-data` against the exported
// AWS_ENDPOINT_URL_CLOUDWATCH reads what the code emitted.
type metrics struct {
	cw     *emulator.CloudWatch
	bridge *emfbridge.Bridge
	cancel context.CancelFunc
	done   chan struct{}
}

// startMetrics starts the CloudWatch emulator and the bridge; the bridge's send errors go to
// stderr.
func startMetrics(ctx context.Context, awsCfg aws.Config, stderr io.Writer) (*metrics, error) {
	cw, err := emulator.StartCloudWatch(ctx, emulator.Options{})
	if err != nil {
		return nil, err
	}
	client := cloudwatch.NewFromConfig(awsCfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(cw.Endpoint) })
	m := &metrics{cw: cw, bridge: emfbridge.New(client), done: make(chan struct{})}
	m.bridge.OnError = func(err error) { fmt.Fprintln(stderr, "local: metrics:", err) }
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	go func() { _ = m.bridge.Run(runCtx); close(m.done) }()
	return m, nil
}

// output returns w with the bridge beside it: each line written to it is also read as EMF.
func (m *metrics) output(w io.Writer) io.Writer { return io.MultiWriter(w, m.bridge) }

// stop sends what the bridge holds and stops the emulator.
func (m *metrics) stop(stderr io.Writer) {
	m.cancel()
	<-m.done
	s := m.bridge.Stats()
	fmt.Fprintf(stderr, "local: metrics: %d EMF lines (%d invalid), %d datums sent, %d dropped\n", s.EMF, s.Invalid, s.Sent, s.Dropped)
	if err := m.cw.Stop(); err != nil {
		fmt.Fprintln(stderr, "local: stop CloudWatch:", err)
	}
}
