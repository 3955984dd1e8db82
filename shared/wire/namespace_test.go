package wire_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsTakeTheConfiguredNamespace keeps the namespace of every function's metrics in
// config: each obs.Metrics a wire package builds sets Namespace (from
// config.Config.MetricsNamespace, which config.Load reads from METRICS_NAMESPACE), since obs
// reads no environment and would otherwise emit into the shared default.
func TestMetricsTakeTheConfiguredNamespace(t *testing.T) {
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if sel, ok := lit.Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Metrics" || !isIdent(sel.X, "obs") {
				return true
			}
			found++
			for _, el := range lit.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Namespace") {
					return true
				}
			}
			t.Errorf("%s: an obs.Metrics without the configured Namespace", path)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 6 {
		t.Errorf("found %d obs.Metrics literals under shared/wire, want one per function's wiring", found)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
