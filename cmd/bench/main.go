// Command bench measures resetnotify against one DynamoDB Local and prints one `name=value`
// line per number, so `make bench` output can be read by people and by scripts alike.
//
// The admission benchmark runs the same number of operations with the same concurrency twice
// against one table: first raw conditional PutItem calls of an item shaped like a notification,
// then admissions through the whole intake handler (validation, fingerprint, sealing,
// conditional put, status view). The queue is an in-memory recorder, so the ratio compares our
// code with the database and not with the SQS emulator. The goal is a ratio of at least 0.8:
// the database, not our code, is the limit.
//
// It needs RESETNOTIFY_DYNAMODB_ENDPOINT (set by `go run ./cmd/devstack exec --`).
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	ops := fs.Int("ops", 2000, "operations per measured phase")
	workers := fs.Int("concurrency", 8, "concurrent callers")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ops < 100 || *workers < 1 {
		return errors.New("need -ops >= 100 and -concurrency >= 1")
	}
	endpoint := os.Getenv("RESETNOTIFY_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		return errors.New("RESETNOTIFY_DYNAMODB_ENDPOINT is not set: run through `go run ./cmd/devstack exec --` (make bench does)")
	}
	return admission(ctx, endpoint, *ops, *workers, out)
}

func randomKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err)
	}
	return k
}
