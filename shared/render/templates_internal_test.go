package render

import "testing"

// TestParseTakesExactlyOnePlaceholder: a source with no placeholder, an unknown one or two is
// refused, so a template cannot silently drop or repeat its value.
func TestParseTakesExactlyOnePlaceholder(t *testing.T) {
	for _, src := range []string{"no placeholder", "{{.Token}} unknown", "{{.Code}} and {{.Code}}", "{{.URL}} {{.Code}}"} {
		if _, err := parse(src); err == nil {
			t.Errorf("parse(%q) accepted it", src)
		}
	}
	tm, err := parse("Code {{.Code}}.")
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.fill(values{Code: "X1", URL: "u"}); got != "Code X1." {
		t.Errorf("fill = %q", got)
	}
}
