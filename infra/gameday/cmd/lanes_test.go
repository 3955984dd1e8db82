package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/gameday"
)

func TestPrintPlan(t *testing.T) {
	scs, err := selectScenarios(gameday.Scenarios(), "baseline,sqs-duplicates,provider-down", false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := printPlan(&b, scs, 2, 0); err != nil {
		t.Fatal(err)
	}
	if want := "1\tprovider-down\t25\n2\tbaseline,sqs-duplicates\t20\n"; b.String() != want {
		t.Errorf("-plan -lanes 2 printed %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := printPlan(&b, scs, 2, 2); err != nil || b.String() != "baseline,sqs-duplicates\n" {
		t.Errorf("-lane 2 printed %q (%v)", b.String(), err)
	}
	b.Reset()
	// More lanes than scenarios: a lane each; the lanes past them print nothing.
	if err := printPlan(&b, scs, 5, 0); err != nil || strings.Count(b.String(), "\n") != 3 {
		t.Errorf("-plan -lanes 5 printed %q (%v)", b.String(), err)
	}
	if err := printPlan(&b, scs, 0, 0); err == nil {
		t.Error("-lanes 0: want an error")
	}
	if err := printPlan(&b, scs, 2, 3); err == nil {
		t.Error("-lanes 2 -lane 3: want an error")
	}
}

// TestMergeCommand merges lane folders as infra/gameday/gameday.sh leaves them: one passed with a
// chart, one whose stack never came up.
func TestMergeCommand(t *testing.T) {
	out := t.TempDir()
	lane1, lane2 := filepath.Join(out, "lane-1"), filepath.Join(out, "lane-2")
	for _, d := range []string{lane1, lane2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := gameday.Report{Stack: "resetnotify-e2e", Started: time.Now().UTC(), Finished: time.Now().UTC(), Results: []gameday.Result{
		{Name: "sqs-duplicates", Passed: true, Chart: "sqs-duplicates.png", Dashboard: "dashboard-sqs-duplicates.png", Faults: map[string]int64{"sqs-duplicate": 7}},
	}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(lane1, "gameday.json"), string(b))
	write(filepath.Join(lane1, "sqs-duplicates.png"), "png")
	write(filepath.Join(lane1, "dashboard-sqs-duplicates.png"), "dashboard png")
	write(filepath.Join(lane1, laneScenariosFile), "sqs-duplicates\n")
	write(filepath.Join(lane1, laneExitFile), "0\n")
	write(filepath.Join(lane2, laneScenariosFile), "baseline\n")
	write(filepath.Join(lane2, laneExitFile), "1\n")

	err = mergeLanes(io.Discard, []string{lane1, lane2}, out, gameday.Scenarios())
	if err == nil || !strings.Contains(err.Error(), "1 of 2 scenarios did not pass") || !strings.Contains(err.Error(), "lane 2 wrote no report") {
		t.Errorf("merge of a lane that never started: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "sqs-duplicates.png")); err != nil || string(b) != "png" {
		t.Errorf("the chart beside the merged report: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "dashboard-sqs-duplicates.png")); err != nil || string(b) != "dashboard png" {
		t.Errorf("the dashboard beside the merged report: %q, %v", b, err)
	}
	var merged gameday.Report
	b, err = os.ReadFile(filepath.Join(out, "gameday.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &merged); err != nil {
		t.Fatal(err)
	}
	if merged.Scenarios != 2 || merged.Passed != 1 || merged.FaultsInjected != 7 || len(merged.Lanes) != 2 || merged.Lanes[1].Dir != "lane-2" {
		t.Errorf("merged report %+v", merged)
	}
	md, err := os.ReadFile(filepath.Join(out, "gameday.md"))
	if err != nil || !strings.Contains(string(md), "[lane-1](lane-1)") || !strings.Contains(string(md), "Ran in lane 1.") {
		t.Errorf("merged gameday.md (%v):\n%s", err, md)
	}

	// Every lane passed: no error.
	var figures bytes.Buffer
	if err := mergeLanes(&figures, []string{lane1}, filepath.Join(out, "again"), gameday.Scenarios()); err != nil {
		t.Errorf("every lane passed: %v", err)
	}
	if !strings.Contains(figures.String(), "gameday_scenarios=1\n") || !strings.Contains(figures.String(), "gameday_faults_injected=7\n") {
		t.Errorf("the figures printed: %q", figures.String())
	}
}

// TestStartRelease: -from names the release a lane must deploy first, the one its upgrade
// scenario starts from, and that scenario runs first whatever the list's order; without it, none.
func TestStartRelease(t *testing.T) {
	for list, want := range map[string]string{"baseline,upgrade": gameday.PreviousRelease, "all": gameday.PreviousRelease, "baseline,sqs-duplicates": ""} {
		scs, err := selectScenarios(gameday.Scenarios(), list, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := startRelease(scs); got != want {
			t.Errorf("-from -scenarios %s printed %q, want %q", list, got, want)
		}
		if want != "" && scs[0].Name != "upgrade" {
			t.Errorf("-scenarios %s runs %s first, want upgrade", list, scs[0].Name)
		}
	}
}
