package repocheck_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxREADMELines bounds README.md: it is the front door (what it is, the flow, two commands, try,
// run, deploy, where to read next); the reference lives in docs/.
const maxREADMELines = 300

// TestREADMEIsShort holds README.md to maxREADMELines lines.
func TestREADMEIsShort(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > maxREADMELines {
		t.Errorf("README.md has %d lines, more than %d: move reference text into docs/", n, maxREADMELines)
	}
}

// The lines a README flow diagram is written in: a node, an edge (with an optional quoted
// label), and the class line that marks the function nodes. Other Mermaid forms (a node defined
// inside an edge, chained edges) are refused so that no node or edge goes unread.
var (
	mermaidNode      = regexp.MustCompile(`^(\w+)(\(\[|\[\[|\[\(|\{\{|\[)"([^"]+)"(\]\)|\]\]|\)\]|\}\}|\])$`)
	mermaidEdge      = regexp.MustCompile(`^(\w+) -->(?:\|"[^"]*"\|)? (\w+)$`)
	mermaidFunctions = regexp.MustCompile(`^class ([\w,]+) function$`)
	mermaidOther     = regexp.MustCompile(`^(flowchart (TB|TD|LR)|classDef \w+ .*|%%.*)$`)
)

// TestREADMEDrawsEveryFunction checks README.md's Mermaid flow against the folders of
// functions/: the nodes of class "function" are labelled with exactly those folder names, and
// each has an arrow into it from a node that is not a function: what triggers it.
func TestREADMEDrawsEveryFunction(t *testing.T) {
	entries, err := os.ReadDir("functions")
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, e := range entries {
		if e.IsDir() {
			folders = append(folders, e.Name())
		}
	}
	labels, edges, functionIDs := readFlow(t)
	var drawn []string
	isFunction := map[string]bool{}
	for _, id := range functionIDs {
		isFunction[id] = true
		drawn = append(drawn, labels[id])
	}
	slices.Sort(drawn)
	if !slices.Equal(drawn, folders) {
		t.Errorf("README.md's flow draws the functions %q; functions/ holds %q", drawn, folders)
	}
	for _, id := range functionIDs {
		triggered := false
		for _, e := range edges {
			triggered = triggered || (e[1] == id && !isFunction[e[0]])
		}
		if !triggered {
			t.Errorf("README.md's flow draws %s with no arrow from what triggers it", labels[id])
		}
	}
}

// readFlow reads README.md's first Mermaid block: each node's label by ID, the edges as (from,
// to) pairs, and the IDs of the function nodes. Every edge names nodes the block defines.
func readFlow(t *testing.T) (labels map[string]string, edges [][2]string, functionIDs []string) {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, found := strings.Cut(string(raw), "```mermaid\n")
	block, _, closed := strings.Cut(block, "```")
	if !found || !closed {
		t.Fatal("README.md has no Mermaid block")
	}
	labels = map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if m := mermaidNode.FindStringSubmatch(line); m != nil {
			labels[m[1]] = m[3]
		} else if m := mermaidEdge.FindStringSubmatch(line); m != nil {
			edges = append(edges, [2]string{m[1], m[2]})
		} else if m := mermaidFunctions.FindStringSubmatch(line); m != nil {
			functionIDs = append(functionIDs, strings.Split(m[1], ",")...)
		} else if line != "" && !mermaidOther.MatchString(line) {
			t.Errorf("README.md's flow: cannot read %q (define nodes on their own lines, one edge a line)", line)
		}
	}
	for _, e := range edges {
		for _, id := range e {
			if _, ok := labels[id]; !ok {
				t.Errorf("README.md's flow: an edge names %s, which no line defines", id)
			}
		}
	}
	for _, id := range functionIDs {
		if _, ok := labels[id]; !ok {
			t.Errorf("README.md's flow: the function class names %s, which no line defines", id)
		}
	}
	return labels, edges, functionIDs
}
