package rie_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/rie"
)

// rieBinary returns the emulator that `make tools` installs, skipping under plain `go test`
// when it is absent and failing under `make test`.
func rieBinary(t *testing.T) string {
	t.Helper()
	dir, err := emulator.FindToolsDir()
	if err == nil {
		p := filepath.Join(dir, "bin", "aws-lambda-rie")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv(emulator.EnvEmulators) == emulator.EmulatorsRequired {
		t.Fatalf("aws-lambda-rie is not installed in .tools/bin: make tools installs it")
	}
	t.Skip("integration test: aws-lambda-rie not installed; run `make test`, which installs it with make tools")
	return ""
}

func TestInvokeRealBootstrap(t *testing.T) {
	rieBin := rieBinary(t)
	bootstrap := buildEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := rie.Start(ctx, rie.Options{RIE: rieBin, Bootstrap: bootstrap, Name: "echo", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()

	var got map[string]any
	if err := f.Invoke(ctx, map[string]any{"n": 1.0}, &got); err != nil {
		t.Fatalf("invoke: %v", err)
	}
	if got["n"] != 1.0 {
		t.Errorf("echo returned %v", got)
	}
	var fe *rie.FunctionError
	if err := f.Invoke(ctx, map[string]any{"fail": true}, nil); !errors.As(err, &fe) || fe.Message != "asked to fail" {
		t.Errorf("failing invoke: %v", err)
	}
	// The emulator cannot take two invocations at once; Invoke must serialise them.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out map[string]any
			if err := f.Invoke(ctx, map[string]any{"i": float64(i)}, &out); err != nil {
				errs <- err
			} else if out["i"] != float64(i) {
				errs <- errors.New("wrong echo")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent invoke: %v", err)
	}
	f.Stop()
	if err := f.Invoke(ctx, map[string]any{}, nil); err == nil {
		t.Error("invoke after Stop succeeded")
	}
}

// buildEcho builds testdata/echo as a bootstrap.
func buildEcho(t *testing.T) string {
	t.Helper()
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	return bootstrap
}

// envStarter makes the test binary a starter that runs one emulator, prints its PID and
// waits to be killed (TestEmulatorDiesWithItsStarter).
const envStarter = "RIE_TEST_STARTER_BOOTSTRAP"

func TestStarterProcess(t *testing.T) {
	bootstrap := os.Getenv(envStarter)
	if bootstrap == "" {
		t.Skip("helper process of TestEmulatorDiesWithItsStarter")
	}
	f, err := rie.Start(context.Background(), rie.Options{RIE: rieBinary(t), Bootstrap: bootstrap, Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("pid", f.Pid())
	time.Sleep(time.Minute)
}

// A starter killed without Stop (SIGKILL, a test's Kill) must not leave its emulator behind:
// an orphaned RIE keeps its ports and the starter's output pipe, so whoever waits on that
// pipe (infra/local's test) waits forever.
func TestEmulatorDiesWithItsStarter(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	rieBinary(t)
	bootstrap := buildEcho(t)
	starter := exec.Command(os.Args[0], "-test.run=^TestStarterProcess$", "-test.v")
	starter.Env = append(os.Environ(), envStarter+"="+bootstrap)
	out, err := starter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "pid %d", &pid); err == nil {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if pid == 0 {
		_ = starter.Process.Kill()
		t.Fatalf("the starter printed no emulator PID (wait: %v)", starter.Wait())
	}
	if err := starter.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = starter.Wait()
	for deadline := time.Now().Add(20 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the emulator (pid %d) outlived its killed starter by 20s", pid)
		}
	}
}

// alive reports whether pid runs and is not a zombie waiting for init to reap it.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}
