// Command gameday runs game days on the stack infra/emulator/emulator.sh deploys to MiniStack: platform
// faults through the fault proxy and provider faults through the SMS simulators, under a steady
// load, checking that the alarms each scenario's runbook names fire and clear, that no other
// fires, and that the service's invariants hold (package infra/gameday). Run it as the command of
// the emulator script, with the proxy:
//
//	RESETNOTIFY_FAULT_PROXY=1 infra/emulator/emulator.sh go run ./infra/gameday/cmd [flags]
//
// (make gameday-ci: the short game day of .ci/run). It writes gameday.md, gameday.json and a
// PNG chart per scenario into -out, prints the report's figures as name=value lines, and exits
// 1 when a scenario did not pass.
//
// make gameday runs the catalogue in lanes (infra/gameday/gameday.sh), each lane on a stack of its own
// with its scenarios one after the other. Two modes of this command, which need no stack,
// serve it: -plan prints how -lanes lanes share the scenarios (longest first onto the least
// loaded lane, by each scenario's Takes), one lane a line ("lane<TAB>scenarios<TAB>minutes";
// -lane i prints lane i's scenarios only); -merge dir1,dir2,... makes one report of the lanes'
// in -out, with the figures over all of them, and exits 1 when a scenario did not pass or a
// lane failed; -from prints the release a lane's stack must be deployed as first (the
// upgrade scenario's), empty for this checkout.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
	"github.com/resetnotify/resetnotify/infra/gameday"
)

// ciScenarios is the short game day of .ci/run, run side by side: their alarms have one-minute
// periods, so they fire within minutes and clear within minutes more; two of them go through
// the proxy under rules that match no common request (the digest function's calls; the
// negative control's own SQS sends and dispatch writes), and the negative control shows the
// double-send detector can fail.
var ciScenarios = []string{"pumping-velocity", "digest-failing", "negative-control"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gameday:", err)
		os.Exit(1)
	}
}

// selectScenarios returns the scenarios of the comma-separated list ("all": every one), or
// the short game day's; one that starts from an earlier release comes first (FromFirst).
func selectScenarios(all []gameday.Scenario, list string, ci bool) ([]gameday.Scenario, error) {
	if list == "all" && !ci {
		scs := slices.Clone(all)
		gameday.FromFirst(scs)
		return scs, nil
	}
	names := strings.Split(list, ",")
	if ci {
		names = ciScenarios
	}
	var scs []gameday.Scenario
	for _, sc := range all {
		if slices.Contains(names, sc.Name) {
			scs = append(scs, sc)
		}
	}
	if len(scs) != len(names) {
		return nil, fmt.Errorf("unknown scenario in %v (-list lists them)", names)
	}
	gameday.FromFirst(scs)
	return scs, nil
}

// startRelease is the release a stack running scs must be deployed as first: the first
// scenario's From (FromFirst puts it there).
func startRelease(scs []gameday.Scenario) string {
	if len(scs) == 0 {
		return ""
	}
	return scs[0].From
}

// run is the command. It is long because it is the command's whole sequence, read top to
// bottom: flags, stack, evaluator, scenarios, charts, report and figures.
//
//revive:disable-next-line:function-length
func run() error {
	var (
		list     = flag.String("scenarios", "all", "comma-separated scenarios to run, one after the other, or all")
		ci       = flag.Bool("ci", false, "the short game day: "+strings.Join(ciScenarios, ", ")+", side by side at -scale")
		scale    = flag.Float64("scale", 1, "multiplies each scenario's fault duration")
		out      = flag.String("out", "", "report folder (default gameday-reports/<UTC time>)")
		stack    = flag.String("stack", "resetnotify-e2e", "the CloudFormation stack (infra/emulator/emulator.sh's)")
		listOnly = flag.Bool("list", false, "list the scenarios and exit")
		lanes    = flag.Int("lanes", 3, "with -plan or -lane: the number of lanes")
		plan     = flag.Bool("plan", false, "print how -lanes lanes share -scenarios, one lane a line (lane, scenarios, minutes), and exit")
		lane     = flag.Int("lane", 0, "print the scenarios lane i (from 1) of -lanes runs, comma-separated, and exit")
		merge    = flag.String("merge", "", "comma-separated lane report folders: merge them into one report in -out, and exit")
		from     = flag.Bool("from", false, "print the release -scenarios must start from (empty: this checkout), and exit")
	)
	flag.Parse()
	all := gameday.Scenarios()
	if *listOnly {
		for _, sc := range all {
			fmt.Printf("%-24s %s\n", sc.Name, sc.Proves)
		}
		return nil
	}
	if *merge != "" {
		if *out == "" {
			return fmt.Errorf("-merge needs -out")
		}
		return mergeLanes(os.Stdout, strings.Split(*merge, ","), *out, all)
	}
	scs, err := selectScenarios(all, *list, *ci)
	if err != nil {
		return err
	}
	if *from {
		fmt.Println(startRelease(scs))
		return nil
	}
	if *plan || *lane != 0 {
		return printPlan(os.Stdout, scs, *lanes, *lane)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := *out
	if dir == "" {
		dir = filepath.Join("gameday-reports", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gameday")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	s, err := gameday.StackFromEnv(ctx, *stack, tmp)
	if err != nil {
		return err
	}
	if err := s.LearnMargin(ctx); err != nil {
		return err
	}
	r := &gameday.Run{S: s, Scale: *scale, Logf: func(f string, a ...any) {
		fmt.Printf("%s %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(f, a...))
	}}
	r.StartWait = 10 * time.Minute
	switch r.Sabotage = os.Getenv("GAMEDAY_SABOTAGE"); r.Sabotage {
	case "", gameday.SabotageFaultsOff, gameday.SabotageBridgeOff:
	default:
		return fmt.Errorf("GAMEDAY_SABOTAGE=%s: want %s or %s", r.Sabotage, gameday.SabotageFaultsOff, gameday.SabotageBridgeOff)
	}
	if !*ci {
		// One after the other, each scenario waits out the 5-minute period of most alarms after
		// its checks, so that what it caused late is judged in it (Run.Settle).
		r.Settle = 5 * time.Minute
	}
	if s.FaultProxy != "" {
		r.Proxy = faultproxy.NewClient(s.FaultProxy)
	}
	if err := r.LoadDefs(ctx); err != nil {
		return err
	}
	watcher, evaluator, err := newWatcher(ctx, s)
	if err != nil {
		return err
	}
	r.Watcher = watcher
	rep := &gameday.Report{Stack: *stack, Started: time.Now().UTC(), Scale: *scale, Evaluator: evaluator}
	rep.Deployed = slices.Sorted(maps.Keys(r.Defs))
	// The exempt list is docs/operations.md's (the runner runs at the repository's root).
	if doc, err := os.ReadFile("docs/operations.md"); err == nil {
		rep.Exempt = gameday.ExemptFromDocs(string(doc))
	} else {
		fmt.Fprintln(os.Stderr, "gameday: no exempt list:", err)
	}
	stopPolling := r.StartPolling(ctx)
	clear := func() {
		if r.Proxy != nil {
			if err := r.Proxy.Clear(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "gameday: clear the proxy's rules:", err)
			}
		}
	}
	if *ci {
		rep.Results = r.ExecuteTogether(ctx, scs)
		clear()
	} else {
		for _, sc := range scs {
			rep.Results = append(rep.Results, r.Execute(ctx, sc))
			clear()
			// A scenario may deploy (the upgrade): the report counts the alarms deployed now.
			rep.Deployed = slices.Sorted(maps.Keys(r.Defs))
			// Written after each scenario, so an interrupted game day keeps what it saw.
			rep.Finished = time.Now().UTC()
			_ = rep.Write(dir)
		}
	}
	stopPolling()
	for i, sc := range scs {
		if rep.Results[i].NotRun {
			continue // no window to draw
		}
		if err := r.DrawChart(ctx, sc, &rep.Results[i], dir); err != nil {
			rep.Results[i].Errors = append(rep.Results[i].Errors, "chart: "+err.Error())
		}
		r.DrawDashboard(ctx, sc, &rep.Results[i], dir)
	}
	rep.Finished = time.Now().UTC()
	if err := rep.Write(dir); err != nil {
		return err
	}
	fmt.Print(rep.Figures())
	fmt.Printf("gameday: report in %s\n", filepath.Join(dir, "gameday.md"))
	printFailures(os.Stderr, rep)
	if rep.Passed != rep.Scenarios {
		return fmt.Errorf("%d of %d scenarios did not pass (see %s)", rep.Scenarios-rep.Passed, rep.Scenarios, filepath.Join(dir, "gameday.md"))
	}
	return nil
}

// printFailures names, for each scenario that did not pass, why: each error (vacuous, silent
// alarms...) and the count of invariant violations.
func printFailures(w io.Writer, rep *gameday.Report) {
	for _, r := range rep.Results {
		if r.Passed {
			continue
		}
		for _, e := range r.Errors {
			fmt.Fprintf(w, "gameday: %s: %s\n", r.Name, e)
		}
		if n := r.Invariants.Count(); n > 0 {
			fmt.Fprintf(w, "gameday: %s: %d invariant violations\n", r.Name, n)
		}
		if !r.AlarmsAsExpected() && !r.NotRun {
			fmt.Fprintf(w, "gameday: %s: alarms not as expected\n", r.Name)
		}
	}
}
