package main

import (
	"context"
	"testing"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestWritesOnlyWhenNamed: -mode all leaves the writes benchmark out; naming it runs it.
func TestWritesOnlyWhenNamed(t *testing.T) {
	if (benchFlags{mode: "all"}).runs("writes") {
		t.Error("-mode all runs writes")
	}
	for _, mode := range []string{"writes", "admission,writes"} {
		if !(benchFlags{mode: mode}).runs("writes") {
			t.Errorf("-mode %s does not run writes", mode)
		}
	}
	if !(benchFlags{mode: "all"}).runs("admission") {
		t.Error("-mode all leaves admission out")
	}
}

// TestStubAdmits: the intake as deployed admits, guarded and unguarded, against the stub
// database (no emulator), so the writes benchmark's baseline measures admissions, not errors.
func TestStubAdmits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := tables.Names{Notifications: "n", Audit: "a", Guard: "g", Conversions: "c"}
	calls, err := admissionParts(ctx, stubDB(ctx), names, "_stub_db")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("got %d calls, want guarded and unguarded", len(calls))
	}
	for _, c := range calls {
		for i := range 3 {
			if err := c.call(ctx, i); err != nil {
				t.Errorf("%s %d: %v", c.name, i, err)
			}
		}
	}
}
