package resetnotify_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the house limit on a function's length outside tests: one screen.
const maxFuncLines = 60

// longReason is what the doc comment of a longer function must say, followed by why.
const longReason = "long because"

// TestFunctionsReadInOneScreen fails on a function or method outside tests that spans more
// than maxFuncLines lines and whose doc comment does not say why ("... long because ...").
func TestFunctionsReadInOneScreen(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines && !strings.Contains(fn.Doc.Text(), longReason) {
				t.Errorf("%s: %s is %d lines (limit %d): split it, or say in its doc comment why it is %s ...",
					fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines, longReason)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
