package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
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

// TestTwilioModeNeedsItsAPIKey: the twilio mode refuses to start without its API key file, or
// with a file that holds no key (an auth token alone), and never quotes the file's secret.
func TestTwilioModeNeedsItsAPIKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "fedcba9876543210fedcba9876543210"
	token := write("token", "0123456789abcdef0123456789abcdef")
	base := []string{"-provider", "twilio", "-twilio-account-sid", "AC00000000000000000000000000000001", "-twilio-auth-token-file", token}
	for name, extra := range map[string][]string{
		"no key file":       nil,
		"a token, no key":   {"-twilio-api-key-file", write("token-as-key", secret)},
		"a key file absent": {"-twilio-api-key-file", filepath.Join(dir, "absent")},
	} {
		err := run(context.Background(), append(slices.Clone(base), extra...), io.Discard, io.Discard)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: run = %v, want a refusal that does not quote the secret", name, err)
		}
	}
	cfg := smssim.Config{Provider: smssim.ProviderTwilio}
	if err := twilioMode(&cfg, "AC00000000000000000000000000000001", token, write("key", "SK00000000000000000000000000000001:"+secret)); err != nil ||
		cfg.TwilioAPIKeySID != "SK00000000000000000000000000000001" || cfg.TwilioAPIKeySecret != secret {
		t.Errorf("twilioMode: %v, key %q", err, cfg.TwilioAPIKeySID)
	}
}
