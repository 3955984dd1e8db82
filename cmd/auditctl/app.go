package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// Environment variables auditctl reads besides the AWS SDK's own.
const (
	envAuditTable     = "AUDIT_TABLE"
	defaultAuditTable = "resetnotify-audit"
)

// app is one run of the CLI. Tests build it with their own streams, clock and client.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// terminal is true when stderr is a terminal: only then does export show progress.
	terminal bool
	newDB    func(ctx context.Context, endpoint string) (audit.QueryAPI, error)
}

const usage = `auditctl reads the resetnotify audit table. It never writes.

Usage:
  auditctl <command> [flags]

Commands:
  timeline  --event-id E                every transition of every notification of event E
  export    --from T --to T             entries with at in [from, to), streamed (--format jsonl or csv)
  verify    --event-id E | --from T --to T
                                        recompute the hash chains; exit 1 naming the first broken link
  evidence  --event-id E                plain-language report: accepted, attempts, when and why it stopped
  margin    --since D [--until T]       accepted→delivered latency (p50/p95/p99) and a recommended margin

Common flags:
  --table NAME        audit table (default $AUDIT_TABLE, else resetnotify-audit)
  --format FORMAT     table, json, jsonl or csv (evidence and verify: table or json)
  --endpoint-url URL  DynamoDB endpoint (default: the AWS SDK's, e.g. $AWS_ENDPOINT_URL_DYNAMODB)

Times are RFC 3339 (2030-03-01T09:00:00Z) or a UTC date (2030-03-01); --since also takes a
duration back from now (36h, 30d). Region and credentials come from the standard AWS
variables. Run 'auditctl <command> --help' for a command's flags.
`

type command struct {
	name    string
	summary string
	formats []string
	run     func(a *app, ctx context.Context, c *cmdline) error
}

var commands = []command{
	{"timeline", "auditctl timeline --event-id E [--format table|json|jsonl|csv]", []string{"table", "json", "jsonl", "csv"}, (*app).timeline},
	{"export", "auditctl export --from T --to T [--format jsonl|csv|json|table]", []string{"jsonl", "csv", "json", "table"}, (*app).export},
	{"verify", "auditctl verify (--event-id E | --from T --to T) [--format table|json]", []string{"table", "json"}, (*app).verify},
	{"evidence", "auditctl evidence --event-id E [--format table|json]", []string{"table", "json"}, (*app).evidence},
	{"margin", "auditctl margin --since D [--until T] [--format table|json|jsonl|csv]", []string{"table", "json", "jsonl", "csv"}, (*app).margin},
}

// cmdline holds a command's parsed flags.
type cmdline struct {
	table, format, endpoint string
	eventID                 string
	from, to, since, until  string
	set                     map[string]bool
	reader                  *audit.Reader
}

func (a *app) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(a.stdout, usage)
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return a.runCommand(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(a.stderr, "auditctl: unknown command %q\n\n%s", args[0], usage)
	return errUsage
}

func (a *app) runCommand(ctx context.Context, c command, args []string) error {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	cl := &cmdline{}
	table := a.getenv(envAuditTable)
	if table == "" {
		table = defaultAuditTable
	}
	fs.StringVar(&cl.table, "table", table, "audit table `name`")
	fs.StringVar(&cl.format, "format", c.formats[0], "output `format`: "+strings.Join(c.formats, ", "))
	fs.StringVar(&cl.endpoint, "endpoint-url", "", "DynamoDB endpoint `URL` (default: the AWS SDK's)")
	switch c.name {
	case "timeline", "evidence":
		fs.StringVar(&cl.eventID, "event-id", "", "the event `ID`")
	case "export":
		fs.StringVar(&cl.from, "from", "", "start `time`, inclusive")
		fs.StringVar(&cl.to, "to", "", "end `time`, exclusive")
	case "verify":
		fs.StringVar(&cl.eventID, "event-id", "", "verify the chains of the event `ID`")
		fs.StringVar(&cl.from, "from", "", "verify every chain with an entry at or after `time`")
		fs.StringVar(&cl.to, "to", "", "... and before `time`")
	case "margin":
		fs.StringVar(&cl.since, "since", "", "start `time` (or a duration back from now: 30d, 36h)")
		fs.StringVar(&cl.until, "until", "", "end `time`, exclusive (default now)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", c.summary)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(a.stdout)
			fs.Usage()
			return nil
		}
		return errUsage
	}
	cl.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cl.set[f.Name] = true })
	bad := func(format string, args ...any) error {
		fmt.Fprintf(a.stderr, "auditctl %s: %s\n", c.name, fmt.Sprintf(format, args...))
		fs.Usage()
		return errUsage
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if !contains(c.formats, cl.format) {
		return bad("--format must be one of %s", strings.Join(c.formats, ", "))
	}
	switch c.name {
	case "timeline", "evidence":
		if cl.eventID == "" {
			return bad("--event-id is required")
		}
	case "export":
		if cl.from == "" || cl.to == "" {
			return bad("--from and --to are required")
		}
	case "verify":
		byEvent, byRange := cl.eventID != "", cl.from != "" || cl.to != ""
		if byEvent == byRange || (byRange && (cl.from == "" || cl.to == "")) {
			return bad("give either --event-id, or both --from and --to")
		}
	case "margin":
		if cl.since == "" {
			return bad("--since is required")
		}
	}
	db, err := a.newDB(ctx, cl.endpoint)
	if err != nil {
		return err
	}
	cl.reader = &audit.Reader{DB: db, Table: cl.table}
	return c.run(a, ctx, cl)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// parseTime reads an RFC 3339 time or a UTC date. With relative set it also reads a duration
// back from now: Go's (36h, 90m) or whole days (30d).
func (a *app) parseTime(flagName, s string, relative bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(audit.DayLayout, s); err == nil {
		return t, nil
	}
	if relative {
		if n, ok := strings.CutSuffix(s, "d"); ok {
			if days, err := strconv.Atoi(n); err == nil && days >= 0 {
				return a.now().UTC().AddDate(0, 0, -days), nil
			}
		}
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			return a.now().UTC().Add(-d), nil
		}
	}
	what := "an RFC 3339 time or a date (YYYY-MM-DD)"
	if relative {
		what += " or a duration (30d, 36h)"
	}
	fmt.Fprintf(a.stderr, "auditctl: --%s must be %s\n", flagName, what)
	return time.Time{}, errUsage
}

func (a *app) timeRange(c *cmdline) (from, to time.Time, err error) {
	if from, err = a.parseTime("from", c.from, false); err != nil {
		return
	}
	if to, err = a.parseTime("to", c.to, false); err != nil {
		return
	}
	if !from.Before(to) {
		fmt.Fprintln(a.stderr, "auditctl: --from must be before --to")
		err = errUsage
	}
	return
}

func (a *app) timeline(ctx context.Context, c *cmdline) error {
	entries, err := c.reader.Timeline(ctx, c.eventID)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("no audit entries for event %s in table %s", c.eventID, c.table)
	}
	out := bufio.NewWriter(a.stdout)
	w := newEntryWriter(c.format, out)
	for _, e := range entries {
		if err := w.Write(e); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return out.Flush()
}

// progressEvery is how many exported entries pass between two progress updates.
const progressEvery = 500

func (a *app) export(ctx context.Context, c *cmdline) error {
	from, to, err := a.timeRange(c)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(a.stdout)
	w := newEntryWriter(c.format, out)
	n := 0
	for e, err := range c.reader.Range(ctx, from, to) {
		if err != nil {
			return err
		}
		if err := w.Write(e); err != nil {
			return err
		}
		n++
		if a.terminal && n%progressEvery == 0 {
			fmt.Fprintf(a.stderr, "\rexport: %d entries, at %s", n, tables.FormatTime(e.At))
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if a.terminal {
		fmt.Fprintf(a.stderr, "\rexport: %d entries from %s to %s\n", n, tables.FormatTime(from), tables.FormatTime(to))
	}
	return out.Flush()
}

func (a *app) verify(ctx context.Context, c *cmdline) error {
	var entries []audit.Entry
	var err error
	scope := "event " + c.eventID
	if c.eventID != "" {
		entries, err = c.reader.Timeline(ctx, c.eventID)
	} else {
		var from, to time.Time
		if from, to, err = a.timeRange(c); err != nil {
			return err
		}
		scope = fmt.Sprintf("%s to %s", tables.FormatTime(from), tables.FormatTime(to))
		entries, err = c.reader.ChainsIn(ctx, from, to)
	}
	if err != nil {
		return err
	}
	r := verifyReport{Scope: scope, Notifications: len(audit.Chains(entries)), Entries: len(entries), Problems: audit.Verify(entries)}
	if err := writeVerify(a.stdout, c.format, r); err != nil {
		return err
	}
	if len(r.Problems) > 0 || (c.eventID != "" && r.Entries == 0) {
		return errVerifyFailed
	}
	return nil
}

func (a *app) evidence(ctx context.Context, c *cmdline) error {
	entries, err := c.reader.Timeline(ctx, c.eventID)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("no audit entries for event %s in table %s", c.eventID, c.table)
	}
	return writeEvidence(a.stdout, c.format, audit.BuildEvidence(c.eventID, entries))
}

func (a *app) margin(ctx context.Context, c *cmdline) error {
	since, err := a.parseTime("since", c.since, true)
	if err != nil {
		return err
	}
	until := a.now().UTC()
	if c.until != "" {
		if until, err = a.parseTime("until", c.until, false); err != nil {
			return err
		}
	}
	if !since.Before(until) {
		fmt.Fprintln(a.stderr, "auditctl: --since must be before --until")
		return errUsage
	}
	var s audit.MarginSampler
	for e, err := range c.reader.Range(ctx, since, until) {
		if err != nil {
			return err
		}
		s.Add(e)
	}
	return writeMargin(a.stdout, c.format, marginReport{Since: since, Until: until, MarginReport: s.Report()})
}
