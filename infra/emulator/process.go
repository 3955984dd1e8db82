package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"
)

// stopGrace is how long an emulator has to exit after SIGTERM before its group is killed.
const stopGrace = 5 * time.Second

// process is one emulator running in its own process group.
type process struct {
	name    string
	logPath string
	logFile *os.File
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait has returned
	waitErr error         // cmd.Wait's result, readable once exited is closed
}

func startProcess(name, logPath, dir string, argv ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = ChildProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, logFile: logFile, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitReady calls probe until it succeeds, the process exits, timeout passes or ctx is done.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastErr := errors.New("no probe finished")
	for {
		attemptCtx, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		err := probe(attemptCtx)
		cancelAttempt()
		if err == nil {
			return nil
		}
		if ctx.Err() == nil {
			// A probe cut short by the overall deadline says less than the one before it.
			lastErr = err
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v): %s", p.name, p.waitErr, p.logTail())
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s did not become ready within %gs (last probe: %v): %s", p.name, timeout.Seconds(), lastErr, p.logTail())
			}
			return fmt.Errorf("%s start cancelled: %w", p.name, ctx.Err())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process group, escalates to SIGKILL after stopGrace and waits for
// the process to be reaped.
func (p *process) stop() error {
	defer p.logFile.Close()
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := terminate(p.cmd.Process); err != nil {
		return fmt.Errorf("%s pid %d: %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopGrace):
	}
	if err := kill(p.cmd.Process); err != nil {
		return fmt.Errorf("%s pid %d: %w", p.name, p.cmd.Process.Pid, err)
	}
	<-p.exited
	return nil
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail() string {
	const max = 4 << 10
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return fmt.Sprintf("(log unreadable: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Sprintf("(%s is empty)", p.logPath)
	}
	return fmt.Sprintf("last lines of %s:\n%s", p.logPath, b)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
