package gameday

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEveryScenarioTakes(t *testing.T) {
	for _, sc := range Scenarios() {
		if sc.Takes <= sc.Hold {
			t.Errorf("%s: Takes %s, not more than its hold %s", sc.Name, sc.Takes, sc.Hold)
		}
	}
}

func TestPlanLanes(t *testing.T) {
	all := Scenarios()
	names := func(scs []Scenario) []string {
		var out []string
		for _, sc := range scs {
			out = append(out, sc.Name)
		}
		return out
	}
	var longest time.Duration
	for _, sc := range all {
		longest = max(longest, sc.Takes)
	}
	for n := 1; n <= len(all)+2; n++ {
		lanes := PlanLanes(all, n)
		if len(lanes) != min(n, len(all)) {
			t.Fatalf("%d lanes: planned %d", n, len(lanes))
		}
		var seen []string
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for i, l := range lanes {
			if len(l) == 0 {
				t.Errorf("%d lanes: lane %d is empty", n, i+1)
			}
			// The catalogue's order within a lane, after the one that starts from an earlier
			// release (TestFromFirst).
			idx := func(name string) int { return slices.Index(names(all), name) }
			rest := names(l)
			if l[0].From != "" {
				rest = rest[1:]
			}
			if !slices.IsSortedFunc(rest, func(a, b string) int { return idx(a) - idx(b) }) {
				t.Errorf("%d lanes: lane %d out of the catalogue's order: %v", n, i+1, names(l))
			}
			seen = append(seen, names(l)...)
			lo, hi = min(lo, Takes(l)), max(hi, Takes(l))
		}
		slices.Sort(seen)
		want := names(all)
		slices.Sort(want)
		if !slices.Equal(seen, want) {
			t.Errorf("%d lanes: the lanes hold %v, want each scenario once: %v", n, seen, want)
		}
		// Longest first onto the least loaded lane: no lane is ahead of another by more than
		// the longest scenario.
		if hi-lo > longest {
			t.Errorf("%d lanes: from %s to %s, more apart than the longest scenario (%s)", n, lo, hi, longest)
		}
	}
	// The three longest each start a lane of their own.
	lanes := PlanLanes(all, 3)
	byTakes := slices.Clone(all)
	slices.SortStableFunc(byTakes, func(a, b Scenario) int { return int(b.Takes - a.Takes) })
	longest3 := names(byTakes[:3])
	for _, name := range longest3 {
		n := 0
		for _, l := range lanes {
			if slices.Contains(names(l), name) {
				n++
				for _, other := range longest3 {
					if other != name && slices.Contains(names(l), other) {
						t.Errorf("%s and %s share a lane: %v", name, other, names(l))
					}
				}
			}
		}
		if n != 1 {
			t.Errorf("%s is in %d lanes", name, n)
		}
	}
	if PlanLanes(nil, 3) != nil || PlanLanes(all, 0) != nil {
		t.Error("no scenarios or no lanes: want no plan")
	}
}

func TestMergeLanes(t *testing.T) {
	cat := []Scenario{{Name: "a", Proves: "A"}, {Name: "b", Proves: "B"}, {Name: "c", Proves: "C"}, {Name: "d", Proves: "D", NegativeControl: true}, {Name: "e", Proves: "E"}}
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	lane1 := &Report{Stack: "resetnotify-e2e", Scale: 1, Evaluator: "ev", Started: t0.Add(time.Minute), Finished: t0.Add(40 * time.Minute), Results: []Result{
		{Name: "c", Passed: true, Faults: map[string]int64{"throttle": 10}, Chart: "c.png"},
		{Name: "a", Passed: true, Alarms: []AlarmResult{{Name: "X", Expected: true, AsExpected: true}}},
	}}
	lane2 := &Report{Stack: "resetnotify-e2e", Scale: 1, Evaluator: "ev", Started: t0, Finished: t0.Add(30 * time.Minute), Results: []Result{
		{Name: "d", Passed: true, NegativeControl: true, Faults: map[string]int64{"sqs-duplicate": 4}, Invariants: Invariants{DoubleSends: 2, Violations: []string{"x", "y"}}},
		{Name: "b", Faults: map[string]int64{"kill": 3}, Invariants: Invariants{Violations: []string{"late"}}, Alarms: []AlarmResult{{Name: "Y"}}},
	}}
	rep := MergeLanes([]LaneRun{
		{Dir: "lane-1", Planned: []string{"a", "c"}, Exit: 0, Report: lane1},
		{Dir: "lane-2", Planned: []string{"b", "d", "e"}, Exit: 1, Report: lane2},
		{Dir: "lane-3", Planned: []string{"f"}, Exit: 1},
	}, cat)
	var got []string
	for _, r := range rep.Results {
		got = append(got, r.Name+"@"+string(rune('0'+r.Lane)))
	}
	if want := []string{"a@1", "b@2", "c@1", "d@2", "e@2", "f@3"}; !slices.Equal(got, want) {
		t.Errorf("merged results %v, want %v (catalogue order, each with its lane)", got, want)
	}
	if rep.Scenarios != 6 || rep.Passed != 3 || rep.InvariantViolations != 1 || rep.FaultsInjected != 17 || rep.NegativeControlDoubleSends != 2 {
		t.Errorf("figures over every lane: %+v", rep)
	}
	// a 1/1, b 0/1, c 1/1 (quiet), d 1/1 (quiet), e and f not run 0/1.
	if want := 3.0 / 6; rep.AlarmsAsExpected != want {
		t.Errorf("alarms as expected %v, want %v", rep.AlarmsAsExpected, want)
	}
	if !rep.Started.Equal(t0) || !rep.Finished.Equal(t0.Add(40*time.Minute)) || rep.Stack != "resetnotify-e2e" || rep.Evaluator != "ev" {
		t.Errorf("the merged run spans %s to %s on %q (%q)", rep.Started, rep.Finished, rep.Stack, rep.Evaluator)
	}
	if len(rep.Lanes) != 3 || rep.Lanes[0].Error != "" || !strings.Contains(rep.Lanes[1].Error, "1 of its 3") || rep.Lanes[2].Error != "wrote no report" {
		t.Errorf("lanes %+v", rep.Lanes)
	}
	if !rep.Failed() {
		t.Error("a failed scenario and lanes that failed: the game day failed")
	}
	for _, r := range rep.Results {
		if r.Name == "e" && (!r.NotRun || r.Passed || !strings.Contains(r.Errors[0], "lane 2's run ended before it (exit 1; see lane-2)") || r.Proves != "E") {
			t.Errorf("the scenario lane 2 never ran: %+v", r)
		}
		if r.Name == "f" && !strings.Contains(r.Errors[0], "wrote no report") {
			t.Errorf("the scenario of the lane that wrote no report: %+v", r)
		}
	}
	md := rep.Markdown()
	for _, want := range []string{"Run in 3 lanes", "| 2 | b, d, e | 30m0s | 1 (**1 of its 3 scenarios not run**) | [lane-2](lane-2) |",
		"| [c](#c) | 1 | world", "Ran in lane 2.", "![c](c.png)", "- error: not run: lane 3's run wrote no report"} {
		if !strings.Contains(md, want) {
			t.Errorf("the merged report does not say %q:\n%s", want, md)
		}
	}

	// Every lane passed: the game day passed; a lane whose run failed after its scenarios
	// passed still fails it.
	ok := MergeLanes([]LaneRun{{Dir: "lane-1", Planned: []string{"a", "c"}, Report: lane1}}, cat)
	if ok.Failed() || ok.Passed != 2 {
		t.Errorf("every scenario passed, yet failed: %+v", ok)
	}
	bad := MergeLanes([]LaneRun{{Dir: "lane-1", Planned: []string{"a", "c"}, Exit: 2, Report: lane1}}, cat)
	if !bad.Failed() || !strings.Contains(bad.Lanes[0].Error, "exited 2") {
		t.Errorf("a lane that exited 2: %+v", bad.Lanes)
	}
}
