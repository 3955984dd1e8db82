package repocheck_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// transitionLine is one line of docs/design.md's transition list:
// "- `from` → `to`: REASON, REASON (a note)", "none" standing for no record.
var transitionLine = regexp.MustCompile("^- (none|`([a-z_]+)`) → `([a-z_]+)`: ([A-Z_]+(?:, [A-Z_]+)*)")

// stateRow is one row of docs/design.md's state table.
var stateRow = regexp.MustCompile("^\\| `([a-z_]+)`(?:, `([a-z_]+)`)? \\|")

// TestDesignListsTheTransitions holds docs/design.md's states and transitions to shared/notify:
// every state, every pair of states and every reason the domain allows is written down, and
// nothing else is.
func TestDesignListsTheTransitions(t *testing.T) {
	doc, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[[2]notify.State][]notify.Reason{}
	var states []notify.State
	for _, line := range strings.Split(string(doc), "\n") {
		if m := transitionLine.FindStringSubmatch(line); m != nil {
			edge := [2]notify.State{notify.State(m[2]), notify.State(m[3])}
			if _, dup := documented[edge]; dup {
				t.Errorf("docs/design.md lists %q → %q twice", edge[0], edge[1])
			}
			for _, r := range strings.Split(m[4], ", ") {
				documented[edge] = append(documented[edge], notify.Reason(r))
			}
		}
		if m := stateRow.FindStringSubmatch(line); m != nil {
			for _, s := range m[1:] {
				if s != "" {
					states = append(states, notify.State(s))
				}
			}
		}
	}
	if !slices.Equal(states, notify.States) {
		t.Errorf("docs/design.md's state table lists %v, shared/notify %v", states, notify.States)
	}
	all := append([]notify.State{notify.StateNone}, notify.States...)
	for _, from := range all {
		for _, to := range notify.States {
			want, got := notify.Reasons(from, to), documented[[2]notify.State{from, to}]
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%q → %q: docs/design.md lists %v, shared/notify allows %v", from, to, got, want)
			}
			delete(documented, [2]notify.State{from, to})
		}
	}
	for edge := range documented {
		t.Errorf("docs/design.md lists %q → %q, which is no pair of known states", edge[0], edge[1])
	}
}
