package render

import "testing"

// TestFillTakesExactlyOnePlaceholder: a text with no placeholder, an unknown one or two is
// refused, so a template cannot silently drop or repeat its value.
func TestFillTakesExactlyOnePlaceholder(t *testing.T) {
	v := values{Code: "X1", URL: "u"}
	for _, text := range []string{"no placeholder", "{{.Token}} unknown", "{{.Code}} and {{.Code}}", "{{.URL}} {{.Code}}", "{{.Code"} {
		if got, err := fill(text, v); err == nil {
			t.Errorf("fill(%q) = %q, want an error", text, got)
		}
	}
	if got, err := fill("Code {{.Code}}.", v); err != nil || got != "Code X1." {
		t.Errorf("fill = %q, %v", got, err)
	}
}
