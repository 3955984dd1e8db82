package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/auditor"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
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
	newDB    func(ctx context.Context, endpoint string) (auditlog.QueryAPI, error)
	// newKMS returns the KMS client that fetches a digest key's public half.
	newKMS func(ctx context.Context) (auditor.PublicKeyAPI, error)
	// newS3 returns the S3 client that reads the archive (nil: the table alone is read).
	newS3     func(ctx context.Context) (auditor.ArchiveAPI, error)
	readFile  func(name string) ([]byte, error)
	writeFile func(name string, data []byte) error
}

const usage = `auditctl reads the resetnotify audit trail: the audit table, and the archive bucket for
the periods outside the hot window. It never writes.

Usage:
  auditctl <command> [flags]

Commands:
  timeline    --event-id E              every transition of every notification of event E
  export      --from T --to T           what verify needs for [from, to): digests and whole chains
                                        (--format jsonl or json; csv and table hold the entries only)
  verify      --from T --to T [--input FILE] | --event-id E | --proof FILE
                                        check the signed digests, their chain, each digest against
                                        the entries and every hash chain; exit 1 naming what is wrong
                                        (a digest only late: a warning, exit 0); --input checks an
                                        export file for the range asked; --proof an evidence proof
  evidence    --event-id E [--proof FILE]
                                        plain-language report: accepted, attempts, when and why it
                                        stopped, and whether verified digests cover its entries;
                                        --proof writes each entry's inclusion proof to FILE
  public-key                            print the digests' public key (PEM) for offline verification
  margin      --since D [--until T]     accepted→delivered latency (p50/p95/p99) and a recommended margin
  archive status [--from T --to T]      archived periods (objects, entries, retention) and the
                                        digested periods not archived yet

Common flags:
  --table NAME        audit table (default $AUDIT_TABLE, else resetnotify-audit)
  --format FORMAT     table, json, jsonl or csv (evidence and verify: table or json)
  --endpoint-url URL  DynamoDB endpoint (default: the AWS SDK's, e.g. $AWS_ENDPOINT_URL_DYNAMODB)
  --public-key FILE   the digests' public key, PEM (default $AUDIT_DIGEST_PUBLIC_KEY)
  --key-id KEY        or the KMS key that signs them (default $AUDIT_DIGEST_KMS_KEY_ID)

Entries of a period whose start is more than $AUDIT_HOT_DAYS (default 35; 0: table only) ago
are read from the archive when the period is archived; each command says on stderr what it read.
timeline and evidence search the archive around the entries the table still holds, or over
--from/--to when it holds none.

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
	{"verify", "auditctl verify (--from T --to T [--input FILE] | --event-id E | --proof FILE) [--public-key FILE | --key-id KEY] [--format table|json]", []string{"table", "json"}, (*app).verify},
	{"evidence", "auditctl evidence --event-id E [--proof FILE] [--public-key FILE | --key-id KEY] [--format table|json]", []string{"table", "json"}, (*app).evidence},
	{"public-key", "auditctl public-key [--key-id KEY]", []string{"pem"}, (*app).publicKey},
	{"margin", "auditctl margin --since D [--until T] [--format table|json|jsonl|csv]", []string{"table", "json", "jsonl", "csv"}, (*app).margin},
	{"archive", "auditctl archive status [--from T --to T] [--format table|json]", []string{"table", "json"}, (*app).archiveStatus},
}

// cmdline holds a command's parsed flags.
type cmdline struct {
	table, format, endpoint string
	eventID                 string
	from, to, since, until  string
	input, keyFile, keyID   string
	proof                   string
	set                     map[string]bool
	reader                  *auditlog.Reader
	trail                   *auditor.Trail
	publicKey               *ecdsa.PublicKey
	// command names the command; sub is the subcommand (archive status).
	command, sub string
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

// runCommand parses c's flags from args, checks them and runs c, with a reader of the audit
// table unless c needs none.
func (a *app) runCommand(ctx context.Context, c command, args []string) error {
	fs, cl := a.commandFlags(c)
	if c.name == "archive" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cl.sub, args = args[0], args[1:]
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
	if problem := usageProblem(c, fs, cl); problem != "" {
		fmt.Fprintf(a.stderr, "auditctl %s: %s\n", c.name, problem)
		fs.Usage()
		return errUsage
	}
	// Offline verification and the public key need no access to the audit table.
	if cl.input == "" && c.name != "public-key" && (c.name != "verify" || cl.proof == "") {
		db, err := a.newDB(ctx, cl.endpoint)
		if err != nil {
			return err
		}
		cl.reader = &auditlog.Reader{DB: db, Table: cl.table}
		if cl.trail, err = a.newTrail(ctx, cl.reader); err != nil {
			return err
		}
	}
	return c.run(a, ctx, cl)
}

// newTrail returns the trail of the table r reads: with the archive for the periods outside
// the hot window ($AUDIT_HOT_DAYS, default config.DefaultAuditHotDays; 0: the table alone).
func (a *app) newTrail(ctx context.Context, r *auditlog.Reader) (*auditor.Trail, error) {
	t := &auditor.Trail{Reader: r, Now: a.now().UTC()}
	hot := time.Duration(config.DefaultAuditHotDays) * 24 * time.Hour
	if a.getenv(config.EnvAuditHotDays) != "" {
		var err error
		if hot, err = config.AuditHot(a.getenv); err != nil {
			fmt.Fprintf(a.stderr, "auditctl: %v\n", err)
			return nil, errUsage
		}
	}
	if hot <= 0 || a.newS3 == nil {
		return t, nil
	}
	api, err := a.newS3(ctx)
	if err != nil {
		return nil, err
	}
	t.S3, t.Hot = api, hot
	return t, nil
}

// saySources tells on stderr what c's trail read, when it could read the archive too.
func (a *app) saySources(c *cmdline) {
	if c.trail != nil && c.trail.S3 != nil {
		fmt.Fprintf(a.stderr, "auditctl %s: read %s\n", c.command, c.trail.Sources())
	}
}

// commandFlags returns the flag set of c, writing to stderr, and the cmdline it parses into.
func (a *app) commandFlags(c command) (*flag.FlagSet, *cmdline) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	cl := &cmdline{command: c.name}
	table := a.getenv(envAuditTable)
	if table == "" {
		table = defaultAuditTable
	}
	fs.StringVar(&cl.table, "table", table, "audit table `name`")
	fs.StringVar(&cl.format, "format", c.formats[0], "output `format`: "+strings.Join(c.formats, ", "))
	fs.StringVar(&cl.endpoint, "endpoint-url", "", "DynamoDB endpoint `URL` (default: the AWS SDK's)")
	switch c.name {
	case "timeline":
		fs.StringVar(&cl.eventID, "event-id", "", "the event `ID`")
		archiveSpanFlags(fs, cl)
	case "evidence":
		fs.StringVar(&cl.eventID, "event-id", "", "the event `ID`")
		fs.StringVar(&cl.proof, "proof", "", "also write every entry's inclusion proof to `file`, for verify --proof")
		archiveSpanFlags(fs, cl)
	case "archive":
		fs.StringVar(&cl.from, "from", "", "list the periods from `time`")
		fs.StringVar(&cl.to, "to", "", "... to `time` (exclusive)")
	case "export":
		fs.StringVar(&cl.from, "from", "", "start `time`, inclusive")
		fs.StringVar(&cl.to, "to", "", "end `time`, exclusive")
	case "verify":
		fs.StringVar(&cl.eventID, "event-id", "", "verify only the hash chains of the event `ID`")
		fs.StringVar(&cl.from, "from", "", "verify the digests and chains of the periods from `time`")
		fs.StringVar(&cl.to, "to", "", "... to `time` (exclusive)")
		fs.StringVar(&cl.input, "input", "", "verify an export `file` (auditctl export --format jsonl) offline, for the range of --from and --to")
		fs.StringVar(&cl.proof, "proof", "", "verify a proof `file` (auditctl evidence --proof) offline")
	case "public-key":
		fs.StringVar(&cl.keyID, "key-id", a.getenv(config.EnvAuditDigestKMSKeyID), "KMS `key` ID or ARN (default $"+config.EnvAuditDigestKMSKeyID+")")
	case "margin":
		fs.StringVar(&cl.since, "since", "", "start `time` (or a duration back from now: 30d, 36h)")
		fs.StringVar(&cl.until, "until", "", "end `time`, exclusive (default now)")
	}
	if c.name == "verify" || c.name == "evidence" {
		fs.StringVar(&cl.keyFile, "public-key", a.getenv(config.EnvAuditDigestPublicKey), "PEM `file` of the digests' public key (default $"+config.EnvAuditDigestPublicKey+")")
		fs.StringVar(&cl.keyID, "key-id", a.getenv(config.EnvAuditDigestKMSKeyID), "KMS `key` that signs the digests, to fetch its public key (default $"+config.EnvAuditDigestKMSKeyID+")")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nflags:\n", c.summary)
		fs.PrintDefaults()
	}
	return fs, cl
}

// archiveSpanFlags adds --from and --to to timeline and evidence: where to search the archive
// for the event when the table no longer holds any of its entries.
func archiveSpanFlags(fs *flag.FlagSet, cl *cmdline) {
	fs.StringVar(&cl.from, "from", "", "search the archive for the event's entries written from `time` (default: around the entries the table holds)")
	fs.StringVar(&cl.to, "to", "", "... to `time` (exclusive)")
}

// usageProblem says what is wrong with the parsed command line of c, or "" when nothing is.
func usageProblem(c command, fs *flag.FlagSet, cl *cmdline) string {
	if fs.NArg() > 0 {
		return fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	}
	if !contains(c.formats, cl.format) {
		return fmt.Sprintf("--format must be one of %s", strings.Join(c.formats, ", "))
	}
	switch c.name {
	case "timeline", "evidence":
		if cl.eventID == "" {
			return "--event-id is required"
		}
		if (cl.from == "") != (cl.to == "") {
			return "give both --from and --to, or neither"
		}
	case "archive":
		if cl.sub != "status" {
			return "the only archive command is: archive status"
		}
		if (cl.from == "") != (cl.to == "") {
			return "give both --from and --to, or neither"
		}
	case "export":
		if cl.from == "" || cl.to == "" {
			return "--from and --to are required"
		}
	case "verify":
		return verifyUsage(cl)
	case "margin":
		if cl.since == "" {
			return "--since is required"
		}
	}
	return ""
}

// verifyUsage says what is wrong with verify's scope: exactly one of a range (--from and --to,
// optionally with --input), --event-id and --proof. An export file is checked for the range
// the auditor asks for, never for the range line the file itself claims.
func verifyUsage(cl *cmdline) string {
	byEvent, byRange, byFile, byProof := cl.eventID != "", cl.from != "" || cl.to != "", cl.input != "", cl.proof != ""
	switch {
	case byProof && (byEvent || byRange || byFile):
		return "give --proof alone, without --from, --to, --input or --event-id"
	case byFile && byEvent:
		return "give --input with --from and --to, not with --event-id"
	case byFile && (cl.from == "" || cl.to == ""):
		return "give --input with --from and --to: the range you need the file to cover (its own range line is not signed)"
	case !byProof && (byEvent == byRange || (byRange && (cl.from == "" || cl.to == ""))):
		return "give both --from and --to, or --event-id, or --proof"
	}
	return ""
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
	if t, err := time.Parse(auditlog.DayLayout, s); err == nil {
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
	entries, err := a.eventTimeline(ctx, c)
	if err != nil {
		return err
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

// eventTimeline reads every entry of c's event from the trail: the table, and the archive
// over --from/--to or around the entries the table holds; it says what it read.
func (a *app) eventTimeline(ctx context.Context, c *cmdline) ([]auditlog.Entry, error) {
	var from, to time.Time
	if c.from != "" {
		var err error
		if from, to, err = a.timeRange(c); err != nil {
			return nil, err
		}
	}
	entries, err := c.trail.Timeline(ctx, c.eventID, from, to)
	if err != nil {
		return nil, err
	}
	a.saySources(c)
	if len(entries) == 0 {
		if c.from == "" && c.trail.S3 != nil {
			return nil, fmt.Errorf("no audit entries for event %s in table %s; entries of periods outside the hot window are in the archive: give --from and --to to search it", c.eventID, c.table)
		}
		return nil, fmt.Errorf("no audit entries for event %s in table %s or the archive searched", c.eventID, c.table)
	}
	return entries, nil
}

// export writes the bundle of [from, to): everything verify needs, so that `verify --input`
// on the file sees what verify sees online. jsonl and json hold the range, the digests and the
// entries; csv and table only the entries.
func (a *app) export(ctx context.Context, c *cmdline) error {
	from, to, err := a.timeRange(c)
	if err != nil {
		return err
	}
	b, err := auditor.CollectTrail(ctx, c.trail, from, to)
	if err != nil {
		return err
	}
	a.saySources(c)
	for _, p := range c.trail.Problems {
		fmt.Fprintf(a.stderr, "auditctl export: WARNING: %s\n", p)
	}
	out := bufio.NewWriter(a.stdout)
	if c.format == "jsonl" || c.format == "json" {
		err = writeBundle(out, c.format, b)
	} else {
		w := newEntryWriter(c.format, out)
		for _, e := range b.Entries {
			if err = w.Write(e); err != nil {
				return err
			}
		}
		err = w.Close()
	}
	if err != nil {
		return err
	}
	if a.terminal {
		fmt.Fprintf(a.stderr, "export: %d digests, %d entries for %s to %s\n", len(b.Digests), len(b.Entries), tables.FormatTime(from), tables.FormatTime(to))
	}
	return out.Flush()
}

func (a *app) verify(ctx context.Context, c *cmdline) error {
	switch {
	case c.eventID != "":
		return a.verifyEvent(ctx, c)
	case c.proof != "":
		return a.verifyProof(ctx, c)
	}
	opts, err := a.checkOptions(ctx, c, true)
	if err != nil {
		return err
	}
	c.publicKey = opts.PublicKey
	b, scope, err := a.bundle(ctx, c)
	if err != nil {
		return err
	}
	r := auditor.Check(b, opts)
	if c.trail != nil {
		r.Problems = append(c.trail.Problems, r.Problems...)
	}
	if err := writeCheck(a.stdout, c.format, scope, r); err != nil {
		return err
	}
	if !r.OK() {
		return errVerifyFailed
	}
	return nil
}

// bundle reads what verify checks: the export file of --input, or the bundle of --from/--to
// from the table.
func (a *app) bundle(ctx context.Context, c *cmdline) (auditor.Bundle, string, error) {
	var b auditor.Bundle
	if c.input != "" {
		raw, err := a.readFile(c.input)
		if err != nil {
			return b, "", fmt.Errorf("read %s: %w", c.input, err)
		}
		if b, err = auditor.ReadBundle(bytes.NewReader(raw)); err != nil {
			return b, "", fmt.Errorf("read %s: %w", c.input, err)
		}
		// The range asked for, not the file's own (unsigned) range line.
		if b.From, b.To, err = a.timeRange(c); err != nil {
			return b, "", err
		}
		return b, fmt.Sprintf("%s (%s to %s)", c.input, tables.FormatTime(b.From), tables.FormatTime(b.To)), nil
	}
	from, to, err := a.timeRange(c)
	if err != nil {
		return b, "", err
	}
	c.trail.PublicKey = c.publicKey
	b, err = auditor.CollectTrail(ctx, c.trail, from, to)
	a.saySources(c)
	return b, fmt.Sprintf("%s to %s", tables.FormatTime(from), tables.FormatTime(to)), err
}

// checkOptions returns what Check needs: the public key (required when need is set), the
// clock, and the digest period, grace and lag bound from the environment. An export file
// (--input) gets no lag allowance: it must hold every digest of the range that is due.
func (a *app) checkOptions(ctx context.Context, c *cmdline, need bool) (auditor.CheckOptions, error) {
	s, err := config.LoadDigest(a.getenv)
	if err != nil {
		return auditor.CheckOptions{}, err
	}
	o := auditor.CheckOptions{Now: a.now().UTC(), Grace: s.Grace, Period: s.Period, LagBound: s.LagBound, Strict: c.input != ""}
	switch {
	case c.keyFile != "":
		raw, err := a.readFile(c.keyFile)
		if err != nil {
			return o, fmt.Errorf("read %s: %w", c.keyFile, err)
		}
		if o.PublicKey, err = auditor.ParsePublicKeyPEM(raw); err != nil {
			return o, fmt.Errorf("%s: %w", c.keyFile, err)
		}
	case c.keyID != "":
		api, err := a.newKMS(ctx)
		if err != nil {
			return o, err
		}
		if o.PublicKey, err = auditor.KMSPublicKey(ctx, api, c.keyID); err != nil {
			return o, err
		}
	case need:
		fmt.Fprintln(a.stderr, "auditctl: the digests' public key is needed: give --public-key FILE (auditctl public-key prints it) or --key-id KEY")
		return o, errUsage
	}
	return o, nil
}

// verifyEvent checks only the hash chains of one event, as before digests existed.
func (a *app) verifyEvent(ctx context.Context, c *cmdline) error {
	entries, err := c.trail.Timeline(ctx, c.eventID, time.Time{}, time.Time{})
	if err != nil {
		return err
	}
	a.saySources(c)
	r := verifyReport{Scope: "event " + c.eventID, Notifications: len(auditlog.Chains(entries)), Entries: len(entries),
		Problems: auditor.Verify(entries), KnownGaps: auditor.KnownGaps(entries)}
	if err := writeVerify(a.stdout, c.format, r); err != nil {
		return err
	}
	if len(r.Problems) > 0 || r.Entries == 0 {
		return errVerifyFailed
	}
	return nil
}

// evidence writes the evidence report of the event and, with --proof, the proof file. With a
// public key (or --proof) it reads the digests of the periods the event's entries were
// written in, and for each version 2 digest among them the whole period's entries, to build
// the inclusion proofs (auditor.BuildProof).
func (a *app) evidence(ctx context.Context, c *cmdline) error {
	entries, err := a.eventTimeline(ctx, c)
	if err != nil {
		return err
	}
	ev := auditor.BuildEvidence(c.eventID, entries)
	opts, err := a.checkOptions(ctx, c, false)
	if err != nil {
		return err
	}
	var ds []auditlog.Digest
	var p auditor.Proof
	if opts.PublicKey != nil || c.proof != "" {
		from, to := writtenSpan(entries)
		if ds, err = auditor.DigestsCovering(ctx, c.reader.DB, c.reader.Table, from, to); err != nil {
			return err
		}
		c.trail.PublicKey = opts.PublicKey
		if p, err = auditor.BuildProofTrail(ctx, c.trail, c.eventID, entries, ds); err != nil {
			return err
		}
		c.trail.CheckChain(ds)
		for _, pr := range c.trail.Problems {
			fmt.Fprintf(a.stderr, "auditctl evidence: WARNING: %s\n", pr)
		}
	}
	if c.proof != "" {
		if err := a.writeProof(c.proof, p); err != nil {
			return err
		}
	}
	ev.AddCoverage(auditor.Coverage(entries, ds, opts, p))
	return writeEvidence(a.stdout, c.format, ev)
}

// writeProof writes p to file and says on stderr how many entries it proves.
func (a *app) writeProof(file string, p auditor.Proof) error {
	raw, err := auditor.ProofJSON(p)
	if err != nil {
		return err
	}
	if err := a.writeFile(file, raw); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	unproven := 0
	for _, ep := range p.Entries {
		if ep.Unproven != "" {
			unproven++
		}
	}
	if unproven > 0 {
		fmt.Fprintf(a.stderr, "auditctl evidence: %s of %d in %s have no proof yet (their period is open, or no longer matches its digest): see \"unproven\"\n",
			plural(unproven, "entry"), len(p.Entries), file)
	}
	return nil
}

// verifyProof checks a proof file (evidence --proof) with the public key alone.
func (a *app) verifyProof(ctx context.Context, c *cmdline) error {
	opts, err := a.checkOptions(ctx, c, true)
	if err != nil {
		return err
	}
	raw, err := a.readFile(c.proof)
	if err != nil {
		return fmt.Errorf("read %s: %w", c.proof, err)
	}
	p, err := auditor.ReadProof(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", c.proof, err)
	}
	r := auditor.CheckProof(p, opts.PublicKey)
	if err := writeProofReport(a.stdout, c.format, c.proof, r); err != nil {
		return err
	}
	if !r.OK() {
		return errVerifyFailed
	}
	return nil
}

// writtenSpan returns the span of the entries' written_at.
func writtenSpan(entries []auditlog.Entry) (from, to time.Time) {
	for _, e := range entries {
		if e.WrittenAt.IsZero() {
			continue
		}
		if from.IsZero() || e.WrittenAt.Before(from) {
			from = e.WrittenAt
		}
		if !e.WrittenAt.Before(to) {
			to = e.WrittenAt.Add(time.Nanosecond)
		}
	}
	return from, to
}

// publicKey prints the digests' public key as PEM: fetched from KMS with --key-id, or read
// from $AUDIT_DIGEST_PUBLIC_KEY (the local stack's file).
func (a *app) publicKey(ctx context.Context, c *cmdline) error {
	c.keyFile = a.getenv(config.EnvAuditDigestPublicKey)
	if c.keyID != "" {
		c.keyFile = ""
	}
	if c.keyID == "" && c.keyFile == "" {
		fmt.Fprintf(a.stderr, "auditctl public-key: give --key-id KEY (the stack output DigestKeyArn) or set $%s\n", config.EnvAuditDigestPublicKey)
		return errUsage
	}
	o, err := a.checkOptions(ctx, c, true)
	if err != nil {
		return err
	}
	p, err := digest.PublicKeyPEM(o.PublicKey)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(p)
	return err
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
	var s auditor.MarginSampler
	for e, err := range c.trail.Range(ctx, since, until) {
		if err != nil {
			return err
		}
		s.Add(e)
	}
	return writeMargin(a.stdout, c.format, marginReport{Since: since, Until: until, MarginReport: s.Report()})
}

// archiveStatus lists the archived periods (objects, entries, retention, when archived) and
// the digested periods not archived yet, of --from/--to or of the whole table.
func (a *app) archiveStatus(ctx context.Context, c *cmdline) error {
	var from, to time.Time
	if c.from != "" {
		var err error
		if from, to, err = a.timeRange(c); err != nil {
			return err
		}
	}
	st, err := auditor.ReadArchiveStatus(ctx, c.reader, from, to, c.trail.Hot, a.now().UTC())
	if err != nil {
		return err
	}
	return writeArchiveStatus(a.stdout, c.format, st)
}
