package tables

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTemplateGuardTable(t *testing.T) {
	resources := templateResources(t)
	raw, ok := resources["GuardTable"]
	if !ok {
		t.Fatal("template.yaml has no resource GuardTable")
	}
	got := templateShape(t, raw)
	want := definitionShape(Guard("g"), GuardTTLAttribute)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("template.yaml GuardTable differs from tables (-definition +template):\n%s", diff)
	}
}
