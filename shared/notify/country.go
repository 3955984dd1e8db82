package notify

import (
	"fmt"
	"regexp"
	"slices"
)

// The country allow-list: intake refuses, before any record is written, a destination whose
// country the list does not name. A number's country is the region its digits belong to (a
// Regions port tells it), not its calling code: +1 876 is Jamaica, not the United States.

// UnknownCountry is the country of a number Regions cannot place in one (ISO 3166 reserves ZZ
// for an unknown region). The allow-list never names it, so such a number is refused.
const UnknownCountry = "ZZ"

// Regions places E.164 numbers in their countries.
type Regions interface {
	// Region returns the ISO 3166-1 alpha-2 code of the country e164 belongs to ("US", "JM"),
	// or "" when it belongs to none it knows (a non-geographic or unassigned range).
	Region(e164 string) string
	// Supported reports whether country is a region Region can return.
	Supported(country string) bool
}

// Countries is an allow-list of ISO 3166-1 alpha-2 countries ("US", "CA"). The zero value
// allows every number and places none.
type Countries struct {
	allowed []string
	regions Regions
}

// NewCountries returns the allow-list of countries, placed by regions; an empty list allows
// every number. Each country must be upper-case alpha-2 and supported by regions.
func NewCountries(countries []string, regions Regions) (Countries, error) {
	if regions == nil {
		return Countries{}, fmt.Errorf("notify.countries: no regions to place numbers in")
	}
	for _, c := range countries {
		if !countryPattern.MatchString(c) || c == UnknownCountry || !regions.Supported(c) {
			return Countries{}, fmt.Errorf("notify.countries: %q is not an ISO 3166-1 alpha-2 country with phone numbers", c)
		}
	}
	return Countries{allowed: slices.Clone(countries), regions: regions}, nil
}

var countryPattern = regexp.MustCompile(`^[A-Z]{2}$`)

// Of returns the country of a valid E.164 number, UnknownCountry when it cannot be placed,
// and "" when the list has no Regions (the zero value). Intake asks it once per request, where
// the request's Destination is worked out.
func (c Countries) Of(e164 string) string {
	if c.regions == nil {
		return ""
	}
	if country := c.regions.Region(e164); country != "" {
		return country
	}
	return UnknownCountry
}

// Allows reports whether country is on the list, or the list is empty.
func (c Countries) Allows(country string) bool {
	return len(c.allowed) == 0 || slices.Contains(c.allowed, country)
}

// checkCountry refuses d when its country is not on the allow-list. An empty list refuses
// nothing.
func (in *Intake) checkCountry(d Destination) error {
	if in.Countries.Allows(d.CountryCode) {
		return nil
	}
	return &RefusedError{Reason: RefusedCountry, DestinationFP: d.FP, CountryCode: d.CountryCode}
}
