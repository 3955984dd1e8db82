// Command emfbridge turns the EMF lines the functions write into CloudWatch metrics in a local
// emulator (package infra/emfbridge): what CloudWatch Logs does in AWS. infra/emulator/emulator.sh starts
// it beside MiniStack for every emulator stack; make local (infra/local) runs the same bridge in
// its own process instead.
//
//	emfbridge [-log-group-prefix /aws/lambda/] [-poll 1s] [-flush 1s]   tail the emulator's log groups
//	emfbridge -stdin                                                    read the lines from stdin
//
// The emulator is the SDK's usual configuration: AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_LOGS and
// AWS_ENDPOINT_URL_CLOUDWATCH), AWS_REGION and credentials. It runs until SIGINT or SIGTERM,
// then sends what it holds and prints its counts (and every minute while it runs).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/resetnotify/resetnotify/infra/emfbridge"
)

func main() {
	prefix := flag.String("log-group-prefix", emfbridge.LambdaLogGroupPrefix, "tail the log groups whose name starts with this")
	poll := flag.Duration("poll", emfbridge.DefaultPollInterval, "how often to poll the log groups")
	flush := flag.Duration("flush", emfbridge.DefaultFlushInterval, "how often to send the metrics")
	stdin := flag.Bool("stdin", false, "read the lines from stdin instead of the log groups")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *prefix, *poll, *flush, *stdin, os.Stdin, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "emfbridge:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, prefix string, poll, flush time.Duration, fromStdin bool, stdin io.Reader, stderr io.Writer) error {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	b := emfbridge.New(cloudwatch.NewFromConfig(cfg))
	b.FlushInterval = flush
	b.OnError = func(err error) { fmt.Fprintln(stderr, "emfbridge:", err) }
	report := func() {
		s := b.Stats()
		fmt.Fprintf(stderr, "emfbridge: lines=%d emf=%d not_emf=%d invalid=%d datums=%d sent=%d dropped=%d puts=%d put_errors=%d\n",
			s.Lines, s.EMF, s.NotEMF, s.Invalid, s.Datums, s.Sent, s.Dropped, s.Puts, s.PutErrors)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = b.Run(ctx); close(done) }()
	go func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				report()
			}
		}
	}()
	if fromStdin {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			b.Line(sc.Bytes())
		}
		err = sc.Err()
	} else {
		fmt.Fprintf(stderr, "emfbridge: tailing log groups %s* every %s\n", prefix, poll)
		t := &emfbridge.Tailer{Logs: cloudwatchlogs.NewFromConfig(cfg), Prefix: prefix, Sink: b.Line, PollInterval: poll}
		err = t.Run(ctx, func(err error) { fmt.Fprintln(stderr, "emfbridge:", err) })
	}
	cancel()
	<-done
	report()
	return err
}
