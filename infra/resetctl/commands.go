package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/client"
)

// common holds the flags every command takes.
type common struct {
	endpoint string
	output   string
	timeout  time.Duration
	region   string
	sign     bool
}

func (c *common) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.endpoint, "endpoint", getenv(EnvEndpoint), "the API's base URL (default $"+EnvEndpoint+")")
	fs.StringVar(&c.output, "output", "text", "text or json")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "deadline of the whole call, retries included")
	fs.StringVar(&c.region, "region", "", "SigV4 signing region (default: the execute-api host's, else the AWS config's)")
	fs.BoolVar(&c.sign, "sign", false, "sign requests to a loopback endpoint too (others are always signed)")
}

func (c *common) check() error {
	if c.endpoint == "" {
		return fmt.Errorf("--endpoint (or $%s) is required", EnvEndpoint)
	}
	if c.output != "text" && c.output != "json" {
		return errors.New("--output must be text or json")
	}
	if c.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	return nil
}

// newClient builds the client: signed with the standard AWS credential chain, except for a
// loopback endpoint without --sign, whose local stack checks no signature.
func (c *common) newClient(ctx context.Context) (*client.Client, error) {
	u, err := url.Parse(c.endpoint)
	if err != nil {
		return nil, errors.New("--endpoint is not a URL")
	}
	if isLoopback(u.Hostname()) && !c.sign {
		return client.New(client.Options{Endpoint: c.endpoint})
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS config: %w", err)
	}
	return client.NewFromConfig(cfg, c.endpoint, func(o *client.Options) {
		if c.region != "" {
			o.Region = c.region
		}
	})
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parse parses args into fs, flags and arguments in any order, and returns the arguments. A
// usage error is printed with the flag set's defaults.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	fs.SetOutput(stderr)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usageError prints msg and the flags of fs, and returns errUsage.
func usageError(fs *flag.FlagSet, stderr io.Writer, msg string) error {
	fmt.Fprintln(stderr, "resetctl "+fs.Name()+": "+msg)
	fs.Usage()
	return errUsage
}

func runSend(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = io.WriteString(fs.Output(), sendHelp+"\n")
		fs.PrintDefaults()
	}
	var c common
	c.register(fs, getenv)
	sf := sendFlags{secrets: secretFiles{stdin: stdin}}
	sf.register(fs)
	rest, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	n, problem := sf.notification(rest, &c)
	if problem != "" {
		return usageError(fs, stderr, problem)
	}
	cl, err := c.newClient(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := cl.Send(ctx, n)
	if err != nil {
		return report(c.output, stdout, err)
	}
	return printResult(c.output, stdout, res.Status, res)
}

// sendFlags are the flags of send that make the notification.
type sendFlags struct {
	n         client.Notification
	secrets   secretFiles
	expiresIn time.Duration
	expiresAt string
}

func (sf *sendFlags) register(fs *flag.FlagSet) {
	n := &sf.n
	fs.StringVar(&n.IdempotencyKey, "key", "", "idempotency key (default <event-id>:<channel>:<purpose>)")
	fs.StringVar(&n.EventID, "event-id", "", "the event this notification answers (required)")
	fs.StringVar(&n.Channel, "channel", client.ChannelSMS, "channel")
	fs.StringVar(&n.Purpose, "purpose", "", "password_reset, one_time_code or magic_link (required)")
	fs.StringVar(&sf.secrets.to, "to-file", "", "file holding the E.164 phone number, - for stdin (required; never printed)")
	fs.StringVar(&sf.secrets.params, "param-file", "", "file of name=value lines: reset_url, code or link; - for stdin (required; never printed)")
	fs.Var(&sf.secrets.oldTo, "to", "refused: use --to-file (a number on the command line leaks into ps and shell history)")
	fs.Var(&sf.secrets.oldParams, "param", "refused: use --param-file (a param on the command line leaks into ps and shell history)")
	fs.StringVar(&n.Locale, "locale", "", "language tag such as en or pt-BR (default: the API's, en)")
	fs.DurationVar(&sf.expiresIn, "expires-in", 0, "expires_at as a duration from now, e.g. 10m")
	fs.StringVar(&sf.expiresAt, "expires-at", "", "expires_at as an RFC 3339 time")
}

// notification returns the notification the parsed flags describe, or what is wrong with the
// command line (rest is what the flags left over; c the common flags). It reads the secret
// files last, once the rest of the command line is known to be right.
func (sf *sendFlags) notification(rest []string, c *common) (client.Notification, string) {
	n := sf.n
	if err := sf.secrets.refused(); err != nil {
		return n, err.Error()
	}
	if len(rest) > 0 {
		return n, "send takes no arguments, only flags"
	}
	if err := c.check(); err != nil {
		return n, err.Error()
	}
	switch {
	case n.EventID == "" || n.Purpose == "":
		return n, "--event-id and --purpose are required"
	case (sf.expiresIn == 0) == (sf.expiresAt == ""):
		return n, "give one of --expires-in and --expires-at"
	case sf.expiresIn < 0:
		return n, "--expires-in must be positive"
	case sf.expiresIn > 0:
		// Whole seconds, so that the printed expires_at can be passed to --expires-at to
		// repeat the very same request.
		n.ExpiresAt = time.Now().Add(sf.expiresIn).Truncate(time.Second)
	default:
		t, err := time.Parse(time.RFC3339Nano, sf.expiresAt)
		if err != nil {
			return n, "--expires-at must be an RFC 3339 time"
		}
		n.ExpiresAt = t
	}
	to, params, err := sf.secrets.read()
	if err != nil {
		return n, err.Error()
	}
	n.To, n.Params = to, params
	return n, ""
}

func runKeyed(ctx context.Context, cmd string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var c common
	c.register(fs, getenv)
	var key string
	fs.StringVar(&key, "key", "", "idempotency key (or give it as the argument)")
	rest, err := parse(fs, args, stderr)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return usageError(fs, stderr, err.Error())
	}
	switch {
	case len(rest) == 1 && key == "":
		key = rest[0]
	case len(rest) > 1 || (len(rest) == 1 && key != ""):
		return usageError(fs, stderr, cmd+" takes one key")
	case key == "":
		return usageError(fs, stderr, cmd+" needs a key")
	}
	cl, err := c.newClient(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if cmd == "convert" {
		conv, err := cl.Convert(ctx, key)
		if err != nil {
			return report(c.output, stdout, err)
		}
		return printResult(c.output, stdout, conv.Status, conv)
	}
	call := cl.Status
	if cmd == "cancel" {
		call = cl.Cancel
	}
	st, err := call(ctx, key)
	if err != nil {
		return report(c.output, stdout, err)
	}
	return printResult(c.output, stdout, *st, st)
}
