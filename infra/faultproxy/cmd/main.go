// Command faultproxy runs the fault-injecting reverse proxy (package faultproxy) on loopback in
// front of an emulator. It prints "listening: http://HOST:PORT" once it serves, and stops on
// SIGINT or SIGTERM.
//
//	faultproxy -addr 127.0.0.1:0 -upstream http://127.0.0.1:4566
//
// Rules are set at run time through the control API on the same listener, e.g.
//
//	curl -X PUT http://127.0.0.1:PORT/_faultproxy/rules \
//	    -d '{"rules":[{"service":"dynamodb","kind":"throttle","rate":0.2,"for":"2m"}]}'
//	curl http://127.0.0.1:PORT/_faultproxy/counts
//
// or at start with -rules, a file holding the same {"rules": [...]} document.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "faultproxy:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx is done, and then shuts the server down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("faultproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr     = fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
		upstream = fs.String("upstream", "", "the emulator to forward to, e.g. http://127.0.0.1:4566 (required)")
		seed     = fs.Uint64("seed", 0, "seed of the rate rolls (default: random)")
		rules    = fs.String("rules", "", "a file of rules to start with, {\"rules\": [...]} (default: none)")
		verbose  = fs.Bool("v", false, "also log requests that could not be attributed to a process")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		return errors.New("-upstream is required")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	p, err := faultproxy.New(*upstream, faultproxy.Options{Seed: *seed, Logger: slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := p.Server()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	base := "http://" + l.Addr().String()
	if *rules != "" {
		if err := loadRules(ctx, base, *rules); err != nil {
			_ = srv.Close()
			return err
		}
	}
	fmt.Fprintln(stdout, "listening:", base)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadRules sets the rules of file through the control API.
func loadRules(ctx context.Context, base, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc struct {
		Rules []faultproxy.Rule `json:"rules"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return faultproxy.NewClient(base).Set(ctx, doc.Rules...)
}
