package notify

import (
	"fmt"
	"regexp"
	"slices"
)

// The country allow-list: intake refuses, before any record is written, a destination whose
// country the list does not name.

// Countries is an allow-list of country calling codes ("1", "44", "353"). The zero value
// allows every code.
type Countries struct {
	codes []string
}

// NewCountries returns the allow-list of codes; an empty list allows every code. Each code
// must be a calling code CallingCode can return.
func NewCountries(codes []string) (Countries, error) {
	for _, c := range codes {
		if !callingCodePattern.MatchString(c) || CallingCode("+"+c+"0000000") != c {
			return Countries{}, fmt.Errorf("notify.countries: %q is not a country calling code", c)
		}
	}
	return Countries{codes: slices.Clone(codes)}, nil
}

// Allows reports whether code is on the list, or the list is empty.
func (c Countries) Allows(code string) bool {
	return len(c.codes) == 0 || slices.Contains(c.codes, code)
}

var callingCodePattern = regexp.MustCompile(`^[1-9][0-9]{0,2}$`)

// twoDigitCodes are the ITU-T E.164 country calling codes of two digits. Calling codes are
// prefix-free: 1 and 7 are the only one-digit codes, and every code that is neither one of
// them nor one of these has three digits.
var twoDigitCodes = []string{
	"20", "27", "30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45", "46",
	"47", "48", "49", "51", "52", "53", "54", "55", "56", "57", "58", "60", "61", "62", "63",
	"64", "65", "66", "81", "82", "84", "86", "90", "91", "92", "93", "94", "95", "98",
}

// CallingCode returns the country calling code of a valid E.164 number, without the "+".
func CallingCode(e164 string) string {
	digits := e164[1:]
	switch {
	case len(digits) < 3:
		return ""
	case digits[0] == '1' || digits[0] == '7':
		return digits[:1]
	case slices.Contains(twoDigitCodes, digits[:2]):
		return digits[:2]
	}
	return digits[:3]
}

// checkCountry refuses req when its calling code is not on the allow-list.
func (in *Intake) checkCountry(req Request) error {
	code := CallingCode(req.To)
	if in.Countries.Allows(code) {
		return nil
	}
	return &RefusedError{Reason: RefusedCountry, DestinationFP: in.Hasher.DestinationFP(req.To), CountryCode: code}
}
