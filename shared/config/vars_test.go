package config_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
)

// TestVarsListEveryVariable checks that Vars lists every variable this package names (each
// `Env... = "NAME"` constant of its sources), once.
func TestVarsListEveryVariable(t *testing.T) {
	named := map[string]bool{}
	constant := regexp.MustCompile(`(?m)^\s*(?:const\s+)?Env\w+\s*=\s*"([A-Z][A-Z0-9_]*)"`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range constant.FindAllStringSubmatch(string(src), -1) {
			named[m[1]] = true
		}
	}
	listed := map[string]bool{}
	for _, v := range config.Vars() {
		if listed[v.Name] {
			t.Errorf("%s is listed twice", v.Name)
		}
		listed[v.Name] = true
		if !named[v.Name] {
			t.Errorf("%s is listed but named by no Env constant", v.Name)
		}
		if v.Meaning == "" || len(v.Functions) == 0 {
			t.Errorf("%s has no meaning or no reader", v.Name)
		}
	}
	for name := range named {
		if !listed[name] {
			t.Errorf("%s is named but not listed in Vars", name)
		}
	}
	if len(named) < 50 || !slices.ContainsFunc(config.Vars(), func(v config.Var) bool { return v.Name == "LEASE_SECONDS" }) {
		t.Errorf("found only %d variables", len(named))
	}
}
