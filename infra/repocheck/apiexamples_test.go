package repocheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fences returns the fenced code blocks of language lang in text.
func fences(text, lang string) []string {
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// callsAPI reports whether a snippet calls the API: curl and a /v1/ path, resetctl, or the
// Go client.
func callsAPI(snippet string) bool {
	return strings.Contains(snippet, "curl ") && strings.Contains(snippet, "/v1/") ||
		regexp.MustCompile(`resetctl (send|status|cancel|convert)`).MatchString(snippet) ||
		strings.Contains(snippet, "client.New")
}

// TestEveryAPIExampleIsRun counts the snippets of README.md and docs/ that call the API, so
// that a new one cannot go unrun: each is run by one test of infra/e2e/examples_test.go (make e2e).
func TestEveryAPIExampleIsRun(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	inline := regexp.MustCompile("`([^`]+)`")
	var found []string
	for _, p := range append(pages, "README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, lang := range []string{"sh", "go"} {
			for _, f := range fences(text, lang) {
				if callsAPI(f) {
					found = append(found, filepath.Base(p)+": "+strings.SplitN(strings.TrimSpace(f), "\n", 2)[0])
				}
			}
		}
		// Inline commands (one span, possibly across a line break) outside fences.
		for _, m := range inline.FindAllStringSubmatch(regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, ""), -1) {
			if strings.Contains(m[1], "go run ./infra/resetctl send") {
				found = append(found, filepath.Base(p)+": "+m[1])
			}
		}
	}
	// README's curl and CLI line, docs/api.md's Go client, CLI and signed curl.
	if len(found) != 5 {
		t.Errorf("%d examples call the API, and infra/e2e/examples_test.go runs 5; run the new one in infra/e2e/examples_test.go:\n%s", len(found), strings.Join(found, "\n"))
	}
}
