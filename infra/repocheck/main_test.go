// Package repocheck_test keeps the repository's documents, layout and contract in step: the
// links and examples of README.md and docs/, the API in docs/openapi.yaml, the configuration
// pages and the import graph of functions/ and shared/.
package repocheck_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs every check from the repository's root, where the paths they name are.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
