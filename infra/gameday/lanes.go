package gameday

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PlanLanes shares scenarios among n lanes, each run on a stack of its own, one scenario
// after the other: longest first (Takes), each onto the lane with the least work so far (the
// first of them on a tie). Each lane keeps the scenarios in the order of scs, but for one with a
// From, which runs first. There are never more lanes than scenarios, nor an empty lane.
func PlanLanes(scs []Scenario, n int) [][]Scenario {
	n = min(n, len(scs))
	if n < 1 {
		return nil
	}
	order := make([]int, len(scs))
	for i := range order {
		order[i] = i
	}
	// Stable: of two as long, the one first in the catalogue is placed first.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scs[b].Takes, scs[a].Takes) })
	load := make([]time.Duration, n)
	picked := make([][]int, n)
	for _, i := range order {
		lane := 0
		for l := range load {
			if load[l] < load[lane] {
				lane = l
			}
		}
		load[lane] += scs[i].Takes
		picked[lane] = append(picked[lane], i)
	}
	lanes := make([][]Scenario, n)
	for l, idx := range picked {
		slices.Sort(idx)
		for _, i := range idx {
			lanes[l] = append(lanes[l], scs[i])
		}
		FromFirst(lanes[l])
	}
	return lanes
}

// FromFirst moves the scenarios that start from an earlier release (From) to the front of scs,
// keeping the order otherwise: they run first, on the stack their lane deployed as that release.
func FromFirst(scs []Scenario) {
	rank := func(sc Scenario) int {
		if sc.From != "" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(scs, func(a, b Scenario) int { return cmp.Compare(rank(a), rank(b)) })
}

// Takes is the sum of the scenarios' Takes: a lane's expected duration, its stack's setup aside.
func Takes(scs []Scenario) time.Duration {
	var d time.Duration
	for _, sc := range scs {
		d += sc.Takes
	}
	return d
}

// Lane is one lane of a game day run in lanes, as the merged report gives it.
type Lane struct {
	// Lane numbers the lanes from 1.
	Lane int `json:"lane"`
	// Dir is the lane's own report folder (its gameday.md and the log of its run).
	Dir string `json:"dir"`
	// Planned are the scenarios the lane was given, Ran those its report holds.
	Planned []string `json:"planned"`
	Ran     []string `json:"ran"`
	// Exit is the exit status of the lane's run (infra/emulator/emulator.sh with infra/gameday/cmd), -1 when
	// unknown.
	Exit     int       `json:"exit"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// Error says why the lane failed, when it did besides its scenarios' verdicts.
	Error string `json:"error,omitempty"`
}

// LaneRun is what a lane left: its plan, its exit status and its report (nil when it wrote
// none, such as when its stack failed to deploy).
type LaneRun struct {
	Dir     string
	Planned []string
	Exit    int
	Report  *Report
}

// MergeLanes makes one report of the lanes' reports: their scenarios, each saying its lane,
// in the order of catalogue (any scenario not in it last), and the figures over all of them. A
// planned scenario that a lane's report does not hold (its run failed to start, or ended
// early) is a failed result that says so; a lane whose run exited non-zero with every
// scenario passed carries an error, and Failed says so.
func MergeLanes(runs []LaneRun, catalogue []Scenario) *Report {
	rep := &Report{}
	proves := map[string]Scenario{}
	for _, sc := range catalogue {
		proves[sc.Name] = sc
	}
	for i, run := range runs {
		lane := Lane{Lane: i + 1, Dir: run.Dir, Planned: run.Planned, Exit: run.Exit}
		have := map[string]bool{}
		if r := run.Report; r != nil {
			if rep.Stack == "" {
				rep.Stack, rep.Scale, rep.Evaluator = r.Stack, r.Scale, r.Evaluator
			}
			if rep.Started.IsZero() || (!r.Started.IsZero() && r.Started.Before(rep.Started)) {
				rep.Started = r.Started
			}
			if r.Finished.After(rep.Finished) {
				rep.Finished = r.Finished
			}
			lane.Started, lane.Finished = r.Started, r.Finished
			rep.Deployed, rep.Exempt = union(rep.Deployed, r.Deployed), union(rep.Exempt, r.Exempt)
			for _, res := range r.Results {
				res.Lane = lane.Lane
				have[res.Name] = true
				lane.Ran = append(lane.Ran, res.Name)
				rep.Results = append(rep.Results, res)
			}
		}
		missing := notRun(run, lane.Lane, have, proves)
		rep.Results = append(rep.Results, missing...)
		switch {
		case run.Report == nil:
			lane.Error = "wrote no report"
		case len(missing) > 0:
			lane.Error = fmt.Sprintf("%d of its %d scenarios not run", len(missing), len(run.Planned))
		case run.Exit != 0 && allPassed(run.Report.Results):
			lane.Error = fmt.Sprintf("its run exited %d with every scenario passed", run.Exit)
		}
		rep.Lanes = append(rep.Lanes, lane)
	}
	index := func(name string) int {
		if i := slices.IndexFunc(catalogue, func(sc Scenario) bool { return sc.Name == name }); i >= 0 {
			return i
		}
		return len(catalogue)
	}
	slices.SortStableFunc(rep.Results, func(a, b Result) int { return cmp.Compare(index(a.Name), index(b.Name)) })
	slices.Sort(rep.Deployed)
	slices.Sort(rep.Exempt)
	rep.Summarize()
	return rep
}

// notRun returns a failed result, saying why, for each scenario planned for the lane that its
// report does not hold (have).
func notRun(run LaneRun, lane int, have map[string]bool, catalogue map[string]Scenario) []Result {
	var out []Result
	for _, name := range run.Planned {
		if have[name] {
			continue
		}
		sc := catalogue[name]
		why := fmt.Sprintf("not run: lane %d's run ended before it (exit %d; see %s)", lane, run.Exit, run.Dir)
		if run.Report == nil {
			why = fmt.Sprintf("not run: lane %d's run wrote no report, its stack may have failed to deploy (exit %d; see %s)", lane, run.Exit, run.Dir)
		}
		out = append(out, Result{Name: name, Proves: sc.Proves, Platform: sc.Platform, Expect: sc.Expect,
			NegativeControl: sc.NegativeControl, Lane: lane, NotRun: true, Errors: []string{why}})
	}
	return out
}

func allPassed(rs []Result) bool {
	for _, r := range rs {
		if !r.Passed {
			return false
		}
	}
	return true
}

// Failed says whether the game day failed: a scenario that did not pass, or a lane that failed
// besides.
func (rep *Report) Failed() bool {
	rep.Summarize()
	if rep.Passed != rep.Scenarios {
		return true
	}
	for _, l := range rep.Lanes {
		if l.Error != "" {
			return true
		}
	}
	return false
}

// Figures are the report's figures as name=value lines, as infra/gameday/cmd prints them.
func (rep *Report) Figures() string {
	rep.Summarize()
	return fmt.Sprintf("gameday_scenarios=%d\ngameday_invariant_violations=%d\ngameday_alarms_as_expected_share=%.2f\ngameday_faults_injected=%d\ngameday_negative_control_double_sends=%d\ngameday_vacuous_scenarios=%s\ngameday_alarms_total=%d\ngameday_alarms_proven=%d\ngameday_alarms_exempt=%s\n",
		rep.Scenarios, rep.InvariantViolations, rep.AlarmsAsExpected, rep.FaultsInjected, rep.NegativeControlDoubleSends, strings.Join(rep.VacuousScenarios, ","),
		rep.AlarmsTotal, rep.AlarmsProven, strings.Join(rep.Exempt, ","))
}

// union returns a with the elements of b it lacks appended.
func union(a, b []string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}
