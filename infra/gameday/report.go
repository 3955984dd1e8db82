package gameday

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
)

// Result is one scenario's outcome.
type Result struct {
	Name     string    `json:"name"`
	Proves   string    `json:"proves"`
	Platform bool      `json:"platform_fault"`
	Expect   []string  `json:"expected_alarms"`
	Hold     string    `json:"fault_held"`
	Start    time.Time `json:"start"`
	// FaultStart and FaultEnd bound the fault's window.
	FaultStart time.Time `json:"fault_start"`
	FaultEnd   time.Time `json:"fault_end"`
	End        time.Time `json:"end"`
	// Faults counts the faults injected by kind: the proxy's own counts, and the simulators'.
	Faults      map[string]int64        `json:"faults_injected"`
	FaultDetail []faultproxy.FaultCount `json:"fault_detail,omitempty"`
	Requests    int                     `json:"requests"`
	Admitted    int                     `json:"admitted"`
	Alarms      []AlarmResult           `json:"alarms"`
	// AlarmAtStart are the alarms still in ALARM when the scenario was to begin, after the
	// wait for every alarm to be OK: the scenario failed, and was not run.
	AlarmAtStart []string   `json:"alarms_in_alarm_at_start,omitempty"`
	Invariants   Invariants `json:"invariants"`
	Errors       []string   `json:"errors,omitempty"`
	Chart        string     `json:"chart,omitempty"`
	// Dashboard is the deployed dashboard drawn over the scenario (DrawDashboard), Widgets its
	// widgets: drawn or why not, and each drawn one's lines without a datapoint.
	Dashboard string         `json:"dashboard,omitempty"`
	Widgets   []WidgetResult `json:"dashboard_widgets,omitempty"`
	// Silent are the alarms that did not fire while their metric had no datapoint and their
	// missing data is not breaching (Run.judgeSilence): the scenario fails.
	Silent []string `json:"silent_alarms,omitempty"`
	// Vacuous: fewer faults of a kind were injected than the scenario needs (Scenario.MinFaults).
	Vacuous bool `json:"vacuous,omitempty"`
	// NegativeControl: the scenario passes when its invariants break.
	NegativeControl bool `json:"negative_control,omitempty"`
	Passed          bool `json:"passed"`
	// Lane is the lane that ran it (1, 2, ...) in a game day run in lanes; 0 otherwise.
	Lane int `json:"lane,omitempty"`
	// NotRun: it did not run, and did not pass: its lane ended before it (MergeLanes), or an
	// alarm was still in ALARM when it was to begin (AlarmAtStart; Errors say why).
	NotRun bool `json:"not_run,omitempty"`
}

// AlarmResult is one alarm's course in a scenario. ToAlarmSeconds counts from the fault's start,
// ToOKSeconds from its end.
type AlarmResult struct {
	Name           string     `json:"name"`
	Expected       bool       `json:"expected"`
	Allowed        bool       `json:"allowed,omitempty"`
	AlarmAt        *time.Time `json:"alarm_at,omitempty"`
	OKAt           *time.Time `json:"ok_at,omitempty"`
	ToAlarmSeconds *float64   `json:"to_alarm_seconds,omitempty"`
	ToOKSeconds    *float64   `json:"to_ok_seconds,omitempty"`
	AsExpected     bool       `json:"as_expected"`
	Note           string     `json:"note,omitempty"`
}

// alarmsJudged is the number of alarm verdicts of the scenario: each expected alarm, each other
// alarm that fired, and, for a scenario where no alarm is expected and none fired, that quiet.
func (r Result) alarmsJudged() int {
	return max(len(r.Alarms), 1)
}

func (r Result) alarmsGood() int {
	if r.NotRun {
		return 0 // nothing seen: not as expected
	}
	if len(r.Alarms) == 0 {
		return 1
	}
	n := 0
	for _, a := range r.Alarms {
		if a.AsExpected {
			n++
		}
	}
	return n
}

// AlarmsAsExpected says every alarm verdict of the scenario is as expected.
func (r Result) AlarmsAsExpected() bool { return r.alarmsGood() == r.alarmsJudged() }

// Report is one game day.
type Report struct {
	Stack     string    `json:"stack"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Scale     float64   `json:"scale"`
	Evaluator string    `json:"alarm_evaluator"`
	// The figures the issue names.
	Scenarios           int     `json:"gameday_scenarios"`
	InvariantViolations int     `json:"gameday_invariant_violations"`
	AlarmsAsExpected    float64 `json:"gameday_alarms_as_expected_share"`
	FaultsInjected      int64   `json:"gameday_faults_injected"`
	Passed              int     `json:"gameday_scenarios_passed"`
	// NegativeControlDoubleSends are the double sends of the negative control (goal: above 0).
	NegativeControlDoubleSends int `json:"gameday_negative_control_double_sends"`
	// Deployed are the stack's alarms (logical IDs), Exempt those docs/operations.md exempts
	// from proof; AlarmsTotal is len(Deployed), AlarmsProven those some scenario expected and
	// saw fire and clear (Proofs: the first such scenario of each).
	Deployed     []string     `json:"deployed_alarms"`
	Exempt       []string     `json:"gameday_alarms_exempt"`
	AlarmsTotal  int          `json:"gameday_alarms_total"`
	AlarmsProven int          `json:"gameday_alarms_proven"`
	Proofs       []AlarmProof `json:"alarm_proofs"`
	// VacuousScenarios are the scenarios that injected fewer faults than they need.
	VacuousScenarios []string `json:"gameday_vacuous_scenarios"`
	Results          []Result `json:"scenarios"`
	// Lanes are the lanes of a game day run in lanes (MergeLanes), each on a stack of its own.
	Lanes []Lane `json:"lanes,omitempty"`
}

// AlarmProof is the scenario that proved an alarm (expected it, saw it fire in its window and
// clear), with the times to ALARM (from the fault's start) and to OK (from its end); Scenario
// is empty for an alarm no scenario proved.
type AlarmProof struct {
	Alarm          string   `json:"alarm"`
	Scenario       string   `json:"scenario,omitempty"`
	ToAlarmSeconds *float64 `json:"to_alarm_seconds,omitempty"`
	ToOKSeconds    *float64 `json:"to_ok_seconds,omitempty"`
	Exempt         bool     `json:"exempt,omitempty"`
}

// summarizeProofs fills Proofs, AlarmsTotal and AlarmsProven from the deployed alarms and the
// results.
func (rep *Report) summarizeProofs() {
	rep.Proofs, rep.AlarmsProven = nil, 0
	rep.AlarmsTotal = len(rep.Deployed)
	for _, name := range rep.Deployed {
		p := AlarmProof{Alarm: name, Exempt: slices.Contains(rep.Exempt, name)}
		for _, r := range rep.Results {
			i := slices.IndexFunc(r.Alarms, func(a AlarmResult) bool { return a.Name == name && a.Expected && a.AsExpected })
			if i >= 0 && !r.NegativeControl {
				p.Scenario, p.ToAlarmSeconds, p.ToOKSeconds = r.Name, r.Alarms[i].ToAlarmSeconds, r.Alarms[i].ToOKSeconds
				rep.AlarmsProven++
				break
			}
		}
		rep.Proofs = append(rep.Proofs, p)
	}
}

// Summarize fills the report's figures from its results.
func (rep *Report) Summarize() {
	rep.summarizeProofs()
	rep.Scenarios = len(rep.Results)
	good, judged := 0, 0
	rep.InvariantViolations, rep.FaultsInjected, rep.Passed, rep.NegativeControlDoubleSends = 0, 0, 0, 0
	rep.VacuousScenarios = []string{}
	for _, r := range rep.Results {
		if r.Vacuous {
			rep.VacuousScenarios = append(rep.VacuousScenarios, r.Name)
		}
		if r.NegativeControl {
			rep.NegativeControlDoubleSends += r.Invariants.DoubleSends
		} else {
			rep.InvariantViolations += r.Invariants.Count()
		}
		good += r.alarmsGood()
		judged += r.alarmsJudged()
		for _, n := range r.Faults {
			rep.FaultsInjected += n
		}
		if r.Passed {
			rep.Passed++
		}
	}
	if judged > 0 {
		rep.AlarmsAsExpected = float64(good) / float64(judged)
	}
}

// Write writes gameday.json and gameday.md into dir (the charts are already there).
func (rep *Report) Write(dir string) error {
	rep.Summarize()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "gameday.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "gameday.md"), []byte(rep.Markdown()), 0o644)
}

// Markdown renders the report for people.
// It is long because it writes the report top to bottom, as it is read.
//
//revive:disable-next-line:function-length
func (rep *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Game day on %s, %s\n\n", rep.Stack, rep.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "%d scenarios, %d passed, in %s (scale %.2g). Alarms evaluated by %s.\n\n",
		rep.Scenarios, rep.Passed, rep.Finished.Sub(rep.Started).Round(time.Second), rep.Scale, rep.Evaluator)
	fmt.Fprintf(&b, "| figure | value | goal |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| `gameday_scenarios` | %d | |\n", rep.Scenarios)
	fmt.Fprintf(&b, "| `gameday_invariant_violations` | %d | 0 |\n", rep.InvariantViolations)
	fmt.Fprintf(&b, "| `gameday_alarms_as_expected_share` | %.2f | 1.00 |\n", rep.AlarmsAsExpected)
	fmt.Fprintf(&b, "| `gameday_faults_injected` | %d | |\n", rep.FaultsInjected)
	fmt.Fprintf(&b, "| `gameday_negative_control_double_sends` | %d | above 0 when the negative control ran |\n", rep.NegativeControlDoubleSends)
	fmt.Fprintf(&b, "| `gameday_vacuous_scenarios` | %s | none |\n", strings.Join(rep.VacuousScenarios, ", "))
	fmt.Fprintf(&b, "| `gameday_alarms_total` | %d | |\n| `gameday_alarms_proven` | %d | total less exempt |\n| `gameday_alarms_exempt` | %s | at most 3 |\n\n",
		rep.AlarmsTotal, rep.AlarmsProven, strings.Join(rep.Exempt, ", "))
	if len(rep.Proofs) > 0 {
		b.WriteString("| alarm | proved by | time to ALARM | time to OK |\n| --- | --- | --- | --- |\n")
		for _, p := range rep.Proofs {
			by := p.Scenario
			switch {
			case by == "" && p.Exempt:
				by = "exempt (docs/operations.md)"
			case by == "":
				by = "**no scenario**"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p.Alarm, by, secs(p.ToAlarmSeconds, "after the fault began"), secs(p.ToOKSeconds, "after it ended"))
		}
		b.WriteString("\n")
	}
	if len(rep.Lanes) > 0 {
		fmt.Fprintf(&b, "Run in %d lanes, each on a stack of its own (its own MiniStack, fault proxy and simulators), its scenarios one after the other:\n\n", len(rep.Lanes))
		b.WriteString("| lane | scenarios | took (its stack's setup aside) | exit | report |\n| --- | --- | --- | --- | --- |\n")
		for _, l := range rep.Lanes {
			took := "-"
			if !l.Started.IsZero() && !l.Finished.IsZero() {
				took = l.Finished.Sub(l.Started).Round(time.Second).String()
			}
			exit := fmt.Sprint(l.Exit)
			if l.Error != "" {
				exit += " (**" + l.Error + "**)"
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | [%s](%s) |\n", l.Lane, strings.Join(l.Planned, ", "), took, exit, l.Dir, l.Dir)
		}
		b.WriteString("\n")
	}
	laneCol, laneSep := "", ""
	if len(rep.Lanes) > 0 {
		laneCol, laneSep = " lane |", " --- |"
	}
	fmt.Fprintf(&b, "| scenario |%s fault | faults injected | alarms | invariants | verdict |\n| --- |%s --- | --- | --- | --- | --- |\n", laneCol, laneSep)
	for _, r := range rep.Results {
		kind := "world"
		if r.Platform {
			kind = "platform"
		}
		verdict := "passed"
		if r.NegativeControl {
			verdict = "passed (negative control: the invariants broke, as they must)"
		}
		if !r.Passed {
			verdict = "**failed**"
		}
		lane := ""
		if len(rep.Lanes) > 0 {
			lane = fmt.Sprintf(" %d |", r.Lane)
		}
		fmt.Fprintf(&b, "| [%s](#%s) |%s %s, %s | %s | %d/%d as expected | %d violations | %s |\n", r.Name, r.Name, lane, kind, r.Hold,
			faultsLine(r.Faults), r.alarmsGood(), r.alarmsJudged(), r.Invariants.Count(), verdict)
	}
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", r.Name, r.Proves)
		if r.Lane > 0 {
			fmt.Fprintf(&b, "Ran in lane %d.\n\n", r.Lane)
		}
		if r.NotRun {
			// Only why.
			for _, e := range r.Errors {
				fmt.Fprintf(&b, "- error: %s\n", e)
			}
			continue
		}
		fmt.Fprintf(&b, "Fault from %s to %s; %d requests, %d admitted; final states %s.\n\n",
			r.FaultStart.Format(time.TimeOnly), r.FaultEnd.Format(time.TimeOnly), r.Requests, r.Admitted, statesLine(r.Invariants.States))
		if r.Chart != "" {
			fmt.Fprintf(&b, "![%s](%s)\n\n", r.Name, r.Chart)
		}
		writeWidgets(&b, r)
		fmt.Fprintf(&b, "Faults injected: %s.\n\n", faultsLine(r.Faults))
		if len(r.FaultDetail) > 0 {
			b.WriteString("| service | operation | function | kind | count |\n| --- | --- | --- | --- | --- |\n")
			for _, f := range r.FaultDetail {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", f.Service, f.Operation, shortFunction(f.Function), f.Kind, f.Count)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "| alarm | expected | time to ALARM | time to OK | verdict |\n| --- | --- | --- | --- | --- |\n")
		if len(r.Alarms) == 0 {
			fmt.Fprintf(&b, "| (none fired) | | | | as expected |\n")
		}
		for _, a := range r.Alarms {
			v := "as expected"
			switch {
			case !a.AsExpected:
				v = "**not as expected**"
			}
			if a.Note != "" {
				v += ": " + a.Note
			}
			fmt.Fprintf(&b, "| `%s` | %v | %s | %s | %s |\n", a.Name, a.Expected, secs(a.ToAlarmSeconds, "after the fault began"), secs(a.ToOKSeconds, "after it ended"), v)
		}
		inv := r.Invariants
		fmt.Fprintf(&b, "\n| invariant | value |\n| --- | --- |\n")
		fmt.Fprintf(&b, "| double sends (every provider of the chain) | %d |\n| sends after the dispatch deadline | %d |\n", inv.DoubleSends, inv.LateSends)
		fmt.Fprintf(&b, "| non-terminal past deadline + sweep grace | %d |\n| records whose audit chain misses their last version | %d |\n", inv.Stuck, inv.AuditBehind)
		fmt.Fprintf(&b, "| `auditctl verify` over the window | %s |\n| log events with a number or code (of %d scanned) | %d |\n", inv.AuditVerify, inv.LogEventsScanned, inv.SecretsInLogs)
		for _, v := range first(inv.Violations, 20) {
			fmt.Fprintf(&b, "\n- violation: %s", v)
		}
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "\n- error: %s", e)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
	}
	return s
}

func secs(s *float64, what string) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f s %s", *s, what)
}

func faultsLine(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	return tally(m)
}

func statesLine(m map[string]int) string { return tally(m) }

// tally is m as "key count" pairs in key order, joined by commas.
func tally[V int | int64](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// shortFunction is a deployed function's logical ID ("resetnotify-e2e-IntakeFunction-1A2B":
// IntakeFunction), or "-" for requests no rule attributed.
func shortFunction(name string) string {
	if name == "" {
		return "-"
	}
	parts := strings.Split(name, "-")
	for _, p := range parts {
		if strings.HasSuffix(p, "Function") {
			return p
		}
	}
	return name
}

// exemptMarker opens docs/operations.md's list of the alarms exempt from proof on the emulator.
const exemptMarker = "**Proven on the emulator, or exempt.**"

// ExemptFromDocs returns the alarms of docs/operations.md's exempt list: the bullets
// ("- `AlarmName`: why, and the AWS-side test") after exemptMarker, up to the next paragraph.
func ExemptFromDocs(doc string) []string {
	var out []string
	in, bullets := false, false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, exemptMarker):
			in = true
		case !in:
		case strings.HasPrefix(line, "- `"):
			bullets = true
			if name, _, ok := strings.Cut(strings.TrimPrefix(line, "- `"), "`"); ok {
				out = append(out, name)
			}
		case bullets && line != "" && !strings.HasPrefix(line, " "), strings.HasPrefix(line, "#"):
			return out
		}
	}
	return out
}

// writeWidgets writes the scenario's dashboard: its PNG, the widgets it could not draw, and
// those with lines without a datapoint.
func writeWidgets(b *strings.Builder, r Result) {
	if r.Dashboard != "" {
		fmt.Fprintf(b, "The deployed dashboard over the scenario:\n\n![dashboard %s](%s)\n\n", r.Name, r.Dashboard)
	}
	for _, w := range r.Widgets {
		switch {
		case !w.Drawn:
			fmt.Fprintf(b, "- dashboard widget %q not drawn: %s\n", w.Title, w.NotDrawn)
		case w.EmptyTile():
			fmt.Fprintf(b, "- dashboard widget %q: **an empty tile**, no datapoint of %s\n", w.Title, strings.Join(w.Empty, "; "))
		case len(w.Empty) > 0:
			fmt.Fprintf(b, "- dashboard widget %q: no datapoint of %s (its other lines had)\n", w.Title, strings.Join(w.Empty, "; "))
		}
	}
	if len(r.Widgets) > 0 {
		b.WriteString("\n")
	}
}
