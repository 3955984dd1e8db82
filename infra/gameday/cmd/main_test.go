package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/gameday"
)

// gamedaySection returns docs/operations.md's "Game days" section.
func gamedaySection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Game days\n")
	if !ok {
		t.Fatal(`docs/operations.md has no section "Game days"`)
	}
	if next := strings.Index(after, "\n## "); next >= 0 {
		after = after[:next]
	}
	return after
}

// TestDocumentedCommands checks every command of the section's example: the make targets
// exist and run infra/gameday/cmd as documented, and each `go run ./infra/gameday/cmd` line names flags and
// scenarios that exist (-list is run).
func TestDocumentedCommands(t *testing.T) {
	sec := gamedaySection(t)
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal("no sh example in the section")
	}
	block, _, _ = strings.Cut(block, "```")
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case slices.Contains(f, "make"):
			// Variables first: GAMEDAY_SCENARIOS must name scenarios, GAMEDAY_LANES a number.
			for _, v := range f[:slices.Index(f, "make")] {
				name, value, ok := strings.Cut(v, "=")
				switch {
				case ok && name == "GAMEDAY_SCENARIOS":
					if _, err := selectScenarios(gameday.Scenarios(), value, false); err != nil {
						t.Errorf("%s: %v", line, err)
					}
				case ok && name == "GAMEDAY_LANES" && regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(value):
				default:
					t.Errorf("%s: %s is no variable of make gameday", line, v)
				}
			}
			f = f[slices.Index(f, "make"):]
			target := f[1]
			re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:.*\n\t(.*)`)
			m := re.FindStringSubmatch(string(makefile))
			// make gameday runs infra/gameday/gameday.sh, which runs each lane so.
			if m != nil && strings.Contains(m[1], "./infra/gameday/gameday.sh") {
				script, err := os.ReadFile("../../../infra/gameday/gameday.sh")
				if err != nil {
					t.Fatal(err)
				}
				m[1] = string(script)
			}
			if m == nil || !regexp.MustCompile(`RESETNOTIFY_FAULT_PROXY=1 \./infra/emulator/emulator\.sh (go run \./infra/gameday/cmd|"\$bin/gameday")`).MatchString(m[1]) {
				t.Errorf("make %s: no such target running infra/gameday/cmd behind the proxy (%v)", target, m)
			}
		case slices.Contains(f, "./infra/gameday/cmd"):
			runs++
			args := f[slices.Index(f, "./infra/gameday/cmd")+1:]
			if slices.Contains(args, "-list") {
				out, err := exec.Command("go", "run", ".", "-list").CombinedOutput()
				if err != nil {
					t.Fatalf("go run ./infra/gameday/cmd -list: %v\n%s", err, out)
				}
				for _, sc := range gameday.Scenarios() {
					if !strings.Contains(string(out), sc.Name) {
						t.Errorf("-list does not list %s:\n%s", sc.Name, out)
					}
				}
				continue
			}
			for i, a := range args {
				if a == "-scenarios" {
					if _, err := selectScenarios(gameday.Scenarios(), args[i+1], false); err != nil {
						t.Errorf("%s: %v", line, err)
					}
				}
			}
		default:
			t.Errorf("the example holds a command no test checks: %q", line)
		}
	}
	if runs < 2 {
		t.Errorf("found %d go run lines in the example, want the -scenarios and the -list ones", runs)
	}
}

// TestDocumentedScenarios holds the section's table to the catalogue: every scenario has a row
// naming its fault kinds and the alarms it expects and allows, and the short game day is the one documented.
func TestDocumentedScenarios(t *testing.T) {
	sec := gamedaySection(t)
	rows := map[string]string{}
	for _, line := range strings.Split(sec, "\n") {
		if m := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] = line
		}
	}
	for _, sc := range gameday.Scenarios() {
		row, ok := rows[sc.Name]
		if !ok {
			t.Errorf("scenario %s has no row in the Game days table", sc.Name)
			continue
		}
		for _, a := range append(slices.Clone(sc.Expect), sc.Allowed()...) {
			if !strings.Contains(row, "`"+a+"`") {
				t.Errorf("the row of %s does not name its expected or allowed alarm %s", sc.Name, a)
			}
		}
		for kind := range sc.MinFaults {
			if !strings.Contains(row, "`"+kind+"`") {
				t.Errorf("the row of %s does not name its fault kind %s", sc.Name, kind)
			}
		}
		// The takes column is the catalogue's Takes, by which make gameday plans its lanes.
		if want := fmt.Sprintf("| %.0f min |", sc.Takes.Minutes()); !strings.HasSuffix(row, want) {
			t.Errorf("the row of %s does not end with its Takes %q: %s", sc.Name, want, row)
		}
		delete(rows, sc.Name)
	}
	for name := range rows {
		t.Errorf("the Game days table has a row for %s, which is no scenario", name)
	}
	for _, name := range ciScenarios {
		if !strings.Contains(sec, "`"+name+"`") {
			t.Errorf("the section does not name %s among the short game day's", name)
		}
	}
	if _, err := selectScenarios(gameday.Scenarios(), "", true); err != nil {
		t.Error(err)
	}
}

// TestPrintFailures: a scenario not run names why, and only why; one run with alarms not as
// expected says so.
func TestPrintFailures(t *testing.T) {
	rep := &gameday.Report{Results: []gameday.Result{
		{Name: "baseline", NotRun: true, Errors: []string{"not run: DigestLagAlarm (silent: no datapoint of ns/DigestLag since 19:06:54)"}},
		{Name: "kms-outage", Alarms: []gameday.AlarmResult{{Name: "AuditFailureAlarm", Expected: true}}},
		{Name: "ok", Passed: true},
	}}
	var b strings.Builder
	printFailures(&b, rep)
	want := "gameday: baseline: not run: DigestLagAlarm (silent: no datapoint of ns/DigestLag since 19:06:54)\n" +
		"gameday: kms-outage: alarms not as expected\n"
	if b.String() != want {
		t.Errorf("printFailures:\n%s\nwant:\n%s", b.String(), want)
	}
}
