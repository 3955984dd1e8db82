package emulator

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMiniStackPlatformSelftest runs ministack_platform.py's self-test with the installed
// MiniStack: a function's invocations share a log stream, a CloudWatch request does not copy
// every datapoint, an alarm's evaluation skips the datapoints before its window, with
// MiniStack's verdicts, invocations beyond a function's environments wait for one, first come
// first served, and a stream batch does not hold the queues' pollers. It needs `make tools`; it skips without them unless the emulators are
// required.
func TestMiniStackPlatformSelftest(t *testing.T) {
	tools, err := FindToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(tools, "ministack", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		if os.Getenv(EnvEmulators) == EmulatorsRequired {
			t.Fatalf("emulators required but MiniStack not installed in %s: run make tools", tools)
		}
		t.Skipf("MiniStack not installed in %s: run make tools", tools)
	}
	cmd := exec.CommandContext(t.Context(), python, "ministack_platform.py", "--selftest")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "PERSIST_STATE=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("selftest: %v\n%s", err, out)
	}
}
