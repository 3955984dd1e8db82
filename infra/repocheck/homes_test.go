package repocheck_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// handlerPackages returns the package path of each function's handler, as the wire package
// under shared/wire that its main calls builds it.
func handlerPackages(t *testing.T) map[string]string {
	t.Helper()
	g := loadLinked(t)
	mains, err := filepath.Glob("functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions/*/main.go (%v)", err)
	}
	handlers := map[string]string{}
	for _, path := range mains {
		name := strings.ReplaceAll(filepath.Base(filepath.Dir(path)), "-", "")
		wirePkg := g.pkgs[module+"shared/wire/"+name]
		if wirePkg == nil {
			t.Fatalf("functions/%s links no shared/wire/%s", name, name)
		}
		h, err := handlerPackage(wirePkg)
		if err != nil {
			t.Fatalf("shared/wire/%s: %v", name, err)
		}
		handlers[h] = name
	}
	return handlers
}

// TestHandlersImportNoHandler keeps handlers and libraries apart: no package a function's
// handler imports is itself a function's handler. What two functions share (the audit
// entries and ledger that audit, audit-replay and digest use, say) is a library beside them.
func TestHandlersImportNoHandler(t *testing.T) {
	handlers := handlerPackages(t)
	for h := range handlers {
		for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, h) {
			if other, ok := handlers[imp]; ok {
				t.Errorf("%s imports %s, the %s function's handler: move what they share to a library",
					strings.TrimPrefix(h, module), strings.TrimPrefix(imp, module), other)
			}
		}
	}
}

// TestAdaptersAreGrouped keeps the tree telling a handler from an adapter: the adapters live
// under shared/adapters, no handler does, and no adapter imports a handler (an adapter serves
// the handlers through the ports they name, never the other way round).
func TestAdaptersAreGrouped(t *testing.T) {
	handlers := handlerPackages(t)
	for h := range handlers {
		if strings.HasPrefix(h, module+"shared/adapters/") {
			t.Errorf("%s is a handler under shared/adapters", strings.TrimPrefix(h, module))
		}
	}
	adapters := goList(t, "-f", `{{.ImportPath}}={{join .Imports ","}}`, "./shared/adapters/...")
	if len(adapters) == 0 {
		t.Fatal("no package under shared/adapters")
	}
	for _, line := range adapters {
		pkg, imports, _ := strings.Cut(line, "=")
		for imp := range strings.SplitSeq(imports, ",") {
			if _, ok := handlers[imp]; ok {
				t.Errorf("%s imports the handler %s", strings.TrimPrefix(pkg, module), strings.TrimPrefix(imp, module))
			}
		}
	}
}

// TestToolsHaveOneHome keeps one folder per tool under infra/: no folder name appears twice
// below infra/ (a tool's command beside its library is infra/<tool>/cmd), and nothing is left
// in the trees the tools came from.
func TestToolsHaveOneHome(t *testing.T) {
	for _, gone := range []string{"cmd", "dev", "e2e"} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("%s/ exists at the root: tools live under infra/", gone)
		}
	}
	seen := map[string]string{}
	err := filepath.WalkDir("infra", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == "infra" {
			return err
		}
		name := d.Name()
		if name == "testdata" || strings.HasPrefix(name, ".") {
			return filepath.SkipDir
		}
		if name == "cmd" {
			return nil
		}
		if first, ok := seen[name]; ok {
			t.Errorf("%s and %s: one tool, one folder, one name", first, path)
		}
		seen[name] = path
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// maxRootExtras is how many entries the root may hold beyond the design card's and docs/.
const maxRootExtras = 4

// TestRootIsTheCards keeps the root to the design card's entries, docs/ and at most
// maxRootExtras more, each named in README.md's Layout section; no Go file sits at the root.
func TestRootIsTheCards(t *testing.T) {
	card := map[string]bool{"functions": true, "shared": true, "infra": true, "events": true,
		"Makefile": true, "template.yaml": true, "go.mod": true, "README.md": true, "docs": true}
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	extras := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || ignoredByGit(t, name) {
			continue
		}
		if strings.HasSuffix(name, ".go") {
			t.Errorf("%s: no Go file at the root", name)
		}
		shown := name
		if e.IsDir() {
			shown += "/"
		}
		if !strings.Contains(layout, "`"+shown+"`") {
			t.Errorf("README.md's Layout section does not name %s", shown)
		}
		if !card[name] {
			extras++
		}
	}
	if extras > maxRootExtras {
		t.Errorf("the root holds %d entries beyond the card's and docs/, more than %d", extras, maxRootExtras)
	}
}

// ignoredByGit reports whether git ignores the root entry name: build output and reports
// (bin/, gameday-reports/) are not part of the tree a clone has.
func ignoredByGit(t *testing.T, name string) bool {
	t.Helper()
	err := exec.Command("git", "check-ignore", "-q", name).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false
	default:
		t.Fatalf("git check-ignore %s: %v", name, err)
		return false
	}
}
