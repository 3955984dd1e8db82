package resetnotify_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/resetnotify/resetnotify/"

// goList runs `go list` with args and returns one line per package.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestFunctionsLinkNoDevPackage keeps the line between shared/ (code a Lambda links) and dev/
// (local machinery): no function under functions/ may link a dev/ package.
func TestFunctionsLinkNoDevPackage(t *testing.T) {
	for _, fn := range goList(t, "./functions/...") {
		for _, dep := range goList(t, "-deps", fn) {
			if strings.HasPrefix(dep, module+"dev/") {
				t.Errorf("%s links %s: dev/ is never linked into a Lambda", strings.TrimPrefix(fn, module), strings.TrimPrefix(dep, module))
			}
		}
	}
}

// TestSharedHoldsOnlyLinkedCode fails when a package under shared/ is linked by no function:
// such code belongs in dev/ (or in a cmd/). A test kit named <pkg>test beside the package it
// fakes (notifytest, audittest) is the one exception, as net/http/httptest is in the standard
// library.
func TestSharedHoldsOnlyLinkedCode(t *testing.T) {
	linked := map[string]bool{}
	for _, dep := range goList(t, "-deps", "./functions/...") {
		linked[dep] = true
	}
	for _, pkg := range goList(t, "./shared/...") {
		if linked[pkg] {
			continue
		}
		parts := strings.Split(pkg, "/")
		last, parent := parts[len(parts)-1], parts[len(parts)-2]
		if last == parent+"test" {
			continue
		}
		t.Errorf("%s is linked by no function: move it to dev/", strings.TrimPrefix(pkg, module))
	}
}
