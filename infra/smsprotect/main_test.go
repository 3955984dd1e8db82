package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestTemplateIsUpToDate: template.yaml is what the generator writes from its own default, so
// AllowedCountries' default and SmsProtectConfiguration's rules name the same countries.
func TestTemplateIsUpToDate(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Rewrite(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, out) {
		t.Error("template.yaml: AllowedCountries and SmsProtectConfiguration differ; run go run ./infra/smsprotect")
	}
}

const sample = `Parameters:
  AllowedCountries:
    Type: String
    Default: "US,CA"
Resources:
  P:
    Properties:
      CountryRuleSet:
        SMS:
          # BEGIN country rules
          - {CountryCode: "US", ProtectStatus: ALLOW}
          # END country rules
  Next:
`

func TestRewriteChangesTheListAndTheRulesTogether(t *testing.T) {
	out, err := Rewrite([]byte(sample), []string{"us", " GB", "NO"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		`    Default: "US,GB,NO"` + "\n",
		`          - {CountryCode: "GB", ProtectStatus: ALLOW}` + "\n",
		`          - {CountryCode: "NO", ProtectStatus: ALLOW}` + "\n",
		`          - {CountryCode: "CA", ProtectStatus: BLOCK}` + "\n",
		`          - {CountryCode: "JM", ProtectStatus: BLOCK}` + "\n",
		"          # END country rules\n  Next:\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("rewritten template lacks %q", want)
		}
	}
	if n := strings.Count(s, "ProtectStatus: ALLOW"); n != 3 {
		t.Errorf("%d ALLOW rules, want 3", n)
	}
	again, err := Rewrite(out, nil)
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("a second run changed the template (%v)", err)
	}
}

func TestRewriteRefusesBadLists(t *testing.T) {
	for _, list := range [][]string{{"UK"}, {"US", "us"}, {"ZZ"}, {"1"}, {""}} {
		if _, err := Rewrite([]byte(sample), list); err == nil {
			t.Errorf("Rewrite accepted %q", list)
		}
	}
	if _, err := Rewrite([]byte("Parameters: {}\n"), nil); err == nil {
		t.Error("Rewrite accepted a template without AllowedCountries")
	}
}
