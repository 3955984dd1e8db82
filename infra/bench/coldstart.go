package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
)

// coldStartBench builds every functions/<name> as make build-% does for Lambda (linux,
// CGO_ENABLED=0, -tags lambda.norpc, -trimpath, and stripped with -ldflags=-s -w) for arm64 and
// amd64, reports each bootstrap's size, and measures its init duration on this machine: the
// time from starting the process (this machine's architecture) to its first request for an
// invocation on a Runtime API served here, with local keys and endpoints that refuse
// connections, so init makes no network call (in AWS, intake's init reads two SSM parameters;
// KMS data keys are taken at the first seal or open, not at init). The median of runs is
// reported. The RIE is not used: it starts the bootstrap only on the first invoke and adds its
// own start-up, and what we want is the bootstrap's own init.
func coldStartBench(ctx context.Context, runs int, out io.Writer) error {
	dirs, err := filepath.Glob("functions/*")
	if err != nil || len(dirs) == 0 {
		return fmt.Errorf("cold start: no functions/* here (run from the module root): %v", err)
	}
	sort.Strings(dirs)
	tmp, err := os.MkdirTemp("", "resetnotify-coldstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env, err := coldStartEnv()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "coldstart_measured_against=go build -trimpath -ldflags=-s -w -tags lambda.norpc, linux (the Makefile's go_build_lambda); bootstrap_bytes_<function> = the arm64 build, as deployed (_amd64: the x86_64 build); init = process start to first GET .../invocation/next on a local Runtime API, of the %s build on this machine (not the arm64 build, which this machine cannot run natively), median of %d, no network\n", runtime.GOARCH, runs)
	for _, dir := range dirs {
		name := filepath.Base(dir)
		key := metricName(name)
		for _, arch := range []string{"arm64", "amd64"} {
			bin := filepath.Join(tmp, arch, name, "bootstrap")
			cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bin, "./"+dir)
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("cold start: build %s %s: %v\n%s", name, arch, err, b)
			}
			st, err := os.Stat(bin)
			if err != nil {
				return err
			}
			suffix := ""
			if arch == "amd64" {
				suffix = "_amd64"
			}
			fmt.Fprintf(out, "bootstrap_bytes_%s%s=%d\n", key, suffix, st.Size())
		}
		if runtime.GOOS != "linux" {
			continue
		}
		bin := filepath.Join(tmp, runtime.GOARCH, name, "bootstrap")
		var times []time.Duration
		for range runs {
			d, err := initDuration(ctx, bin, env)
			if err != nil {
				return fmt.Errorf("cold start: %s: %w", name, err)
			}
			times = append(times, d)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		fmt.Fprintf(out, "init_ms_%s=%.2f\n", key, ms(times[len(times)/2]))
		c := coldStartCalls[name]
		fmt.Fprintf(out, "init_aws_calls_%s=ssm:%d (kms:%d at the first seal or open)\n", key, c.SSM, c.KMS)
	}
	return nil
}

// initDuration starts bin with env and a Runtime API on a loopback port, and returns the time
// until the bootstrap asks for its first invocation. The process is then killed (by its PID,
// through exec.Cmd).
func initDuration(ctx context.Context, bin string, env []string) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	asked := make(chan time.Time, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			select {
			case asked <- time.Now():
			default:
			}
			<-r.Context().Done() // hold it: no invocation comes
			return
		}
		// An init error report, or anything else.
		body, _ := io.ReadAll(r.Body)
		select {
		case asked <- time.Time{}:
		default:
		}
		fmt.Fprintf(os.Stderr, "cold start: %s %s: %s\n", r.Method, r.URL.Path, body)
		w.WriteHeader(http.StatusAccepted)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	cmd := exec.Command(bin)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	select {
	case at := <-asked:
		if at.IsZero() {
			return 0, errors.New("init failed: " + stderr.String())
		}
		return at.Sub(start), nil
	case err := <-exited:
		exited <- err
		return 0, fmt.Errorf("exited during init: %v: %s", err, stderr.String())
	case <-time.After(30 * time.Second):
		return 0, errors.New("no request for an invocation within 30 s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// coldStartEnv is every variable any function reads, with local values: tables and queues by
// name, local keys instead of KMS and SSM, the simulator as the provider, and AWS endpoints
// that refuse connections (127.0.0.1:1), so any network call at init would fail and show.
func coldStartEnv() ([]string, error) {
	random := func(n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	_, digestPEM, err := digest.NewLocalKey()
	if err != nil {
		return nil, err
	}
	refuse := "http://127.0.0.1:1"
	env := map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL": refuse, "AWS_LAMBDA_FUNCTION_NAME": "coldstart", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256", "HOME": os.TempDir(), "PATH": os.Getenv("PATH"),
		config.EnvNotificationsTable: "n", config.EnvAuditTable: "a", config.EnvReceiptsTable: "r",
		config.EnvDispatchQueueURL: refuse + "/000000000000/dispatch", config.EnvReconcileQueueURL: refuse + "/000000000000/reconcile",
		config.EnvSealLocalKey: random(config.SealLocalKeyLen), config.EnvDestinationPepper: random(24),
		config.EnvFingerprintKey: random(32), config.EnvSimulatorWebhookToken: random(24),
		config.EnvAuditDigestLocalKey: string(digestPEM), config.EnvAuditDigestPeriodMinutes: "60", config.EnvAuditDigestGraceSeconds: "90",
		"SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": refuse, "LOG_LEVEL": "info",
		// The template's default allow-list: intake checks it against the phone-number metadata.
		config.EnvAllowedCountries: "US,CA",
		// The template names the guard table; a function that needs it refuses to start without.
		config.EnvGuardTable:      "guard",
		"AUDIT_FAILURE_QUEUE_URL": refuse + "/000000000000/audit-failure",
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out, nil
}
