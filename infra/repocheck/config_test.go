package repocheck_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/configdoc"
)

// configurationDoc is the page whose table lists every environment variable.
const configurationDoc = "docs/configuration.md"

// docSection returns the lines of the Markdown page's "## <title>" section.
func docSection(t *testing.T, page, title string) []string {
	t.Helper()
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## "+title
			continue
		}
		if in {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("%s has no section %q", page, title)
	}
	return lines
}

var envName = regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")

// TestConfigurationDocListsEveryVariable checks the table of docs/configuration.md against
// configdoc.Vars: every variable the functions read appears in it, and it lists no other. On a
// mismatch it prints the table configdoc.Vars describes.
func TestConfigurationDocListsEveryVariable(t *testing.T) {
	inDoc := map[string]bool{}
	for _, line := range docSection(t, configurationDoc, "Variables") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range envName.FindAllStringSubmatch(cells[1], -1) {
			inDoc[m[1]] = true
		}
	}
	known := map[string]bool{}
	for _, v := range configdoc.Vars() {
		known[v.Name] = true
		if !inDoc[v.Name] {
			t.Errorf("%s's table does not list %s", configurationDoc, v.Name)
		}
	}
	for name := range inDoc {
		if !known[name] {
			t.Errorf("%s's table lists %s, which configdoc.Vars does not know", configurationDoc, name)
		}
	}
	if t.Failed() {
		t.Logf("the table configdoc.Vars describes:\n%s", varsTable())
	}
}

// TestTemplateSetsOnlyKnownVariables checks that every variable template.yaml sets on a
// function is one configdoc.Vars knows.
func TestTemplateSetsOnlyKnownVariables(t *testing.T) {
	raw, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, v := range configdoc.Vars() {
		known[v.Name] = true
	}
	key := regexp.MustCompile(`^(\s+)([A-Z][A-Z0-9_]+):`)
	indent, found := -1, 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "Variables:" {
			indent = len(line) - len(strings.TrimLeft(line, " "))
			continue
		}
		if indent < 0 || strings.TrimSpace(line) == "" {
			continue
		}
		m := key.FindStringSubmatch(line)
		if m == nil || len(m[1]) <= indent {
			if len(line)-len(strings.TrimLeft(line, " ")) <= indent {
				indent = -1
			}
			continue
		}
		found++
		if !known[m[2]] {
			t.Errorf("template.yaml sets %s, which configdoc.Vars does not know", m[2])
		}
	}
	if found < 20 {
		t.Errorf("found only %d variables in template.yaml", found)
	}
}

// varsTable renders configdoc.Vars as the table of docs/configuration.md.
func varsTable() string {
	var b strings.Builder
	b.WriteString("| variable | read by | meaning | default |\n| --- | --- | --- | --- |\n")
	for _, v := range configdoc.Vars() {
		def := "—"
		switch {
		case strings.Contains(v.Default, " "):
			def = v.Default
		case v.Default != "":
			def = "`" + v.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, strings.Join(v.Functions, ", "), v.Meaning, def)
	}
	return b.String()
}
