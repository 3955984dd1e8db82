package rie_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/dev/emulator"
	"github.com/resetnotify/resetnotify/dev/rie"
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
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "./testdata/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
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
