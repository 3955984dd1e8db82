// Command prefixctl lets an operator see and override the conversion guard's decisions on
// number prefixes (docs/abuse-guards.md, "Conversion guard"):
//
//	prefixctl list    --table T
//	prefixctl history --table T --prefix-fp FP
//	prefixctl block   --table T --prefix-fp FP --for 12h --note "pumping seen on the dashboard"
//	prefixctl allow   --table T --prefix-fp FP --for 24h --note "partner's test range"
//
// A prefix is named by its keyed fingerprint, as the list, the dispatch function's "prefix
// blocked" log line and the conversion table show it; its digits are never stored, so they
// cannot be looked up. block refuses new admissions in the prefix (429 prefix-blocked) for the
// period; allow keeps the automatic block off it for the period, at most a week
// (notify.MaxOverride). Either replaces the decision in force, and is kept in the prefix's
// history with who (the caller's AWS identity, from sts:GetCallerIdentity: it cannot be given)
// and why (--note, required, which explains but never names who). The table is the stack's ConversionTableName output (CONVERSION_TABLE). AWS
// endpoint, region and credentials come from the standard AWS environment. Exit status 0, 1
// when a call failed, 2 for a usage error.
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
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/notify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, defaultDeps)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "prefixctl:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usage = `usage:
  prefixctl list    --table T
  prefixctl history --table T --prefix-fp FP
  prefixctl block   --table T --prefix-fp FP --for 12h --note WHY
  prefixctl allow   --table T --prefix-fp FP --for 24h --note WHY`

// deps are what prefixctl reaches outside: the conversion store and who the caller is.
type deps struct {
	store  func(ctx context.Context, table string) (*convstore.Store, error)
	caller func(ctx context.Context) (string, error)
	clock  notify.Clock
}

var defaultDeps = deps{
	store: func(ctx context.Context, table string) (*convstore.Store, error) {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("aws config: %w", err)
		}
		return convstore.New(awsclient.DynamoDB(cfg, ""), table, notify.DefaultConversionPolicy().Window), nil
	},
	caller: func(ctx context.Context) (string, error) {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return "", fmt.Errorf("aws config: %w", err)
		}
		out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return "", fmt.Errorf("who am I (sts:GetCallerIdentity): %w", err)
		}
		return aws.ToString(out.Arn), nil
	},
	clock: notify.SystemClock{},
}

// flags are every command's flags.
type flags struct {
	table, prefixFP, note string
	period                time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, d deps) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errUsage
	}
	cmd := args[0]
	fs := flag.NewFlagSet("prefixctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f flags
	fs.StringVar(&f.table, "table", os.Getenv("CONVERSION_TABLE"), "the conversion table (default $CONVERSION_TABLE)")
	fs.StringVar(&f.prefixFP, "prefix-fp", "", "the prefix's fingerprint")
	fs.StringVar(&f.note, "note", "", "why (kept in the history)")
	fs.DurationVar(&f.period, "for", 0, "how long the decision holds, e.g. 12h; at most "+notify.MaxOverride.String())
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := f.check(cmd); err != nil {
		fmt.Fprintln(stderr, "prefixctl:", err)
		fmt.Fprintln(stderr, usage)
		return errUsage
	}
	store, err := d.store(ctx, f.table)
	if err != nil {
		return err
	}
	switch cmd {
	case "list":
		all, err := store.Decisions(ctx)
		if err != nil {
			return err
		}
		return print(stdout, all, d.clock.Now())
	case "history":
		all, err := store.History(ctx, f.prefixFP)
		if err != nil {
			return err
		}
		return print(stdout, all, d.clock.Now())
	}
	return decide(ctx, stdout, store, f, cmd == "allow", d)
}

// check reports what the command line lacks for cmd.
func (f flags) check(cmd string) error {
	switch cmd {
	case "list", "history", "block", "allow":
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	switch {
	case f.table == "":
		return errors.New("--table (or CONVERSION_TABLE) is required")
	case cmd != "list" && f.prefixFP == "":
		return errors.New("--prefix-fp is required")
	case (cmd == "block" || cmd == "allow") && (f.period <= 0 || f.note == ""):
		return errors.New("block and allow need --for (a positive duration) and --note")
	case f.period > notify.MaxOverride:
		return fmt.Errorf("--for is at most %s; decide again when it ends", notify.MaxOverride)
	}
	return nil
}

// decide writes the operator's block or allow, by the caller's STS identity, and prints it.
func decide(ctx context.Context, w io.Writer, store *convstore.Store, f flags, allow bool, d deps) error {
	by, err := d.caller(ctx)
	if err != nil {
		return err
	}
	conv := &notify.Conversions{Store: store, Policy: notify.DefaultConversionPolicy(), Clock: d.clock}
	b, err := conv.Override(ctx, f.prefixFP, allow, f.period, by, f.note)
	if err != nil {
		return err
	}
	return print(w, []notify.PrefixBlock{b}, d.clock.Now())
}

// print writes decisions as a table: prefix, decision, in force or ended, until, by, why.
func print(w io.Writer, all []notify.PrefixBlock, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "prefix_fp\tdecision\tin_force\tuntil\tby\tat\tsent\tconverted\tnote")
	for _, b := range all {
		kind := "block"
		if b.Allow {
			kind = "allow"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%d\t%d\t%s\n", b.PrefixFP, kind, now.Before(b.Until),
			b.Until.UTC().Format(time.RFC3339), b.By, b.At.UTC().Format(time.RFC3339), b.Counts.Sent, b.Counts.Converted, b.Note)
	}
	return tw.Flush()
}
