// Package phoneregion places E.164 numbers in their countries (notify.Regions) with
// github.com/nyaruka/phonenumbers, a Go port of Google's libphonenumber metadata. Only intake
// links it: its metadata is loaded when the process starts (see docs/benchmarks.md, "Cold start").
package phoneregion

import (
	"regexp"
	"slices"

	"github.com/nyaruka/phonenumbers"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Regions is the notify.Regions of the library's metadata. The zero value is ready to use.
type Regions struct{}

var _ notify.Regions = Regions{}

var alpha2 = regexp.MustCompile(`^[A-Z]{2}$`)

// Region returns the country e164 belongs to, "" when the library places it in none. Within
// a calling code shared by several countries (+1, +7, +44, ...) the library decides by the
// country's leading digits or its number patterns, so +1 876 is JM and +1 416 is CA; a
// number that matches no country's patterns, such as +1 555 ..., is in none. Non-geographic
// ranges (+800, +882, ...) are in none either.
func (Regions) Region(e164 string) string {
	n, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return ""
	}
	if r := phonenumbers.GetRegionCodeForNumber(n); alpha2.MatchString(r) {
		return r
	}
	return ""
}

// Supported reports whether the library has numbering metadata for country.
func (Regions) Supported(country string) bool {
	return alpha2.MatchString(country) && phonenumbers.GetSupportedRegions()[country]
}

// All returns every country the library has numbering metadata for, sorted.
func All() []string {
	var out []string
	for r := range phonenumbers.GetSupportedRegions() {
		if alpha2.MatchString(r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
