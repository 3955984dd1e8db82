package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-send-addr", "127.0.0.1:0", "-seed", "3", "-mix", "accept=1"}, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewReader(pr)
	for _, prefix := range []string{"listening: ", "send: "} {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the %q line: %v", prefix, err)
		}
		url, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("line %q, want %s<url>", line, prefix)
		}
		resp, err := http.Get(url + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/healthz: %v %v", url, resp, err)
		}
		resp.Body.Close()
	}
	go func() { _, _ = io.Copy(io.Discard, lines) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-mix", "explode=1"}, {"-rules", "x=reject"}, {"-nope"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%v) accepted", args)
		}
	}
}
