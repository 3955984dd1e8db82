// Command devstack runs a command against the local emulators: it starts DynamoDB Local and
// moto_server on free ports of 127.0.0.1, runs the command with their endpoints in its
// environment, and stops the emulators however the command ends. `make test` and `make bench`
// run `go test` through it.
//
// Usage:
//
//	devstack exec [-logs dir] [-tools dir] -- command [args...]
//
// The command sees RESETNOTIFY_DYNAMODB_ENDPOINT, RESETNOTIFY_SQS_ENDPOINT,
// RESETNOTIFY_EMULATORS=required, the SDK's AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_DYNAMODB_STREAMS and AWS_ENDPOINT_URL_SQS, and, unless already set,
// AWS_REGION=us-east-1 and the local credentials AWS_ACCESS_KEY_ID=local and
// AWS_SECRET_ACCESS_KEY=local. SIGINT and SIGTERM are passed on to the command (except a
// SIGINT typed in the terminal, which the command has received already). devstack exits
// with the command's status (128+n if signal n ended it), or 1 with the reason if the
// emulators could not start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/resetnotify/resetnotify/infra/emulator"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stderr)
	var exit exitStatus
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

// exitStatus is the exit status of the command devstack ran, for main to exit with.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

const usage = "usage: devstack exec [-logs dir] [-tools dir] -- command [args...]"

func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "exec" {
		fmt.Fprintln(stderr, usage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("devstack exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	var opts emulator.Options
	fs.StringVar(&opts.LogDir, "logs", "", "keep the emulators' logs in `dir` (default: a temporary folder, removed on exit)")
	fs.StringVar(&opts.ToolsDir, "tools", "", "`dir` that make tools installed into (default: .tools beside go.mod)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	return execWithStack(ctx, opts, fs.Args(), stderr)
}

// execWithStack starts the emulators, runs argv with their endpoints and stops them.
func execWithStack(ctx context.Context, opts emulator.Options, argv []string, stderr io.Writer) (err error) {
	// Catch the signals before anything starts, so that none of them can kill devstack
	// between starting the emulators and stopping them.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	// exec.Command looks the program up now: fail before spending seconds on the emulators.
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return fmt.Errorf("run command: %w", cmd.Err)
	}

	stack, err := startStack(ctx, opts, sigs)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := stack.Stop(); stopErr != nil {
			if err == nil {
				err = stopErr
			} else {
				fmt.Fprintln(stderr, "devstack:", stopErr)
			}
		}
	}()
	fmt.Fprintf(stderr, "devstack: DynamoDB Local at %s, moto_server (SQS) at %s\n", stack.DynamoDBEndpoint, stack.SQSEndpoint)

	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = stack.Environ(os.Environ())
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run command: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			// The command shares devstack's process group, so a Ctrl-C typed in the terminal
			// has reached it already: passing that on would deliver it twice.
			if sig == os.Interrupt && inTerminalForeground() {
				continue
			}
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			return commandStatus(argv[0], err)
		}
	}
}

// startStack starts the emulators; a signal that arrives meanwhile cancels the start.
func startStack(ctx context.Context, opts emulator.Options, sigs <-chan os.Signal) (*emulator.Stack, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		stack *emulator.Stack
		err   error
	}
	started := make(chan result, 1)
	go func() {
		stack, err := emulator.Start(ctx, opts)
		started <- result{stack, err}
	}()
	select {
	case r := <-started:
		return r.stack, r.err
	case sig := <-sigs:
		cancel()
		if r := <-started; r.err == nil {
			if err := r.stack.Stop(); err != nil {
				return nil, fmt.Errorf("%v while starting the emulators; %w", sig, err)
			}
		}
		return nil, fmt.Errorf("%v while starting the emulators", sig)
	}
}

// commandStatus turns the command's Wait error into the status devstack exits with.
func commandStatus(argv0 string, err error) error {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		if err != nil {
			return fmt.Errorf("exec %s: %w", argv0, err)
		}
		return nil
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus(128 + int(ws.Signal()))
	}
	return exitStatus(exitErr.ExitCode())
}
