package notifytest

import (
	"strings"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Regions is a notify.Regions over a table of number prefixes ("+1876": "JM", "+1": "US"):
// the longest prefix of a number that the table holds names its country; a number no prefix
// matches is in none. It supports exactly the countries the table names.
type Regions map[string]string

// Region returns the country of the longest prefix of e164 in the table, "" if none.
func (r Regions) Region(e164 string) string {
	best, country := "", ""
	for prefix, c := range r {
		if strings.HasPrefix(e164, prefix) && len(prefix) > len(best) {
			best, country = prefix, c
		}
	}
	return country
}

// Supported reports whether the table names country.
func (r Regions) Supported(country string) bool {
	for _, c := range r {
		if c == country {
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
