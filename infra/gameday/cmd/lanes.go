package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/resetnotify/resetnotify/infra/gameday"
)

// The files infra/gameday/gameday.sh writes into each lane's folder beside the lane's own report:
// the scenarios it gave the lane (comma-separated) and, once the lane ended, its exit status.
const (
	laneScenariosFile = "scenarios"
	laneExitFile      = "exit"
)

// printPlan prints the lanes of n that share scs, one a line: its number, its scenarios
// (comma-separated) and its expected minutes, tab-separated; or, when only is not 0, lane
// only's scenarios alone (nothing when the plan has fewer lanes).
func printPlan(w io.Writer, scs []gameday.Scenario, n, only int) error {
	if n < 1 {
		return fmt.Errorf("-lanes %d: at least 1", n)
	}
	lanes := gameday.PlanLanes(scs, n)
	if only < 0 || only > n {
		return fmt.Errorf("-lane %d: lanes are numbered 1 to %d", only, n)
	}
	for i, l := range lanes {
		names := make([]string, len(l))
		for j, sc := range l {
			names[j] = sc.Name
		}
		switch {
		case only == 0:
			fmt.Fprintf(w, "%d\t%s\t%.0f\n", i+1, strings.Join(names, ","), gameday.Takes(l).Minutes())
		case only == i+1:
			fmt.Fprintln(w, strings.Join(names, ","))
		}
	}
	return nil
}

// readLane reads what a lane left in dir: its plan, its exit status (-1 when it has none) and
// its report (nil when it wrote none).
func readLane(dir string) (gameday.LaneRun, error) {
	run := gameday.LaneRun{Dir: dir, Exit: -1}
	if b, err := os.ReadFile(filepath.Join(dir, laneScenariosFile)); err == nil {
		for _, name := range strings.Split(strings.TrimSpace(string(b)), ",") {
			if name != "" {
				run.Planned = append(run.Planned, name)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return run, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, laneExitFile)); err == nil {
		if run.Exit, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return run, fmt.Errorf("%s: %w", filepath.Join(dir, laneExitFile), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return run, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "gameday.json"))
	if errors.Is(err, os.ErrNotExist) {
		return run, nil
	}
	if err != nil {
		return run, err
	}
	run.Report = &gameday.Report{}
	if err := json.Unmarshal(b, run.Report); err != nil {
		return run, fmt.Errorf("%s: %w", filepath.Join(dir, "gameday.json"), err)
	}
	return run, nil
}

// mergeLanes merges the lanes' reports in dirs into one in out: gameday.md and gameday.json,
// with each chart copied beside them; prints the figures to w and fails when the game day did.
func mergeLanes(w io.Writer, dirs []string, out string, catalogue []gameday.Scenario) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var runs []gameday.LaneRun
	for _, dir := range dirs {
		run, err := readLane(dir)
		if err != nil {
			return err
		}
		// Charts are copied beside the merged report, which links them by name.
		if run.Report != nil {
			for _, r := range run.Report.Results {
				for _, png := range []string{r.Chart, r.Dashboard} {
					if png == "" {
						continue
					}
					if err := copyFile(filepath.Join(dir, png), filepath.Join(out, png)); err != nil {
						fmt.Fprintf(os.Stderr, "gameday: the chart of %s: %v\n", r.Name, err)
					}
				}
			}
		}
		// The report names each lane's folder as a link from its own folder.
		if rel, err := filepath.Rel(out, dir); err == nil && !strings.HasPrefix(rel, "..") {
			run.Dir = rel
		}
		runs = append(runs, run)
	}
	rep := gameday.MergeLanes(runs, catalogue)
	if err := rep.Write(out); err != nil {
		return err
	}
	fmt.Fprint(w, rep.Figures())
	fmt.Fprintf(w, "gameday: report in %s\n", filepath.Join(out, "gameday.md"))
	printFailures(w, rep)
	if rep.Failed() {
		var why []string
		if rep.Passed != rep.Scenarios {
			why = append(why, fmt.Sprintf("%d of %d scenarios did not pass", rep.Scenarios-rep.Passed, rep.Scenarios))
		}
		for _, l := range rep.Lanes {
			if l.Error != "" {
				why = append(why, fmt.Sprintf("lane %d %s", l.Lane, l.Error))
			}
		}
		return fmt.Errorf("%s (see %s)", strings.Join(why, "; "), filepath.Join(out, "gameday.md"))
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
