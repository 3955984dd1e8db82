package emulator_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeployScript runs infra/emulator/deploy.sh as the upgrade game day does, with a sam and a
// stackcheck that record their calls: it builds the tree it is given, with its template and the
// run's overrides, deploys it to the run's stack with the API id tags, and checks the stack
// against that tree's template. emulator.sh's first deploy is the same function.
func TestDeployScript(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work, tools, tree := t.TempDir(), t.TempDir(), t.TempDir()
	calls := filepath.Join(work, "calls")
	fake := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >>" + calls + "\n"
	for _, p := range []string{filepath.Join(tools, "sam", "bin", "sam"), filepath.Join(work, "stackcheck")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "overrides"), []byte("Target=emulator\nArchitecture=x86_64\nSmsProviders=simulator,simulator2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sourced, as emulator.sh does, with the run's variables; then as a script, as the game day
	// runs it (which reads .tools of the checkout, so only its refusal without a run is checked).
	script := `set -euo pipefail; source infra/emulator/deploy.sh; emulator_deploy "$1"`
	cmd := exec.Command("bash", "-c", script, "deploy", tree)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "work="+work, "tools="+tools, "stack=st", "api_id=abc123")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("emulator_deploy: %v\n%s", err, out)
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	want := []string{
		"sam build --template-file " + tree + "/template.yaml --build-dir " + work + "/sam/build --no-cached --build-in-source --parameter-overrides Target=emulator Architecture=x86_64 SmsProviders=simulator,simulator2",
		"sam deploy --template-file " + work + "/sam/build/template.yaml --stack-name st",
		"stackcheck check -stack st -template " + tree + "/template.yaml -env " + work + "/stack.env",
	}
	if len(lines) != len(want) {
		t.Fatalf("calls:\n%s\nwant %d", got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("call %d: %s\nwant it to begin %s", i+1, lines[i], w)
		}
	}
	if !strings.Contains(lines[1], "--tags ms-custom-id=abc123 _custom_id_=abc123 --parameter-overrides Target=emulator Architecture=x86_64 SmsProviders=simulator,simulator2") {
		t.Errorf("sam deploy without the API id tags or the overrides: %s", lines[1])
	}
	refuse := exec.Command(filepath.Join(root, "infra", "emulator", "deploy.sh"), tree)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RESETNOTIFY_EMULATOR_") {
			refuse.Env = append(refuse.Env, kv)
		}
	}
	out, err := refuse.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "emulator.sh") {
		t.Errorf("deploy.sh outside an emulator.sh run: %v, want a refusal naming emulator.sh:\n%s", err, out)
	}
}
