package repocheck_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// TestFunctionsLinkOnlyShared keeps the line between shared/ (code a Lambda links) and the rest
// of the module: a function under functions/ links no package of dev/ (local machinery), of
// cmd/, of auditor/ (what auditors run) or of client/ (what callers run).
func TestFunctionsLinkOnlyShared(t *testing.T) {
	for _, fn := range goList(t, "./functions/...") {
		for _, dep := range goList(t, "-deps", fn) {
			rel, ours := strings.CutPrefix(dep, module)
			if ours && !strings.HasPrefix(rel, "shared/") && !strings.HasPrefix(rel, "functions/") {
				t.Errorf("%s links %s: a Lambda links only shared/", strings.TrimPrefix(fn, module), rel)
			}
		}
	}
}

// TestSharedImportsNoDev keeps dev/ out of shared/ even where no function looks: no package
// under shared/ imports a dev/ package (a test kit that needs dev/, like audittest, lives in
// dev/). Test files may: they are not part of the package a Lambda links.
func TestSharedImportsNoDev(t *testing.T) {
	out := goList(t, "-f", "{{.ImportPath}}={{join .Imports \",\"}}", "./shared/...")
	for _, line := range out {
		pkg, imports, _ := strings.Cut(line, "=")
		for imp := range strings.SplitSeq(imports, ",") {
			if strings.HasPrefix(imp, module+"infra/") {
				t.Errorf("%s imports %s: shared/ never depends on infra/", strings.TrimPrefix(pkg, module), strings.TrimPrefix(imp, module))
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
		t.Errorf("%s is linked by no function: move it to infra/", strings.TrimPrefix(pkg, module))
	}
}

// TestFunctionsLinkOnlyWhatTheyUse keeps each function's assembly in its own package under
// shared/wire: a function that never sends links no SMS adapter, the audit functions link
// neither the HTTP API nor the sealing, rendering and guard code of intake, and no function
// links another's handler but reconcile, which reads the receipts table through
// provider-events' store. Folding the wire packages back into one would make every function
// link them all.
func TestFunctionsLinkOnlyWhatTheyUse(t *testing.T) {
	smsAdapters := []string{"shared/adapters/sms/provider", "shared/adapters/sms/endusersms", "shared/adapters/sms/sinch", "shared/adapters/sms/simclient"}
	// The phone-number metadata (shared/phoneregion) costs every function that links it
	// 100 KB and the compiling of its patterns: only intake, which places numbers, and
	// dispatch, which re-checks every sealed number against the allow-list, may.
	phoneMetadata := []string{"shared/phoneregion"}
	intakeOnly := append([]string{"shared/intake", "shared/seal", "shared/render", "shared/adapters/guardstore"}, phoneMetadata...)
	// The phone-number library itself parses every region's metadata at init (25 ms, 2.5 MB)
	// and brings protobuf: no function links it (shared/phoneregion holds its patterns,
	// written out by infra/phonemeta).
	neverLinked := []string{"github.com/nyaruka/phonenumbers", "google.golang.org/protobuf/proto"}
	tests := []struct {
		function     string
		links, never []string
	}{
		{"intake", append([]string{"shared/wire/intake", "shared/intake", "shared/seal", "shared/adapters/guardstore", "shared/adapters/convstore", "shared/adapters/smsfeedback"}, phoneMetadata...), smsAdapters},
		// Dispatch counts a record whose creator never did: the guard's store, not intake's.
		{"dispatch", append([]string{"shared/wire/dispatch", "shared/dispatch", "shared/adapters/sms/provider", "shared/seal", "shared/adapters/convstore", "shared/adapters/guardstore"}, phoneMetadata...), []string{"shared/intake", "shared/reconcile", "shared/sweeper", "shared/providerevents", "shared/adapters/smsfeedback"}},
		{"reconcile", []string{"shared/wire/reconcile", "shared/reconcile", "shared/adapters/sms/provider", "shared/providerevents"}, append([]string{"shared/intake", "shared/dispatch", "shared/sweeper", "shared/seal", "shared/adapters/guardstore"}, phoneMetadata...)},
		{"sweeper", []string{"shared/wire/sweeper", "shared/sweeper"}, append(append([]string{"shared/intake", "shared/dispatch", "shared/reconcile", "shared/seal", "shared/adapters/guardstore", "shared/providerevents"}, smsAdapters...), phoneMetadata...)},
		{"audit", []string{"shared/wire/audit", "shared/audit", "shared/auditlog"}, append(append([]string{"shared/workercore", "shared/providerevents", "shared/digest", "shared/auditreplay"}, intakeOnly...), smsAdapters...)},
		{"audit-replay", []string{"shared/wire/auditreplay", "shared/auditreplay", "shared/auditlog"}, append(append([]string{"shared/audit", "shared/workercore", "shared/providerevents", "shared/digest"}, intakeOnly...), smsAdapters...)},
		{"digest", []string{"shared/wire/digest", "shared/digest", "shared/auditlog"}, append(append([]string{"shared/audit", "shared/workercore", "shared/providerevents", "shared/auditreplay"}, intakeOnly...), smsAdapters...)},
		{"provider-events", []string{"shared/wire/providerevents", "shared/providerevents"}, append(append([]string{"shared/workercore", "shared/audit", "shared/auditlog"}, intakeOnly...), smsAdapters...)},
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
			for _, pkg := range append(slices.Clone(tc.never), neverLinked...) {
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

// TestHandlersAreNamedAfterTheirFunctions keeps one name per function: functions/<name>/main.go
// calls shared/wire/<name>, and the handler that wire package's Function builds (the type
// argument of its wire.Function) is in shared/<name>, with the dash of a folder name dropped
// (provider-events is shared/wire/providerevents and shared/providerevents).
func TestHandlersAreNamedAfterTheirFunctions(t *testing.T) {
	g := loadLinked(t)
	mains, err := filepath.Glob("functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions/*/main.go (%v)", err)
	}
	for _, path := range mains {
		name := filepath.Base(filepath.Dir(path))
		want := strings.ReplaceAll(name, "-", "")
		wirePkg := g.pkgs[module+"shared/wire/"+want]
		if wirePkg == nil || !imports(t, path, module+"shared/wire/"+want) {
			t.Errorf("%s does not call shared/wire/%s", path, want)
			continue
		}
		handler, err := handlerPackage(wirePkg)
		if err != nil {
			t.Errorf("shared/wire/%s: %v", want, err)
			continue
		}
		if got := strings.TrimPrefix(handler, module); got != "shared/"+want {
			t.Errorf("functions/%s: its handler is in %s, want shared/%s", name, got, want)
		}
	}
}

// imports reports whether the Go file at path imports pkg.
func imports(t *testing.T, path, pkg string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) == pkg {
			return true
		}
	}
	return false
}

// handlerPackage returns the package of the handler type that p's Function builds: H of
// wire.Function[H], through a pointer.
func handlerPackage(p *types.Package) (string, error) {
	fn := p.Scope().Lookup("Function")
	if fn == nil {
		return "", errors.New("no Function")
	}
	named, ok := fn.Type().(*types.Named)
	if !ok || named.TypeArgs().Len() != 1 {
		return "", fmt.Errorf("Function is a %s, not a wire.Function[H]", fn.Type())
	}
	h := named.TypeArgs().At(0)
	if ptr, ok := h.(*types.Pointer); ok {
		h = ptr.Elem()
	}
	hn, ok := h.(*types.Named)
	if !ok || hn.Obj().Pkg() == nil {
		return "", fmt.Errorf("the handler %s is not a named type", h)
	}
	return hn.Obj().Pkg().Path(), nil
}

// TestLinkedFilesServeAFunction fails on a file (tests aside) of a package some function links
// when nothing declared in it is used by any function: code that only cmd/, dev/ or tests use
// rides in every Lambda that links its package, and belongs beside its users. A declaration is
// used when a function's main reaches it through the declarations that refer to it, a method
// when its type is used (an interface may call it), an init function always. A file that
// declares nothing (a doc.go) is left alone.
func TestLinkedFilesServeAFunction(t *testing.T) {
	g := loadLinked(t)
	used := g.reached()
	for _, path := range g.files {
		decls := g.decls[path]
		if len(decls) == 0 {
			continue
		}
		if !slices.ContainsFunc(decls, func(o types.Object) bool { return used[o] }) {
			rel, _ := filepath.Rel(g.root, path)
			name := decls[0].Name()
			if i := slices.IndexFunc(decls, types.Object.Exported); i >= 0 {
				name = decls[i].Name()
			}
			t.Errorf("%s: no function uses what it declares (%s, ...): move it beside the cmd/, dev/ or test code that does", rel, name)
		}
	}
}

// linkedGraph is every package of the module that a function links, type-checked from its
// source (tests aside); packages outside the module come from their export data.
type linkedGraph struct {
	root  string
	fset  *token.FileSet
	info  *types.Info
	pkgs  map[string]*types.Package
	files []string                  // every file, dependencies first
	decls map[string][]types.Object // the named declarations of each file
	// refs holds what each declaration's source refers to in the module, methods the methods
	// of each type, roots the functions' mains and every init.
	refs    map[types.Object][]types.Object
	methods map[types.Object][]types.Object
	roots   []types.Object
}

var (
	linkedOnce sync.Once
	linked     *linkedGraph
	errLinked  error
)

// loadLinked returns the linked graph, loaded once for every test that needs it.
func loadLinked(t *testing.T) *linkedGraph {
	t.Helper()
	linkedOnce.Do(func() { linked, errLinked = loadLinkedGraph() })
	if errLinked != nil {
		t.Fatal(errLinked)
	}
	return linked
}

type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
}

// loadLinkedGraph runs go list -deps -export over ./functions/... and type-checks the
// module's packages in the order it lists them, dependencies first.
func loadLinkedGraph() (*linkedGraph, error) {
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,GoFiles,Export", "./functions/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	g := &linkedGraph{root: root, fset: token.NewFileSet(), pkgs: map[string]*types.Package{},
		info:  &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}},
		decls: map[string][]types.Object{}, refs: map[types.Object][]types.Object{}, methods: map[types.Object][]types.Object{}}
	exports := map[string]string{}
	var ours []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if strings.HasPrefix(p.ImportPath, module) {
			ours = append(ours, p)
		}
	}
	gc := importer.ForCompiler(g.fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	conf := types.Config{Importer: importerFunc(func(path string) (*types.Package, error) {
		if p, ok := g.pkgs[path]; ok {
			return p, nil
		}
		return gc.Import(path)
	})}
	for _, p := range ours {
		if err := g.check(conf, p); err != nil {
			return nil, err
		}
	}
	return g, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// check parses and type-checks p, and records its files' declarations and what they refer to.
func (g *linkedGraph) check(conf types.Config, p listedPackage) error {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(g.fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	tp, err := conf.Check(p.ImportPath, g.fset, files, g.info)
	if err != nil {
		return fmt.Errorf("type-check %s: %w", p.ImportPath, err)
	}
	g.pkgs[p.ImportPath] = tp
	for i, f := range files {
		path := filepath.Join(p.Dir, p.GoFiles[i])
		g.files = append(g.files, path)
		for _, d := range f.Decls {
			g.declare(path, d)
		}
	}
	return nil
}

// declare records the named declarations of d, in the file at path, and their references.
func (g *linkedGraph) declare(path string, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		o := g.info.Defs[d.Name]
		if d.Recv == nil && d.Name.Name == "init" {
			o = types.NewFunc(d.Pos(), nil, "init", nil) // an init has no object of its own
			g.roots = append(g.roots, o)
		} else if d.Recv == nil && d.Name.Name == "main" && o.Pkg().Name() == "main" {
			g.roots = append(g.roots, o)
		}
		if recv := receiverType(o); recv != nil {
			g.methods[recv] = append(g.methods[recv], o)
		}
		g.add(path, o, d)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch spec := spec.(type) {
			case *ast.TypeSpec:
				g.add(path, g.info.Defs[spec.Name], spec)
			case *ast.ValueSpec:
				for _, n := range spec.Names {
					if n.Name != "_" {
						g.add(path, g.info.Defs[n], spec)
					}
				}
			}
		}
	}
}

// receiverType returns the named type a method is declared on, or nil for a function.
func receiverType(o types.Object) types.Object {
	fn, ok := o.(*types.Func)
	if !ok || fn.Signature().Recv() == nil {
		return nil
	}
	t := fn.Signature().Recv().Type()
	if ptr, ok := t.(*types.Pointer); ok {
		t = ptr.Elem()
	}
	if named, ok := t.(*types.Named); ok {
		return named.Obj()
	}
	return nil
}

// add records o, declared by n in the file at path, and the module's objects n refers to.
func (g *linkedGraph) add(path string, o types.Object, n ast.Node) {
	if o == nil {
		return
	}
	if o.Name() != "init" {
		g.decls[path] = append(g.decls[path], o)
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if r := g.info.Uses[id]; r != nil && r.Pkg() != nil && g.pkgs[r.Pkg().Path()] != nil {
				g.refs[o] = append(g.refs[o], origin(r))
			}
		}
		return true
	})
}

// origin returns the generic declaration an instantiated function or field comes from.
func origin(o types.Object) types.Object {
	switch o := o.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return o
}

// reached returns every declaration the functions' mains and the inits reach.
func (g *linkedGraph) reached() map[types.Object]bool {
	seen := map[types.Object]bool{}
	work := append([]types.Object(nil), g.roots...)
	for len(work) > 0 {
		o := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[o] {
			continue
		}
		seen[o] = true
		work = append(work, g.refs[o]...)
		work = append(work, g.methods[o]...)
	}
	return seen
}

// TestFunctionsLinkNoTextTemplate: no function, built as deployed (-tags lambda.norpc), links
// text/template, whose use of reflect's MethodByName makes the linker keep every exported
// method of every linked type: it doubled dispatch's bootstrap (shared/render fills its one
// placeholder itself).
func TestFunctionsLinkNoTextTemplate(t *testing.T) {
	deps := goList(t, "-tags", "lambda.norpc", "-deps", "./functions/...")
	if slices.Contains(deps, "text/template") {
		t.Error("a function built with -tags lambda.norpc links text/template")
	}
}

// TestFunctionsLinkNoCredentialChain: no function, built as deployed, links the SDK's config
// package or the default credential chain behind it (STS, SSO, SSO OIDC, IMDS, the shared
// files): in Lambda the region and the execution role's credentials are in the environment
// (awsclient.FromLambdaEnv), and the chain was about 680 KB of every bootstrap.
func TestFunctionsLinkNoCredentialChain(t *testing.T) {
	banned := []string{
		"github.com/aws/aws-sdk-go-v2/config",
		"github.com/aws/aws-sdk-go-v2/service/sts",
		"github.com/aws/aws-sdk-go-v2/service/sso",
		"github.com/aws/aws-sdk-go-v2/service/ssooidc",
		"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
		"github.com/aws/aws-sdk-go-v2/credentials/ssocreds",
		"github.com/aws/aws-sdk-go-v2/credentials/stscreds",
		"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds",
	}
	deps := goList(t, "-tags", "lambda.norpc", "-deps", "./functions/...")
	for _, b := range banned {
		if slices.Contains(deps, b) {
			t.Errorf("a function built with -tags lambda.norpc links %s", b)
		}
	}
}
