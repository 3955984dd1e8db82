package notify

import (
	"fmt"
	"regexp"
	"slices"
)

// The country allow-list: intake refuses, before any record is written, a destination whose
// country the list does not name. A number's country is the region its digits belong to (a
// Regions port tells it), not its calling code: +1 876 is Jamaica, not the United States. The
// same lookup tells the number's type: one that is not valid in its country, or whose type
// cannot receive an SMS (premium rate, toll free, shared cost, personal, pager, UAN,
// voicemail, and by default fixed line and VoIP), is refused too.

// UnknownCountry is the country of a number Regions cannot place in one (ISO 3166 reserves ZZ
// for an unknown region). The allow-list never names it, so such a number is refused.
const UnknownCountry = "ZZ"

// NumberType is the kind of line a number is, named as the phone-number metadata names it.
type NumberType string

// The number types.
const (
	NumberFixedLine         NumberType = "FIXED_LINE"
	NumberMobile            NumberType = "MOBILE"
	NumberFixedLineOrMobile NumberType = "FIXED_LINE_OR_MOBILE" // the metadata cannot tell (the US and Canada)
	NumberTollFree          NumberType = "TOLL_FREE"
	NumberPremiumRate       NumberType = "PREMIUM_RATE"
	NumberSharedCost        NumberType = "SHARED_COST"
	NumberVoIP              NumberType = "VOIP"
	NumberPersonal          NumberType = "PERSONAL_NUMBER"
	NumberPager             NumberType = "PAGER"
	NumberUAN               NumberType = "UAN"
	NumberVoicemail         NumberType = "VOICEMAIL"
	// NumberUnknown is the type of a number that is not valid in its country, or in none.
	NumberUnknown NumberType = "UNKNOWN"
)

// NumberTypes are the types a list of allowed types may name (every one but NumberUnknown).
var NumberTypes = []NumberType{NumberFixedLine, NumberMobile, NumberFixedLineOrMobile, NumberTollFree,
	NumberPremiumRate, NumberSharedCost, NumberVoIP, NumberPersonal, NumberPager, NumberUAN, NumberVoicemail}

// DefaultNumberTypes are the types allowed when none are configured: those that receive an
// SMS. A fixed line usually cannot, and in the US and Canada a number's digits do not tell a
// mobile from a fixed line, so FIXED_LINE_OR_MOBILE is allowed there.
var DefaultNumberTypes = []NumberType{NumberMobile, NumberFixedLineOrMobile}

// Regions places E.164 numbers in their countries and tells their type.
type Regions interface {
	// Place returns the canonical E.164 form of e164 (a national prefix written after the
	// calling code removed, as the phone-number library parses it: +1 1 201 ... is
	// +1 201 ...), the ISO 3166-1 alpha-2 code of the country it belongs to ("US", "JM"), or
	// "" when it belongs to none it knows (a non-geographic or unassigned range), and the
	// number's type there (NumberUnknown when it is not a valid number of that country).
	Place(e164 string) (number, country string, kind NumberType)
	// Supported reports whether country is a region Region can return.
	Supported(country string) bool
}

// Countries is an allow-list of ISO 3166-1 alpha-2 countries ("US", "CA"). The zero value
// allows every number and places none.
type Countries struct {
	allowed []string
	// types are the allowed number types (DefaultNumberTypes unless WithTypes says).
	types   []NumberType
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
	return Countries{allowed: slices.Clone(countries), types: DefaultNumberTypes, regions: regions}, nil
}

// WithTypes returns c allowing the number types types instead of DefaultNumberTypes. The list
// must name at least one type of NumberTypes, each once.
func (c Countries) WithTypes(types []NumberType) (Countries, error) {
	if len(types) == 0 {
		return Countries{}, fmt.Errorf("notify.countries: no number type allowed")
	}
	for i, t := range types {
		if !slices.Contains(NumberTypes, t) || slices.Contains(types[:i], t) {
			return Countries{}, fmt.Errorf("notify.countries: %q is not a number type, or is named twice", t)
		}
	}
	c.types = slices.Clone(types)
	return c, nil
}

var countryPattern = regexp.MustCompile(`^[A-Z]{2}$`)

// Of returns the country of a valid E.164 number, UnknownCountry when it cannot be placed,
// and "" when the list has no Regions (the zero value). Service asks it once per request, where
// the request's Destination is worked out.
func (c Countries) Of(e164 string) string {
	_, country, _ := c.place(e164)
	return country
}

// place returns the canonical form of e164 (e164 itself without Regions), Of's country and
// its type (NumberUnknown without Regions).
func (c Countries) place(e164 string) (string, string, NumberType) {
	if c.regions == nil {
		return e164, "", NumberUnknown
	}
	number, country, kind := c.regions.Place(e164)
	if country == "" || number == "" {
		return e164, UnknownCountry, NumberUnknown
	}
	return number, country, kind
}

// Allows reports whether country is on the list, or the list is empty.
func (c Countries) Allows(country string) bool {
	return len(c.allowed) == 0 || slices.Contains(c.allowed, country)
}

// Refusal returns the canonical form of the E.164 number e164 and, when the list refuses it,
// why (checkCountry's rules; "" when allowed). Dispatch asks it of every sealed number before
// a send, since a record in the table is not proof that intake admitted it.
func (c Countries) Refusal(e164 string) (string, RefusalReason) {
	number, country, kind := c.place(e164)
	return number, c.refusal(country, kind)
}

// refusal is checkCountry's rule for a number placed in country with type kind.
func (c Countries) refusal(country string, kind NumberType) RefusalReason {
	switch {
	case c.regions == nil:
		return ""
	case country == UnknownCountry || kind == NumberUnknown:
		return RefusedInvalidNumber
	case !slices.Contains(c.types, kind):
		return RefusedNumberType
	case !c.Allows(country):
		return RefusedCountry
	}
	return ""
}

// checkCountry refuses d when its number is in no country or not valid in its own
// (RefusedInvalidNumber), when its type is not allowed (RefusedNumberType), or when its
// country is not on the allow-list (RefusedCountry), in that order: what the number is comes
// before where it is, so a premium-rate number is refused as such in every country. An empty
// list refuses no country; Countries without Regions (the zero value) refuse nothing.
func (in *Service) checkCountry(d Destination) error {
	reason := in.Countries.refusal(d.CountryCode, d.Type)
	if reason == "" {
		return nil
	}
	return &RefusedError{Reason: reason, DestinationFP: d.FP, CountryCode: d.CountryCode}
}
