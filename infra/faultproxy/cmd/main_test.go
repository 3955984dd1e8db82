package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
)

// section returns docs/operations.md's fault proxy section.
func section(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Platform faults: the fault proxy\n")
	if !ok {
		t.Fatal("docs/operations.md has no section \"Platform faults: the fault proxy\"")
	}
	if next := strings.Index(after, "\n## "); next >= 0 {
		after = after[:next]
	}
	return after
}

// fences returns the bodies of the section's fenced blocks of language lang.
func fences(text, lang string) []string {
	var out []string
	for _, part := range strings.Split(text, "```"+lang+"\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		out = append(out, body)
	}
	return out
}

// TestDocumentedRulesAreValid parses every rules document of the section, as the proxy's
// control API does, and validates each rule.
func TestDocumentedRulesAreValid(t *testing.T) {
	docs := fences(section(t), "json")
	if len(docs) == 0 {
		t.Fatal("no JSON rules in the section")
	}
	for _, d := range docs {
		var doc struct{ Rules []faultproxy.Rule }
		if err := json.Unmarshal([]byte(d), &doc); err != nil {
			t.Fatalf("%v in\n%s", err, d)
		}
		for _, r := range doc.Rules {
			if err := r.Validate(); err != nil {
				t.Errorf("%+v: %v", r, err)
			}
		}
		if len(doc.Rules) == 0 {
			t.Errorf("an empty rules document:\n%s", d)
		}
	}
}

// TestTheProxyByHand runs the section's shell example as written, with a built faultproxy for
// `go run ./infra/faultproxy/cmd`, a fake emulator for 127.0.0.1:4566 and a free port for 4567, and
// checks that its rules were set, its counts read and its rules cleared.
func TestTheProxyByHand(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on this machine")
	}
	var script string
	for _, s := range fences(section(t), "sh") {
		if strings.HasPrefix(s, "# The fault proxy by hand") {
			script = s
		}
	}
	if script == "" {
		t.Fatal("no \"# The fault proxy by hand\" sh block in the section")
	}
	bin := filepath.Join(t.TempDir(), "faultproxy")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }))
	defer upstream.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().String()
	l.Close()
	script = strings.NewReplacer("go run ./infra/faultproxy/cmd", bin, "127.0.0.1:4566", strings.TrimPrefix(upstream.URL, "http://"), "127.0.0.1:4567", port).Replace(script)
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script+"\nkill %1\nwait\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the example did not end\n%s", errOut.String())
	}
	if err != nil && !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("the example failed: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	// Its output: the listening line, the rules in force, the counts.
	text := out.String()
	if !strings.Contains(text, "listening: http://"+port) {
		t.Errorf("no listening line in %q", text)
	}
	dec := json.NewDecoder(strings.NewReader(text[strings.Index(text, "{"):]))
	var rules struct{ Rules []faultproxy.Rule }
	var counts faultproxy.Counts
	if err := dec.Decode(&rules); err != nil || len(rules.Rules) != 2 || rules.Rules[0].For != 2*time.Minute || rules.Rules[1].Rate != 0.1 {
		t.Errorf("rules printed: %+v, %v", rules, err)
	}
	if err := dec.Decode(&counts); err != nil || counts.Requests == nil {
		t.Errorf("counts printed: %+v, %v", counts, err)
	}
}
