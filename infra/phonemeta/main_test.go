package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestTableIsUpToDate: shared/phoneregion's table is what the pinned library's metadata gives;
// after a bump of the library, go run ./infra/phonemeta rewrites it.
func TestTableIsUpToDate(t *testing.T) {
	want, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", Out))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the library's metadata gives (%d bytes, want %d): run go run ./infra/phonemeta", Out, len(got), len(want))
	}
}
