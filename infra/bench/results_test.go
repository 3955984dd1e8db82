package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResultsKeepsFiguresAndSavesJSON(t *testing.T) {
	var out bytes.Buffer
	r := newResults(&out)
	// Lines may arrive in pieces.
	for _, piece := range []string{"write_units_per_admission=2.00\nwrite_", "units_per_transition=1.67\n", "note=DynamoDB Local, x=1\n", "no figure here\n"} {
		if _, err := r.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "sub", "bench.json")
	if err := r.save(path, "cost"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "bench_json="+path) {
		t.Errorf("output does not name the JSON file:\n%s", out.String())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Mode    string         `json:"mode"`
		Figures map[string]any `json:"figures"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"write_units_per_admission": 2.0, "write_units_per_transition": 1.67, "note": "DynamoDB Local, x=1"}
	if diff := cmp.Diff(want, doc.Figures); diff != "" || doc.Mode != "cost" {
		t.Errorf("figures (-want +got):\n%s (mode %q)", diff, doc.Mode)
	}
}
