// Package rie runs a Lambda function's real `bootstrap` binary under the AWS Lambda Runtime
// Interface Emulator (aws-lambda-rie, installed into .tools/bin by `make tools`) and invokes it
// with events, for the local stack. Each function gets its own emulator process on free
// loopback ports (the emulator's invoke endpoint and the Runtime API the bootstrap talks to).
// The emulator serves one invocation at a time and fails a second concurrent one, so Invoke
// serialises calls per function, as a Lambda function with reserved concurrency 1 would.
package rie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/resetnotify/resetnotify/infra/emulator"
)

// Options describe one function to run.
type Options struct {
	// RIE is the path of the aws-lambda-rie binary.
	RIE string
	// Bootstrap is the path of the function's bootstrap binary.
	Bootstrap string
	// Name is the function's name (AWS_LAMBDA_FUNCTION_NAME inside it).
	Name string
	// Env is the function's environment, as KEY=VALUE pairs, in addition to what the emulator
	// sets itself.
	Env []string
	// Timeout is the function timeout; 0 means 30 s.
	Timeout time.Duration
	// MemoryMB is the function's memory size (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, what the
	// emulator reports); 0 leaves the emulator's default.
	MemoryMB int
	// Output receives the function's and the emulator's output; nil discards it.
	Output io.Writer
}

// Function is a bootstrap running under the emulator.
type Function struct {
	name   string
	url    string
	cmd    *exec.Cmd
	client *http.Client
	mu     sync.Mutex
	done   chan struct{}
	once   sync.Once
}

// Pid is the emulator's process ID.
func (f *Function) Pid() int { return f.cmd.Process.Pid }

// FunctionError is an error the function's handler returned, as Lambda reports it.
type FunctionError struct {
	Function string
	Type     string `json:"errorType"`
	Message  string `json:"errorMessage"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("rie: function %s failed: %s: %s", e.Function, e.Type, e.Message)
}

// Start runs the bootstrap under the emulator and waits until its invoke endpoint accepts
// connections. The function initialises on its first invocation, as in Lambda.
func Start(ctx context.Context, o Options) (*Function, error) {
	for _, p := range []string{o.RIE, o.Bootstrap} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("rie.start %s: %w (run make tools and make build)", o.Name, err)
		}
	}
	bootstrap, err := filepath.Abs(o.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("rie.start %s: %w", o.Name, err)
	}
	invokePort, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("rie.start %s: %w", o.Name, err)
	}
	apiPort, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("rie.start %s: %w", o.Name, err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	invokeAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(invokePort))
	cmd := exec.Command(o.RIE,
		"--runtime-interface-emulator-address", invokeAddr,
		"--runtime-api-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(apiPort)),
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = append(append([]string{}, o.Env...),
		"AWS_LAMBDA_FUNCTION_NAME="+o.Name,
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(timeout/time.Second)),
	)
	if o.MemoryMB > 0 {
		cmd.Env = append(cmd.Env, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(o.MemoryMB))
	}
	out := o.Output
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, killed by the kernel if this process dies without Stop: an
	// orphaned RIE would keep its port and the starter's output pipe.
	cmd.SysProcAttr = emulator.ChildProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rie.start %s: %w", o.Name, err)
	}
	f := &Function{
		name: o.Name, url: "http://" + invokeAddr + "/2015-03-31/functions/function/invocations",
		cmd: cmd, client: &http.Client{Timeout: timeout + 5*time.Second}, done: make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); close(f.done) }()
	if err := f.waitReady(ctx, invokeAddr); err != nil {
		f.Stop()
		return nil, fmt.Errorf("rie.start %s: %w", o.Name, err)
	}
	return f, nil
}

func (f *Function) waitReady(ctx context.Context, addr string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-f.done:
			return errors.New("the emulator exited during start")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the emulator did not listen within 20s")
}

// Invoke sends event to the function and decodes its response into out (which may be nil). A
// handler error comes back as a *FunctionError.
func (f *Function) Invoke(ctx context.Context, event, out any) error {
	payload, err := json.Marshal(event)
	if err != nil {
		return fmt.Errorf("rie.invoke %s: %w", f.name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("rie.invoke %s: %w", f.name, err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("rie.invoke %s: %w", f.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("rie.invoke %s: read response: %w", f.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("rie.invoke %s: emulator answered %d", f.name, resp.StatusCode)
	}
	var fe FunctionError
	if json.Unmarshal(body, &fe) == nil && fe.Type != "" {
		fe.Function = f.name
		return &fe
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("rie.invoke %s: decode response: %w", f.name, err)
	}
	return nil
}

// Stop ends the emulator and the bootstrap it runs, by process group. It is safe to call twice.
func (f *Function) Stop() {
	f.once.Do(func() {
		if f.cmd.Process != nil {
			_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGTERM)
		}
		select {
		case <-f.done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
			<-f.done
		}
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
