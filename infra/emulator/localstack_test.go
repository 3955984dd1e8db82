package emulator_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalStackNeedsTheProEdition runs infra/localstack/run.sh without LOCALSTACK_AUTH_TOKEN,
// with a docker on PATH that records its calls: LocalStack's community edition has no API
// Gateway v2, which the template's API needs, so the script must refuse, saying why, before
// it starts a container.
func TestLocalStackNeedsTheProEdition(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	fake := "#!/bin/sh\necho \"$@\" >>" + calls + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "infra", "localstack", "run.sh"))
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LOCALSTACK_IMAGE=localstack/localstack-pro:test"}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("run.sh without LOCALSTACK_AUTH_TOKEN succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "API Gateway v2") || !strings.Contains(string(out), "LOCALSTACK_AUTH_TOKEN") {
		t.Errorf("run.sh's refusal does not say why (API Gateway v2) and what to set (LOCALSTACK_AUTH_TOKEN):\n%s", out)
	}
	if b, err := os.ReadFile(calls); err == nil {
		t.Errorf("run.sh called docker before refusing: %s", b)
	}
}
