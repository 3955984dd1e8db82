// Command resetctl calls the resetnotify API through package client, for operators and for
// trying the API by hand against `make local` or a deployed stack.
//
// Usage:
//
//	resetctl send   [flags] --event-id E --purpose one_time_code --to-file to.txt --param-file params.txt --expires-in 10m
//	resetctl status [flags] KEY
//	resetctl cancel [flags] KEY
//	resetctl convert [flags] KEY   (the code or link was used: POST .../conversion)
//
// Common flags: --endpoint (else $RESETNOTIFY_ENDPOINT), --output text|json, --timeout (the
// whole call, retries included, default 30s), --region, --sign. Requests are signed with SigV4
// from the standard AWS credential chain, except to a loopback endpoint (make local checks no
// signature), which is signed only with --sign. send also takes --key (else the API's derived
// key), --channel, --locale and --expires-in or --expires-at.
//
// send reads the secrets from files, never from its command line, where ps and the shell
// history would show them: --to-file holds the E.164 number, --param-file one name=value line
// per param (blank lines and # comments ignored); "-" is stdin, for one of the two. --to and
// --param are refused with a usage error that names the new flags.
//
// Output is the notification's ID, state and times, as a table or as JSON. Neither the output
// nor an error ever shows the phone number or a param. Exit status: 0 on success, 1 when the
// call failed, 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// EnvEndpoint names the environment variable that gives --endpoint its default.
const EnvEndpoint = "RESETNOTIFY_ENDPOINT"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// errUsage marks an error in the command line; its message has been printed with the usage.
var errUsage = errors.New("usage")

const usage = `usage:
  resetctl send   [flags] --event-id E --purpose one_time_code --to-file FILE --param-file FILE --expires-in 10m
  resetctl status [flags] KEY
  resetctl cancel [flags] KEY
  resetctl convert [flags] KEY
send reads the number and the params from files ("-" for stdin), never from the command line.
Run "resetctl <command> -h" for the flags of a command.`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "send":
		return runSend(ctx, rest, getenv, stdin, stdout, stderr)
	case "status", "cancel", "convert":
		return runKeyed(ctx, cmd, rest, getenv, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, "resetctl: unknown command (want send, status, cancel or convert)")
	fmt.Fprintln(stderr, usage)
	return errUsage
}

// exitCode prints err, if any, and returns the process's exit status.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintln(stderr, "resetctl:", err)
	return 1
}
