package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/resetnotify/resetnotify/auditor"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// entryWriter prints entries one at a time in one format.
type entryWriter interface {
	Write(e auditlog.Entry) error
	Close() error
}

// newEntryWriter returns the writer for format: "table", "json", "jsonl" or "csv". The json,
// jsonl and csv formats carry every stored field under its attribute name, in canonical order,
// so an export holds everything needed to recompute the chains.
func newEntryWriter(format string, w io.Writer) entryWriter {
	switch format {
	case "json":
		return &jsonWriter{w: w}
	case "jsonl":
		return &jsonWriter{w: w, lines: true}
	case "csv":
		return &csvWriter{w: csv.NewWriter(w)}
	default:
		return newTableWriter(w)
	}
}

// entryJSON returns e as a JSON object with its fields in canonical order.
func entryJSON(e auditlog.Entry) []byte { return auditlog.EntryJSON(e) }

// writeBundle writes an export's bundle as JSON lines, or as one JSON array of the same
// records.
func writeBundle(w io.Writer, format string, b auditor.Bundle) error {
	records := auditor.BundleRecords(b)
	sep, end := "\n", "\n"
	if format == "json" {
		sep, end = ",\n  ", "\n]\n"
		if _, err := io.WriteString(w, "[\n  "); err != nil {
			return err
		}
	}
	for i, r := range records {
		if i > 0 && format == "json" {
			if _, err := io.WriteString(w, sep); err != nil {
				return err
			}
		}
		if _, err := w.Write(r); err != nil {
			return err
		}
		if format != "json" {
			if _, err := io.WriteString(w, sep); err != nil {
				return err
			}
		}
	}
	if format == "json" {
		_, err := io.WriteString(w, end)
		return err
	}
	return nil
}

type jsonWriter struct {
	w     io.Writer
	lines bool
	n     int
	err   error
}

func (j *jsonWriter) Write(e auditlog.Entry) error {
	if j.err != nil {
		return j.err
	}
	switch {
	case j.lines:
	case j.n == 0:
		_, j.err = io.WriteString(j.w, "[\n  ")
	default:
		_, j.err = io.WriteString(j.w, ",\n  ")
	}
	if j.err == nil {
		_, j.err = j.w.Write(entryJSON(e))
	}
	if j.err == nil && j.lines {
		_, j.err = io.WriteString(j.w, "\n")
	}
	j.n++
	return j.err
}

func (j *jsonWriter) Close() error {
	if j.err != nil || j.lines {
		return j.err
	}
	if j.n == 0 {
		_, j.err = io.WriteString(j.w, "[]\n")
	} else {
		_, j.err = io.WriteString(j.w, "\n]\n")
	}
	return j.err
}

type csvWriter struct {
	w      *csv.Writer
	header bool
}

func (c *csvWriter) Write(e auditlog.Entry) error {
	if !c.header {
		c.header = true
		if err := c.w.Write(auditlog.ColumnNames()); err != nil {
			return err
		}
	}
	cols := e.Columns()
	row := make([]string, len(cols))
	for i, col := range cols {
		row[i] = col.Value
	}
	return c.w.Write(row)
}

func (c *csvWriter) Close() error {
	if !c.header {
		if err := c.w.Write(auditlog.ColumnNames()); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

// tableWriter prints aligned columns for people; hashes are shortened to 12 digits.
type tableWriter struct {
	tw *tabwriter.Writer
	n  int
}

func newTableWriter(w io.Writer) *tableWriter {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tEVENT\tNOTIFICATION\tV\tFROM\tTO\tREASON\tATTEMPT\tPROVIDER\tMESSAGE_ID\tPOLICY\tMARGIN\tHASH")
	return &tableWriter{tw: tw}
}

func (t *tableWriter) Write(e auditlog.Entry) error {
	t.n++
	_, err := fmt.Fprintf(t.tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n",
		displayTime(e.At), e.EventID, e.NotificationID, e.Version, stateName(e.FromState), e.ToState, e.Reason,
		e.Attempt, dash(e.Provider), dash(e.ProviderMessageID), dash(e.PolicyVersion),
		displayMS(e.SafetyMarginMS), short(e.Hash))
	return err
}

func (t *tableWriter) Close() error { return t.tw.Flush() }

// displayTime prints a time for people: UTC, milliseconds.
func displayTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func displayMS(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

func stateName(s notify.State) string {
	if s == notify.StateNone {
		return "∅"
	}
	return string(s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// verifyReport is what verify found.
type verifyReport struct {
	Scope         string             `json:"scope"`
	OK            bool               `json:"ok"`
	Notifications int                `json:"notifications"`
	Entries       int                `json:"entries"`
	Problems      []auditor.Problem  `json:"problems"`
	KnownGaps     []auditor.KnownGap `json:"known_gaps,omitempty"`
}

func writeVerify(w io.Writer, format string, r verifyReport) error {
	r.OK = len(r.Problems) == 0 && r.Entries > 0
	if r.Problems == nil {
		r.Problems = []auditor.Problem{}
	}
	if format == "json" {
		return writeJSON(w, r)
	}
	var b strings.Builder
	switch {
	case r.Entries == 0:
		fmt.Fprintf(&b, "NOTHING TO VERIFY: no audit entries for %s.\n", r.Scope)
	case r.OK:
		fmt.Fprintf(&b, "OK: %s: %s, %s; every chain is intact.\n", r.Scope, plural(r.Notifications, "notification"), plural(r.Entries, "entry"))
	default:
		fmt.Fprintf(&b, "BROKEN: %s: first broken link: %s\n", r.Scope, r.Problems[0])
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
		fmt.Fprintf(&b, "%s; %s, %s checked.\n", plural(len(r.Problems), "problem"), plural(r.Notifications, "notification"), plural(r.Entries, "entry"))
	}
	writeGaps(&b, r.KnownGaps)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGaps(b *strings.Builder, gaps []auditor.KnownGap) {
	if len(gaps) == 0 {
		return
	}
	fmt.Fprintf(b, "KNOWN GAPS (recorded, not hidden): %s\n", plural(len(gaps), "gap"))
	for _, g := range gaps {
		fmt.Fprintf(b, "  %s\n", g)
	}
}

// checkReport is what verify --from/--to or --input found.
type checkReport struct {
	Scope string `json:"scope"`
	OK    bool   `json:"ok"`
	auditor.Report
}

// writeCheck prints a digest and chain verification: one plain sentence per problem, the
// first one on the first line.
func writeCheck(w io.Writer, format, scope string, r auditor.Report) error {
	if r.Problems == nil {
		r.Problems = []auditor.Problem{}
	}
	if r.KnownGaps == nil {
		r.KnownGaps = []auditor.KnownGap{}
	}
	if r.Late == nil {
		r.Late = []auditor.Problem{}
	}
	if format == "json" {
		return writeJSON(w, checkReport{Scope: scope, OK: r.OK(), Report: r})
	}
	var b strings.Builder
	summary := fmt.Sprintf("%s, %s, %s; %s covered by verified signed digests",
		plural(r.Digests, "digest"), plural(r.Notifications, "notification"), plural(r.Entries, "entry"), plural(r.Covered, "entry"))
	if r.OK() {
		fmt.Fprintf(&b, "OK: %s: %s; every digest is signed and chained, and every chain is intact.\n", scope, summary)
	} else {
		fmt.Fprintf(&b, "BROKEN: %s: %s\n", scope, r.Problems[0])
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
		fmt.Fprintf(&b, "%s; %s.\n", plural(len(r.Problems), "problem"), summary)
	}
	for _, p := range r.Late {
		fmt.Fprintf(&b, "LATE (a warning, not an error): %s\n", p)
	}
	if r.Open > 0 {
		fmt.Fprintf(&b, "NOT YET COVERED: %s written since %s, in a period that is still open (not an error).\n",
			plural(r.Open, "entry"), r.OpenSince.UTC().Format(time.RFC3339))
	}
	writeGaps(&b, r.KnownGaps)
	_, err := io.WriteString(w, b.String())
	return err
}

// proofReport is what verify --proof found.
type proofReport struct {
	Scope string `json:"scope"`
	OK    bool   `json:"ok"`
	auditor.ProofReport
}

// writeProofReport prints the check of a proof file: OK with the digests the entries are
// proven in, or BROKEN with one sentence per problem.
func writeProofReport(w io.Writer, format, scope string, r auditor.ProofReport) error {
	if r.Problems == nil {
		r.Problems = []auditor.Problem{}
	}
	if format == "json" {
		return writeJSON(w, proofReport{Scope: scope, OK: r.OK(), ProofReport: r})
	}
	var b strings.Builder
	summary := fmt.Sprintf("event %s: %s of %d proven in %s", r.EventID, plural(r.Proven, "entry"), r.Entries, plural(len(r.Digests), "signed digest"))
	switch {
	case r.OK():
		fmt.Fprintf(&b, "OK: %s: %s (%s); every entry's path leads to its period's signed root and every chain is intact.\n", scope, summary, strings.Join(r.Digests, "; "))
	case len(r.Problems) == 0:
		fmt.Fprintf(&b, "BROKEN: %s: the proof holds no entry.\n", scope)
	default:
		fmt.Fprintf(&b, "BROKEN: %s: %s\n", scope, r.Problems[0])
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
		fmt.Fprintf(&b, "%s; %s.\n", plural(len(r.Problems), "problem"), summary)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeEvidence prints the evidence report as plain language ("table") or JSON.
func writeEvidence(w io.Writer, format string, ev auditor.Evidence) error {
	if format == "json" {
		return writeJSON(w, ev)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Evidence for event %s: %s.\n", ev.EventID, plural(len(ev.Notifications), "notification"))
	for _, n := range ev.Notifications {
		fmt.Fprintf(&b, "\nNotification %s (idempotency key %s)\n", n.NotificationID, n.IdempotencyKey)
		writeAdmission(&b, n)
		writeAttempts(&b, n)
		writeStop(&b, n)
		writeChain(&b, n)
		writeCoverage(&b, n.Digests)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAdmission says how n arrived, under which policy, and to which destination fingerprint.
func writeAdmission(b *strings.Builder, n auditor.NotificationEvidence) {
	policy := fmt.Sprintf("policy %s with a safety margin of %s", dash(n.PolicyVersion), displayMS(n.SafetyMarginMS))
	switch a := n.Admission; {
	case a == nil:
		fmt.Fprintf(b, "  Admission: not in the audit trail (the chain is incomplete); %s.\n", policy)
	case a.Reason == notify.ReasonAdmitted:
		fmt.Fprintf(b, "  Accepted at %s under %s.\n", displayTime(a.At), policy)
	default:
		fmt.Fprintf(b, "  Arrived at %s under %s: %s (%s).\n", displayTime(a.At), policy, a.Says, a.Reason)
	}
	if n.DestinationFP != "" {
		fmt.Fprintf(b, "  Destination fingerprint: %s (the number itself is never stored).\n", n.DestinationFP)
	}
}

// writeAttempts lists n's provider attempts and their steps.
func writeAttempts(b *strings.Builder, n auditor.NotificationEvidence) {
	for _, at := range n.Attempts {
		fmt.Fprintf(b, "  Attempt %d: a worker took the lease at %s.\n", at.Number, displayTime(at.Started))
		if len(at.Steps) == 0 {
			fmt.Fprintf(b, "    No outcome recorded yet.\n")
		}
		for _, s := range at.Steps {
			fmt.Fprintf(b, "    %s  %s (%s)%s.\n", displayTime(s.At), s.Says, s.Reason, providerNote(s))
		}
	}
	if len(n.Attempts) == 0 && n.Admission != nil && n.Admission.Reason == notify.ReasonAdmitted {
		fmt.Fprintf(b, "  No provider attempt was made.\n")
	}
}

// writeStop says where n stands: stopped, stopped sending, or still open, and whether its
// record was removed.
func writeStop(b *strings.Builder, n auditor.NotificationEvidence) {
	switch l := n.Last; {
	case l == nil:
	case n.Final:
		fmt.Fprintf(b, "  Stopped at %s: %s, because %s (%s).\n", displayTime(l.At), l.To, l.Says, l.Reason)
	case n.Stopped:
		fmt.Fprintf(b, "  Sending stopped at %s: %s, because %s (%s); no delivery receipt is recorded yet.\n", displayTime(l.At), l.To, l.Says, l.Reason)
	default:
		fmt.Fprintf(b, "  Still open: %s since %s, because %s (%s).\n", l.To, displayTime(l.At), l.Says, l.Reason)
	}
	if p := n.Purge; p != nil {
		by := "the stream names no principal"
		if p.PurgedBy != "" {
			by = "by " + p.PurgedBy
		}
		fmt.Fprintf(b, "  Record removed from the notifications table at %s: %s (%s; %s).\n", displayTime(p.At), p.Says, p.Reason, by)
	}
}

// writeChain says whether n's hash chain is intact, and names its known gaps.
func writeChain(b *strings.Builder, n auditor.NotificationEvidence) {
	if len(n.Problems) == 0 {
		fmt.Fprintf(b, "  Audit chain: %s, intact.\n", plural(n.Entries, "entry"))
	} else {
		fmt.Fprintf(b, "  Audit chain: %s, BROKEN:\n", plural(n.Entries, "entry"))
		for _, p := range n.Problems {
			fmt.Fprintf(b, "    seq %s: %s\n", p.Seq, p.What)
		}
	}
	for _, g := range n.KnownGaps {
		fmt.Fprintf(b, "  Known gap: %s lost with a stream batch; recorded from the record at %s (seq %s).\n",
			versionsOf(g), displayTime(g.WrittenAt), g.Seq)
	}
}

func versionsOf(g auditor.KnownGap) string {
	if g.FromVersion == g.ToVersion {
		return fmt.Sprintf("version %d was", g.FromVersion)
	}
	return fmt.Sprintf("versions %d–%d were", g.FromVersion, g.ToVersion)
}

// writeCoverage says whether verified signed digests cover a notification's entries.
func writeCoverage(b *strings.Builder, c *auditor.DigestCoverage) {
	switch {
	case c == nil:
	case !c.Checked:
		fmt.Fprintf(b, "  Signed digests: not checked (give --public-key or --key-id).\n")
	case c.AllCovered():
		fmt.Fprintf(b, "  Signed digests: all %s are covered by %s verified with key %s (%s).\n",
			plural(c.Entries, "entry"), plural(len(c.Digests), "digest"), c.KeyID, strings.Join(c.Digests, "; "))
	default:
		var parts []string
		if c.Covered > 0 {
			parts = append(parts, fmt.Sprintf("%d covered by verified digests", c.Covered))
		}
		if c.Open > 0 {
			parts = append(parts, fmt.Sprintf("%d not yet covered (their period is still open)", c.Open))
		}
		if c.Uncovered > 0 {
			parts = append(parts, fmt.Sprintf("%d NOT covered by any verified digest though their period has closed", c.Uncovered))
		}
		if c.Mismatched > 0 {
			parts = append(parts, fmt.Sprintf("%d DIFFER from the verified digest of their period", c.Mismatched))
		}
		fmt.Fprintf(b, "  Signed digests: of %s, %s.\n", plural(c.Entries, "entry"), strings.Join(parts, ", "))
	}
}

// plural returns "1 entry", "2 entries", "0 notifications".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func providerNote(s auditor.Step) string {
	var parts []string
	if s.Provider != "" && (s.To == notify.StateSent || s.To == notify.StateDispatchUnknown || s.To == notify.StateRetryScheduled) {
		parts = append(parts, "provider "+s.Provider)
	}
	if s.ProviderMessageID != "" && s.To == notify.StateSent {
		parts = append(parts, "message ID "+s.ProviderMessageID)
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// marginReport is audit.MarginReport with the range it covers.
type marginReport struct {
	Since, Until time.Time
	auditor.MarginReport
}

// marginRule states the recommendation rule in words.
var marginRule = fmt.Sprintf("p99 + max(%d%% of p99, %s), rounded up to a multiple of %s; needs at least %d samples",
	int(auditor.MarginHeadroom*100), auditor.MinMarginHeadroom, auditor.MarginStep, auditor.MinMarginSamples)

func ms(d time.Duration) int64 { return d.Milliseconds() }

func writeMargin(w io.Writer, format string, r marginReport) error {
	flat := struct {
		Since         string                 `json:"since"`
		Until         string                 `json:"until"`
		Samples       int                    `json:"samples"`
		P50MS         int64                  `json:"p50_ms"`
		P95MS         int64                  `json:"p95_ms"`
		P99MS         int64                  `json:"p99_ms"`
		MaxMS         int64                  `json:"max_ms"`
		Enough        bool                   `json:"enough"`
		RecommendedMS int64                  `json:"recommended_ms"`
		Rule          string                 `json:"rule"`
		InForce       []auditor.PolicyMargin `json:"in_force"`
	}{
		r.Since.Format(time.RFC3339Nano), r.Until.Format(time.RFC3339Nano), r.Samples,
		ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max), r.Enough, ms(r.Recommended), marginRule, r.InForce,
	}
	switch format {
	case "json":
		return writeJSON(w, flat)
	case "jsonl":
		return json.NewEncoder(w).Encode(flat)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"since", "until", "samples", "p50_ms", "p95_ms", "p99_ms", "max_ms", "enough", "recommended_ms"})
		_ = cw.Write([]string{flat.Since, flat.Until, strconv.Itoa(flat.Samples),
			strconv.FormatInt(flat.P50MS, 10), strconv.FormatInt(flat.P95MS, 10), strconv.FormatInt(flat.P99MS, 10),
			strconv.FormatInt(flat.MaxMS, 10), strconv.FormatBool(flat.Enough), strconv.FormatInt(flat.RecommendedMS, 10)})
		cw.Flush()
		return cw.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Accepted→delivered latency, %s to %s\n", r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339))
	fmt.Fprintf(&b, "  samples  %d (notifications with both ADMITTED and RECEIPT_DELIVERED in the range)\n", r.Samples)
	if r.Samples > 0 {
		fmt.Fprintf(&b, "  p50      %s\n  p95      %s\n  p99      %s\n  max      %s\n", r.P50, r.P95, r.P99, r.Max)
	}
	for _, p := range r.InForce {
		fmt.Fprintf(&b, "  in force policy %s, safety margin %s (%s)\n", p.PolicyVersion, displayMS(p.SafetyMarginMS), plural(p.Samples, "sample"))
	}
	if r.Enough {
		fmt.Fprintf(&b, "Recommended safety margin: %s (rule: %s).\n", r.Recommended, marginRule)
	} else {
		fmt.Fprintf(&b, "No recommendation: %s, fewer than the %d needed for a meaningful p99; keep the current margin.\n", plural(r.Samples, "sample"), auditor.MinMarginSamples)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeArchiveStatus prints the archive's state: a summary line, then one line per period.
func writeArchiveStatus(w io.Writer, format string, st auditor.ArchiveStatus) error {
	if st.Periods == nil {
		st.Periods = []auditor.ArchivePeriod{}
	}
	if format == "json" {
		return writeJSON(w, st)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s archived, %s pending", plural(st.Archived, "period"), plural(st.Pending, "period"))
	if !st.OldestPending.IsZero() {
		fmt.Fprintf(&b, " (oldest pending starts %s)", st.OldestPending.Format(time.RFC3339))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERIOD START\tPERIOD END\tSTATE\tENTRIES\tOBJECTS\tIN TABLE\tRETAIN UNTIL\tARCHIVED AT\tMANIFEST")
	for _, p := range st.Periods {
		archived := "-"
		if !p.ArchivedAt.IsZero() {
			archived = p.ArchivedAt.Format(time.RFC3339)
		}
		inTable := "no (archive only)"
		if p.Hot || p.State != "archived" {
			inTable = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", p.PeriodStart.Format(time.RFC3339), p.PeriodEnd.Format(time.RFC3339),
			p.State, p.Entries, p.Objects, inTable, p.RetainUntil.Format(time.RFC3339), archived, p.Location)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
