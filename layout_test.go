package resetnotify_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
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

// TestFunctionsLinkOnlyWhatTheyUse keeps each function's assembly in its own package under
// shared/wire: a function that never sends links no SMS adapter, and the audit functions link
// neither the HTTP API nor the sealing, rendering and guard code of intake. Folding the wire
// packages back into one would make every function link them all.
func TestFunctionsLinkOnlyWhatTheyUse(t *testing.T) {
	smsAdapters := []string{"shared/sms/provider", "shared/sms/endusersms", "shared/sms/sinch", "shared/sms/simclient"}
	// The phone-number metadata (shared/phoneregion) costs every function that links it
	// megabytes and milliseconds of init: only intake, which places numbers, may.
	phoneMetadata := []string{"shared/phoneregion", "github.com/nyaruka/phonenumbers"}
	intakeOnly := append([]string{"shared/intake", "shared/seal", "shared/render", "shared/guardstore"}, phoneMetadata...)
	tests := []struct {
		function     string
		links, never []string
	}{
		{"intake", append([]string{"shared/wire/intake", "shared/intake", "shared/seal", "shared/guardstore", "shared/convstore", "shared/smsfeedback"}, phoneMetadata...), smsAdapters},
		{"dispatch", []string{"shared/wire/dispatch", "shared/sms/provider", "shared/seal", "shared/convstore"}, append([]string{"shared/intake", "shared/guardstore", "shared/providerevents", "shared/smsfeedback"}, phoneMetadata...)},
		{"reconcile", []string{"shared/wire/reconcile", "shared/sms/provider", "shared/providerevents"}, append([]string{"shared/intake", "shared/seal", "shared/guardstore"}, phoneMetadata...)},
		{"sweeper", []string{"shared/wire/sweeper"}, append(append([]string{"shared/intake", "shared/seal", "shared/guardstore", "shared/providerevents"}, smsAdapters...), phoneMetadata...)},
		{"audit", []string{"shared/wire/audit", "shared/audit"}, append(append([]string{"shared/workercore", "shared/providerevents"}, intakeOnly...), smsAdapters...)},
		{"audit-replay", []string{"shared/wire/auditreplay", "shared/audit"}, append(append([]string{"shared/workercore", "shared/providerevents"}, intakeOnly...), smsAdapters...)},
		{"digest", []string{"shared/wire/digest", "shared/audit"}, append(append([]string{"shared/workercore", "shared/providerevents"}, intakeOnly...), smsAdapters...)},
		{"provider-events", []string{"shared/wire/providerevents", "shared/providerevents"}, append(append([]string{"shared/workercore", "shared/audit"}, intakeOnly...), smsAdapters...)},
	}
	for _, tc := range tests {
		t.Run(tc.function, func(t *testing.T) {
			deps := map[string]bool{}
			for _, dep := range goList(t, "-deps", "./functions/"+tc.function) {
				deps[strings.TrimPrefix(dep, module)] = true
			}
			for _, pkg := range tc.links {
				if !deps[pkg] {
					t.Errorf("functions/%s does not link %s", tc.function, pkg)
				}
			}
			for _, pkg := range tc.never {
				if deps[pkg] {
					t.Errorf("functions/%s links %s, which it never uses", tc.function, pkg)
				}
			}
		})
	}
}

// TestMainsHaveOneShape keeps every functions/<name>/main.go to the one shape: a main whose
// only statement is wire.Main(<package>.Function), the package being one of shared/wire's.
func TestMainsHaveOneShape(t *testing.T) {
	mains, err := filepath.Glob("functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions/*/main.go (%v)", err)
	}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var call string
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.Name != "main" || len(d.Body.List) != 1 {
					t.Errorf("%s: func %s: a main holds only func main() { wire.Main(<pkg>.Function) }", path, d.Name.Name)
					continue
				}
				if stmt, ok := d.Body.List[0].(*ast.ExprStmt); ok {
					call = types.ExprString(stmt.X)
				}
			case *ast.GenDecl:
				if d.Tok != token.IMPORT {
					t.Errorf("%s: a main declares no %s", path, d.Tok)
				}
			}
		}
		if !strings.HasPrefix(call, "wire.Main(") || !strings.HasSuffix(call, ".Function)") {
			t.Errorf("%s: main calls %q, want wire.Main(<pkg>.Function)", path, call)
		}
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); !strings.HasPrefix(p, module+"shared/wire") {
				t.Errorf("%s imports %s: a main imports only shared/wire and its function's wire package", path, p)
			}
		}
	}
}
