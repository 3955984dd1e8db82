//go:build linux

package faultproxy

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process: a stand-in for a Lambda bootstrap. It puts an item through the proxy
// at $FAULTPROXY_HELPER_URL, says "answered" when the answer came, and then stays alive for a
// while, as a function going on to its next step.
func TestMain(m *testing.M) {
	if u := os.Getenv("FAULTPROXY_HELPER_URL"); u != "" {
		f := &fixture{url: u}
		if err := putItem(f.dynamo(1)); err != nil {
			os.Stdout.WriteString("error\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("answered\n")
		time.Sleep(10 * time.Second)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper is a running helper process and what it printed.
type helper struct {
	cmd   *exec.Cmd
	lines chan string
}

func startHelper(t *testing.T, proxyURL, function string) *helper {
	t.Helper()
	return startHelperCmd(t, proxyURL, function, exec.Command(os.Args[0], "-test.run=^$"))
}

func startHelperCmd(t *testing.T, proxyURL, function string, cmd *exec.Cmd) *helper {
	t.Helper()
	cmd.Env = append(os.Environ(), "FAULTPROXY_HELPER_URL="+proxyURL, "AWS_LAMBDA_FUNCTION_NAME="+function)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return h
}

// wait returns what the helper printed and whether it died of SIGKILL.
func (h *helper) wait(t *testing.T) (string, bool) {
	t.Helper()
	var said []string
	for l := range h.lines {
		said = append(said, l)
	}
	err := h.cmd.Wait()
	ws, _ := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err != nil && !ws.Signaled() && ws.ExitStatus() != 0 {
		t.Logf("helper: %v", err)
	}
	return strings.Join(said, ","), ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestKillAttributesTheRequestToItsFunctionProcess runs a stand-in function process whose
// AWS_LAMBDA_FUNCTION_NAME the proxy finds from the request's source port, and checks the
// three moments of a kill (before forwarding, after committing, and a while after the answer),
// that a rule naming another function leaves it alone, and that the count names the function.
func TestKillAttributesTheRequestToItsFunctionProcess(t *testing.T) {
	const fn = "resetnotify-e2e-DispatchFunction-1A2B"
	cases := []struct {
		name      string
		rule      Rule
		killed    bool
		committed int
		said      string
	}{
		{"before", Rule{Service: "dynamodb", Function: "DispatchFunction", Kind: KindKill}, true, 0, ""},
		{"after", Rule{Service: "dynamodb", Function: "DispatchFunction", Kind: KindKill, After: true}, true, 1, ""},
		{"after the answer", Rule{Service: "dynamodb", Function: "DispatchFunction", Kind: KindKill, After: true, Latency: 300 * time.Millisecond}, true, 1, "answered"},
		{"another function", Rule{Service: "dynamodb", Function: "AuditFunction", Kind: KindKill, After: true}, false, 1, "answered"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.set(t, c.rule)
			h := startHelper(t, f.url, fn)
			if !c.killed {
				// Give it its answer, then end it ourselves.
				if l := <-h.lines; l != "answered" {
					t.Fatalf("helper said %q", l)
				}
				_ = h.cmd.Process.Signal(syscall.SIGTERM)
				h.wait(t)
				if n := f.faults(t, KindKill); n != 0 {
					t.Errorf("%d kills counted for a rule naming another function", n)
				}
				return
			}
			said, killed := h.wait(t)
			if !killed {
				t.Fatalf("helper not killed by SIGKILL (said %q)", said)
			}
			if said != c.said {
				t.Errorf("helper said %q before it died, want %q", said, c.said)
			}
			if n := f.up.count("DynamoDB_20120810.PutItem"); n != c.committed {
				t.Errorf("%d puts committed, want %d", n, c.committed)
			}
			counts, err := f.client.Counts(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(counts.Faults) != 1 || counts.Faults[0].Kind != KindKill || counts.Faults[0].Function != fn || counts.Faults[0].Count != 1 {
				t.Errorf("faults %+v, want one kill of %s", counts.Faults, fn)
			}
		})
	}
}

// TestKillNeverHitsAProcessThatIsNoFunction: this test process has no
// AWS_LAMBDA_FUNCTION_NAME, so a kill rule never matches its requests.
func TestKillNeverHitsAProcessThatIsNoFunction(t *testing.T) {
	if os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
		t.Skip("AWS_LAMBDA_FUNCTION_NAME is set in this environment")
	}
	f := newFixture(t)
	f.set(t, Rule{Function: "Function", Kind: KindKill})
	if err := putItem(f.dynamo(1)); err != nil {
		t.Fatalf("a request of a process that is no function was faulted: %v", err)
	}
}

// TestKillAllEndsEveryProcessOfTheFunction: with All, the request of one process of a function
// kills it and the function's other process (warm, idle) of the same parent, each counted, and
// leaves alone a process of another function and one of the same name under another parent
// (another emulator's stack of the same name).
func TestKillAllEndsEveryProcessOfTheFunction(t *testing.T) {
	const fn = "resetnotify-e2e-IntakeFunction-1A2B"
	f := newFixture(t)
	idle := startHelper(t, f.url, fn)
	other := startHelper(t, f.url, "resetnotify-e2e-AuditFunction-3C4D")
	// Under a shell that is no function itself.
	foreign := startHelperCmd(t, f.url, "", exec.Command("sh", "-c", `AWS_LAMBDA_FUNCTION_NAME="$1" "$0" -test.run='^$' & wait`, os.Args[0], fn))
	for _, h := range []*helper{idle, other, foreign} {
		if l := <-h.lines; l != "answered" {
			t.Fatalf("helper said %q before any rule", l)
		}
	}
	f.set(t, Rule{Service: "dynamodb", Function: "IntakeFunction", Kind: KindKill, After: true, Limit: 1, All: true})
	busy := startHelper(t, f.url, fn)
	for name, h := range map[string]*helper{"the requester": busy, "its idle sibling": idle} {
		if said, killed := h.wait(t); !killed {
			t.Errorf("%s not killed by SIGKILL (said %q)", name, said)
		}
	}
	for name, h := range map[string]*helper{"another function's process": other, "the same function's under another parent": foreign} {
		select {
		case <-h.lines: // closed: its output ended with it
			t.Errorf("%s ended", name)
		case <-time.After(300 * time.Millisecond):
		}
	}
	if n := f.faults(t, KindKill); n != 2 {
		t.Errorf("%d kills counted, want 2", n)
	}
}
