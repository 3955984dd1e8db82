package samtemplate_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// templatePath and makefilePath are at the root of the module.
const (
	templatePath = "../../template.yaml"
	makefilePath = "../../Makefile"
	functionsDir = "../../functions"
)

func load(t *testing.T) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// TestMakefileArchitectureMatchesTemplate keeps build-% (what `sam build` runs, never told the
// Architecture parameter) building for the template's default Architecture.
func TestMakefileArchitectureMatchesTemplate(t *testing.T) {
	raw, err := os.ReadFile(makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TEMPLATE_GOARCH\s*:=\s*(\S+)\s*$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("Makefile sets no TEMPLATE_GOARCH")
	}
	arch, err := load(t).Param("Architecture")
	if err != nil {
		t.Fatal(err)
	}
	goarch := map[string]string{"arm64": "arm64", "x86_64": "amd64"}[arch]
	if goarch == "" {
		t.Fatalf("template's default Architecture %q has no GOARCH", arch)
	}
	if got := string(m[1]); got != goarch {
		t.Errorf("Makefile TEMPLATE_GOARCH = %s, but template.yaml's default Architecture %s needs GOARCH=%s", got, arch, goarch)
	}
}

// TestMakefileBuildsEveryFunction keeps the Makefile's build-<LogicalId> list (the folder
// `sam build` builds for each function) and template.yaml's functions the same: every
// function is listed, with a folder under functions/ that holds a main package; every entry
// is a function of the template; every folder is built for some function. And every function
// is built by the Makefile at the template's root (BuildMethod makefile, CodeUri "."), where
// SAM looks for it.
func TestMakefileBuildsEveryFunction(t *testing.T) {
	dirs, err := samtemplate.FunctionFolders(makefilePath)
	if err != nil {
		t.Fatal(err)
	}
	tpl := load(t)
	functions := tpl.Of("AWS::Serverless::Function")
	if len(functions) == 0 {
		t.Fatal("template.yaml has no AWS::Serverless::Function")
	}
	built := map[string]bool{}
	for _, id := range functions {
		r := tpl.Resources[id]
		if got := r.Metadata["BuildMethod"]; got != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, got)
		}
		if got := r.Properties["CodeUri"]; got != "." {
			t.Errorf("%s: CodeUri = %v, want . (where the Makefile is)", id, got)
		}
		dir, ok := dirs[id]
		if !ok {
			t.Errorf("%s: the Makefile has no line build-%s: FUNCTION_DIR := functions/<name>", id, id)
			continue
		}
		name, ok := strings.CutPrefix(dir, "functions/")
		if !ok || name == "" || strings.Contains(name, "/") {
			t.Errorf("build-%s: FUNCTION_DIR %s is not functions/<name>", id, dir)
			continue
		}
		if err := mainPackage(filepath.Join(functionsDir, name)); err != nil {
			t.Errorf("build-%s: %v", id, err)
		}
		built[name] = true
	}
	for id := range dirs {
		if !slices.Contains(functions, id) {
			t.Errorf("the Makefile lists build-%s, which is no function of template.yaml", id)
		}
	}
	entries, err := os.ReadDir(functionsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !built[e.Name()] {
			t.Errorf("functions/%s is built for no function of template.yaml (Makefile build-<LogicalId> list)", e.Name())
		}
	}
}

// mainPackage checks that dir holds a Go main package with a func main.
func mainPackage(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s holds no Go files", dir)
	}
	hasMain := false
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			return fmt.Errorf("%s is package %s, not main", path, f.Name.Name)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
				hasMain = true
			}
		}
	}
	if !hasMain {
		return fmt.Errorf("%s has no func main", dir)
	}
	return nil
}

func TestResolve(t *testing.T) {
	tpl, err := samtemplate.Parse([]byte(`
Parameters:
  Size: {Type: Number, Default: 7}
  Name: {Type: String, Default: ""}
Conditions:
  NoName: !Equals [!Ref Name, ""]
  Named: !Not [!Condition NoName]
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      A: !Ref Size
      B: !If [Named, 1, 2]
      C: !GetAtt Other.Arn
`))
	if err != nil {
		t.Fatal(err)
	}
	props := tpl.Resources["Q"].Properties
	if n, err := tpl.Int(props["A"]); err != nil || n != 7 {
		t.Errorf("A = %d, %v; want 7", n, err)
	}
	if n, err := tpl.Int(props["B"]); err != nil || n != 2 {
		t.Errorf("B = %d, %v; want 2 (Name empty)", n, err)
	}
	tpl.Overrides = map[string]string{"Name": "x", "Size": "9"}
	if n, err := tpl.Int(props["B"]); err != nil || n != 1 {
		t.Errorf("B with Name=x = %d, %v; want 1", n, err)
	}
	if n, err := tpl.Int(props["A"]); err != nil || n != 9 {
		t.Errorf("A with Size=9 = %d, %v; want 9", n, err)
	}
	if got, ok := samtemplate.Lookup(props, "C", "Fn::GetAtt"); !ok || len(got.([]any)) != 2 {
		t.Errorf("C = %v", props["C"])
	}
}
