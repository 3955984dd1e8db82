// Package phoneregion places E.164 numbers in their countries and tells their type
// (notify.Regions), with the numbering metadata of github.com/nyaruka/phonenumbers, a Go port
// of Google's libphonenumber. The Lambdas do not link the library: its init parses the
// metadata of every region at start (about 25 ms and 2.5 MB). They link metadata_gen.go, the
// library's patterns and lengths written out at compile time by go run ./infra/phonemeta, and
// this package applies them as the library does (a test compares the two over a table of
// numbers); each territory's patterns are compiled on first use, and Prepare compiles the
// allowed countries' at init, so the first request does not pay for them (see
// docs/benchmarks.md, -mode coldstart).
package phoneregion

import (
	"regexp"
	"slices"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Regions is the notify.Regions of the library's metadata. The zero value is ready to use.
type Regions struct{}

var _ notify.Regions = Regions{}

var alpha2 = regexp.MustCompile(`^[A-Z]{2}$`)

// Place returns the canonical E.164 form of e164 ("+" with the calling code and the national
// significant number, a national prefix written after the calling code removed as the library
// parses it), the country it belongs to and its type. The country is "" when the library
// places it in none: within a calling code shared by several countries (+1, +7, +44, ...) the
// library decides by the country's leading digits or its number patterns, so +1 876 is JM and
// +1 416 is CA; a number that matches no country's patterns, such as +1 555 ..., is in none.
// Non-geographic ranges (+800, +882, ...) are in none either. The type is NumberUnknown for a
// number that is not valid in its country.
func (Regions) Place(e164 string) (string, string, notify.NumberType) {
	number, region, kind := place(e164)
	if !alpha2.MatchString(region) {
		return number, "", notify.NumberUnknown
	}
	return number, region, kind
}

// Region returns the country of e164, as Place does.
func (r Regions) Region(e164 string) string {
	_, country, _ := r.Place(e164)
	return country
}

// Supported reports whether the library has numbering metadata for country (a region of one
// of its calling codes).
func (Regions) Supported(country string) bool {
	if !alpha2.MatchString(country) {
		return false
	}
	_, ok := territoryIndex(country)
	return ok && supported(country)
}

// Prepare compiles the patterns of countries now, so that the first number of each does not
// wait for them; a country without metadata is skipped (NewCountries refuses it).
func (Regions) Prepare(countries []string) {
	for _, c := range countries {
		_, _ = regionMetadata(c)
	}
}

// All returns every country the library has numbering metadata for, sorted.
func All() []string {
	var out []string
	for _, t := range territories {
		if id := field(t, fieldRegion); alpha2.MatchString(id) && supported(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// supported reports whether a calling code lists country, as the library's supported regions
// are those its calling codes list.
func supported(country string) bool {
	for _, c := range callingCodes {
		if slices.Contains(c.regions, country) {
			return true
		}
	}
	return false
}
