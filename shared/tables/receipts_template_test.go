package tables

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTemplateReceiptsTable(t *testing.T) {
	resources := templateResources(t)
	raw, ok := resources["ReceiptsTable"]
	if !ok {
		t.Fatal("template.yaml has no resource ReceiptsTable")
	}
	got := templateShape(t, raw)
	want := definitionShape(Receipts("r"), ReceiptsTTLAttribute)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("template.yaml ReceiptsTable differs from tables (-definition +template):\n%s", diff)
	}
	var r struct {
		Properties struct {
			SSESpecification struct{ SSEEnabled bool }
		}
	}
	decode(t, raw, &r)
	if !r.Properties.SSESpecification.SSEEnabled {
		t.Error("ReceiptsTable: want SSE")
	}
}
