package repocheck_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// e164 finds a whole E.164 number in a document.
var e164 = regexp.MustCompile(`\+[0-9]{8,15}\b`)

// fictionNumber is NANPA's range for fiction and documentation: 555-0100 to 555-0199 in any
// area code.
var fictionNumber = regexp.MustCompile(`^\+1[2-9][0-9]{2}55501[0-9]{2}$`)

// TestExampleNumbersAreFictionAndAdmitted checks every number an example a reader can copy
// shows (README.md, docs/, openapi.yaml, resetctl's help, the replay benchmark and the sample
// events for `sam local invoke`, base64 bodies decoded): it is in
// NANPA's fiction range, so it reaches no one, and the phone-number library intake uses finds
// it a valid number of the template's default allow-list (US, CA) of a type the intake admits
// (mobile, or fixed line or mobile), so the example answers as its text says.
func TestExampleNumbersAreFictionAndAdmitted(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	samples, err := filepath.Glob("events/*.json")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, path := range append(append(docs, samples...), "README.md", "docs/openapi.yaml", "infra/resetctl/secrets.go", "infra/bench/replay.go") {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range e164.FindAllString(string(text)+decodedBody(t, path, text), -1) {
			found++
			if !fictionNumber.MatchString(n) {
				t.Errorf("%s: %s is not in NANPA's fiction range +1 NXX 555 0100-0199", path, n)
				continue
			}
			p, err := phonenumbers.Parse(n, "")
			if err != nil || !phonenumbers.IsValidNumber(p) {
				t.Errorf("%s: %s is not a valid number to the phone-number library (%v)", path, n, err)
				continue
			}
			region, kind := phonenumbers.GetRegionCodeForNumber(p), phonenumbers.GetNumberType(p)
			if !slices.Contains([]string{"US", "CA"}, region) || (kind != phonenumbers.MOBILE && kind != phonenumbers.FIXED_LINE_OR_MOBILE) {
				t.Errorf("%s: %s is in %s, of type %d: not admitted by the template's defaults", path, n, region, kind)
			}
		}
	}
	if found < 20 {
		t.Errorf("found %d example numbers; the examples lost theirs?", found)
	}
}

// decodedBody is a sample event's body when API Gateway delivered it base64-encoded, so that a
// number inside it is checked too; "" for anything else.
func decodedBody(t *testing.T, path string, text []byte) string {
	t.Helper()
	if filepath.Ext(path) != ".json" {
		return ""
	}
	var ev struct {
		Body            string `json:"body"`
		IsBase64Encoded bool   `json:"isBase64Encoded"`
	}
	if json.Unmarshal(text, &ev) != nil || !ev.IsBase64Encoded {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		t.Fatalf("%s: base64 body: %v", path, err)
	}
	return " " + string(b)
}
