package notify

import (
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"
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
	// last is the last number placed and its country: intake asks twice per admission (the
	// allow-list, then the guard's view of the number), and a lookup costs tens of µs.
	last *atomic.Pointer[placed]
}

// placed is a number and its country, as Of found it.
type placed struct{ number, country string }

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
	return Countries{allowed: slices.Clone(countries), regions: regions, last: new(atomic.Pointer[placed])}, nil
}

var countryPattern = regexp.MustCompile(`^[A-Z]{2}$`)

// Of returns the country of a valid E.164 number, UnknownCountry when it cannot be placed,
// and "" when the list has no Regions (the zero value).
func (c Countries) Of(e164 string) string {
	if c.regions == nil {
		return ""
	}
	if p := c.last.Load(); p != nil && p.number == e164 {
		return p.country
	}
	country := c.regions.Region(e164)
	if country == "" {
		country = UnknownCountry
	}
	c.last.Store(&placed{number: e164, country: country})
	return country
}

// Allows reports whether country is on the list, or the list is empty.
func (c Countries) Allows(country string) bool {
	return len(c.allowed) == 0 || slices.Contains(c.allowed, country)
}

// checkCountry refuses req when its country is not on the allow-list. An empty list places
// nothing and refuses nothing.
func (in *Intake) checkCountry(req Request) error {
	if len(in.Countries.allowed) == 0 {
		return nil
	}
	country := in.Countries.Of(req.To)
	if in.Countries.Allows(country) {
		return nil
	}
	return &RefusedError{Reason: RefusedCountry, DestinationFP: in.Hasher.DestinationFP(req.To), CountryCode: country}
}
