package emulator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEnviron(t *testing.T) {
	s := &Stack{DynamoDBEndpoint: "http://127.0.0.1:1001", SQSEndpoint: "http://127.0.0.1:1002"}
	cases := []struct {
		name string
		base []string
		want []string
	}{
		{
			name: "empty",
			want: []string{
				"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1001",
				"AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:1001",
				"AWS_ENDPOINT_URL_KMS=http://127.0.0.1:1002",
				"AWS_ENDPOINT_URL_S3=http://127.0.0.1:1002",
				"AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1002",
				"RESETNOTIFY_DYNAMODB_ENDPOINT=http://127.0.0.1:1001",
				"RESETNOTIFY_EMULATORS=required",
				"RESETNOTIFY_SQS_ENDPOINT=http://127.0.0.1:1002",
				"AWS_REGION=us-east-1",
				"AWS_ACCESS_KEY_ID=local",
				"AWS_SECRET_ACCESS_KEY=local",
			},
		},
		{
			name: "keeps region and credentials, replaces endpoints",
			base: []string{
				"PATH=/bin",
				"AWS_REGION=eu-west-1",
				"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
				"AWS_SECRET_ACCESS_KEY=secret",
				"AWS_ENDPOINT_URL_SQS=http://elsewhere:1",
				"RESETNOTIFY_EMULATORS=optional",
			},
			want: []string{
				"PATH=/bin",
				"AWS_REGION=eu-west-1",
				"AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
				"AWS_SECRET_ACCESS_KEY=secret",
				"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1001",
				"AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://127.0.0.1:1001",
				"AWS_ENDPOINT_URL_KMS=http://127.0.0.1:1002",
				"AWS_ENDPOINT_URL_S3=http://127.0.0.1:1002",
				"AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1002",
				"RESETNOTIFY_DYNAMODB_ENDPOINT=http://127.0.0.1:1001",
				"RESETNOTIFY_EMULATORS=required",
				"RESETNOTIFY_SQS_ENDPOINT=http://127.0.0.1:1002",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, s.Environ(tc.base)); diff != "" {
				t.Errorf("Environ() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartNotInstalled(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), Options{ToolsDir: dir})
	if err == nil || !strings.Contains(err.Error(), "DynamoDB Local not installed at "+filepath.Join(dir, "dynamodb-local")+": run make tools") {
		t.Fatalf("Start() error = %v, want DynamoDB Local not installed", err)
	}
}

func TestWaitReadyReportsExitWithLogTail(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("failing", filepath.Join(dir, "failing.log"), dir, "sh", "-c", "echo boom: address in use; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	err = p.waitReady(t.Context(), 10*time.Second, func(context.Context) error { return errors.New("not yet") })
	if err == nil || !strings.Contains(err.Error(), "failing exited before it was ready") || !strings.Contains(err.Error(), "boom: address in use") {
		t.Fatalf("waitReady() error = %v, want exit with log tail", err)
	}
}

func TestWaitReadyTimeout(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("sleeper", filepath.Join(dir, "sleeper.log"), dir, "sh", "-c", "echo starting; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	err = p.waitReady(t.Context(), 300*time.Millisecond, func(context.Context) error { return errors.New("not yet") })
	if err == nil || !strings.Contains(err.Error(), "sleeper did not become ready within 0.3s") || !strings.Contains(err.Error(), "starting") {
		t.Errorf("waitReady() error = %v, want timeout with log tail", err)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, p.cmd.Process.Pid)
}

// TestStartStop starts the real emulators. It needs `make tools`; it skips without them unless
// the emulators are required.
func TestStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts DynamoDB Local and moto_server")
	}
	tools, err := FindToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tools, "dynamodb-local", "DynamoDBLocal.jar")); err != nil {
		if os.Getenv(EnvEmulators) == EmulatorsRequired {
			t.Fatalf("emulators required but not installed in %s: run make tools", tools)
		}
		t.Skipf("emulators not installed in %s: run make tools", tools)
	}
	// Other test packages run meanwhile, so a loaded machine gets longer than the default.
	s, err := Start(t.Context(), Options{ReadyTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, endpoint := range []string{s.DynamoDBEndpoint, s.SQSEndpoint} {
		if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
			t.Errorf("endpoint %q is not on 127.0.0.1", endpoint)
		}
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop() = %v", err)
	}
	for _, p := range s.procs {
		assertGone(t, p.cmd.Process.Pid)
	}
	if _, err := os.Stat(s.LogDir); !os.IsNotExist(err) {
		t.Errorf("log dir %s still exists after Stop (err %v)", s.LogDir, err)
	}
}

// assertGone fails unless no process is left in the process group led by pid.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists (kill -0: %v)", pid, err)
	}
}
