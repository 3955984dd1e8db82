package main

import (
	"testing"

	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

// TestBenchNumbersAreAdmitted holds the benchmark's numbers to the template's default
// allow-list (a number outside it is refused with 422 and the benchmark stops) and to one
// prefix each for the first len(benchPrefixes()) of them.
func TestBenchNumbersAreAdmitted(t *testing.T) {
	n := len(benchPrefixes())
	if n < 10000 {
		t.Fatalf("%d prefixes in the US and Canada, want thousands", n)
	}
	seen := map[string]bool{}
	for i := 0; i < 3*n; i += 3 {
		number := benchNumber(i)
		if r := (phoneregion.Regions{}).Region(number); r != "US" && r != "CA" {
			t.Fatalf("benchNumber(%d) = %s is in %q, not in US,CA", i, number, r)
		}
		if i < n {
			if seen[number[:7]] {
				t.Fatalf("benchNumber(%d) = %s repeats a prefix", i, number)
			}
			seen[number[:7]] = true
		}
	}
}
