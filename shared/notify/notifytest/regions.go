package notifytest

import (
	"strings"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Regions is a notify.Regions over a table of number prefixes ("+1876": "JM", "+1": "US"):
// the longest prefix of a number that the table holds names its country; a number no prefix
// matches is in none. A value may name the type of its numbers after a colon
// ("+1900": "US:PREMIUM_RATE"); without one they are MOBILE. It supports exactly the countries
// the table names.
type Regions map[string]string

// Place returns e164 itself, the country and type of the longest prefix of e164 in the
// table, "" and NumberUnknown if none.
func (r Regions) Place(e164 string) (string, string, notify.NumberType) {
	best, value := "", ""
	for prefix, v := range r {
		if strings.HasPrefix(e164, prefix) && len(prefix) > len(best) {
			best, value = prefix, v
		}
	}
	if value == "" {
		return e164, "", notify.NumberUnknown
	}
	country, kind, ok := strings.Cut(value, ":")
	if !ok {
		kind = string(notify.NumberMobile)
	}
	return e164, country, notify.NumberType(kind)
}

// Region returns the country Place returns.
func (r Regions) Region(e164 string) string {
	_, country, _ := r.Place(e164)
	return country
}

// Supported reports whether the table names country.
func (r Regions) Supported(country string) bool {
	for _, v := range r {
		if c, _, _ := strings.Cut(v, ":"); c == country {
			return true
		}
	}
	return false
}

// Countries returns the allow-list of countries placed by r; it panics on a country r does
// not name (a broken test, not an input).
func (r Regions) Countries(allowed ...string) notify.Countries {
	c, err := notify.NewCountries(allowed, r)
	if err != nil {
		panic(err)
	}
	return c
}
