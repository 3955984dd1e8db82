package phoneregion_test

import (
	"slices"
	"testing"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

func TestRegionIsTheCountryNotTheCallingCode(t *testing.T) {
	cases := map[string]string{
		"+12125550100":   "US", // New York
		"+14155550100":   "US",
		"+14165550100":   "CA", // Toronto
		"+16135550123":   "CA",
		"+18765550100":   "JM", // Jamaica shares +1
		"+18095550100":   "DO", // so does the Dominican Republic (809, 829, 849)
		"+18295550100":   "DO",
		"+18495550100":   "DO",
		"+12425550100":   "BS", // and the Bahamas
		"+4915112345678": "DE",
		"+79161234567":   "RU", // +7 is Russia and Kazakhstan
		"+77012345678":   "KZ",
		"+15555550100":   "", // +1 555: no country's numbering plan holds it
		"+80012345678":   "", // non-geographic (freephone)
		"+882345678901":  "", // non-geographic (international networks)
		"+999123456":     "", // unassigned calling code
		"not a number":   "",
	}
	r := phoneregion.Regions{}
	for number, want := range cases {
		if got := r.Region(number); got != want {
			t.Errorf("Region(%s) = %q, want %q", number, got, want)
		}
	}
}

func TestSupported(t *testing.T) {
	r := phoneregion.Regions{}
	for _, c := range []string{"US", "CA", "JM", "GB"} {
		if !r.Supported(c) {
			t.Errorf("Supported(%s) = false", c)
		}
	}
	for _, c := range []string{"ZZ", "001", "us", "USA", "XX", ""} {
		if r.Supported(c) {
			t.Errorf("Supported(%q) = true", c)
		}
	}
	all := phoneregion.All()
	if len(all) < 200 || !slices.IsSorted(all) || slices.Contains(all, notify.UnknownCountry) {
		t.Fatalf("All() = %d countries (sorted %v)", len(all), slices.IsSorted(all))
	}
	for _, c := range all {
		if !r.Supported(c) {
			t.Errorf("All() lists %s, which Supported refuses", c)
		}
	}
}

// TestAllowListOverTheLibrary: the allow-list of the template's default, over the real
// metadata, admits New York and Toronto and refuses the Caribbean and unplaceable numbers.
func TestAllowListOverTheLibrary(t *testing.T) {
	c, err := notify.NewCountries([]string{"US", "CA"}, phoneregion.Regions{})
	if err != nil {
		t.Fatal(err)
	}
	for number, allowed := range map[string]bool{
		"+12125550100": true, "+14165550100": true,
		"+18765550100": false, "+18095550100": false, "+12425550100": false, "+15555550100": false,
	} {
		if got := c.Allows(c.Of(number)); got != allowed {
			t.Errorf("%s (%s): allowed %v, want %v", number, c.Of(number), got, allowed)
		}
	}
	if _, err := notify.NewCountries([]string{"UK"}, phoneregion.Regions{}); err == nil {
		t.Error("NewCountries accepted UK, which is not an ISO 3166 code (GB is)")
	}
}

func BenchmarkRegionByCountry(b *testing.B) {
	r := phoneregion.Regions{}
	for _, n := range []string{"+12125550100", "+14165550100", "+18765550100", "+447911123456", "+15555550100"} {
		b.Run(n[:5], func(b *testing.B) {
			for b.Loop() {
				_ = r.Region(n)
			}
		})
	}
}

// TestTestNumbersAreInTheUS: the black-box suite (e2e) draws its numbers from +1 212 200 0000
// to +1 212 999 9999, all of which must be admitted by a stack at the default (US,CA).
func TestTestNumbersAreInTheUS(t *testing.T) {
	r := phoneregion.Regions{}
	for _, n := range []string{"+12122000000", "+12122999999", "+12125550142", "+12129119999", "+12129999999"} {
		if got := r.Region(n); got != "US" {
			t.Errorf("Region(%s) = %q, want US", n, got)
		}
	}
}

// TestNumberTypes: the types of the library's metadata that decide whether a number can receive
// an SMS: premium rate, toll free and personal numbers of the US and GB are told apart from the
// US's and Canada's geographic numbers, which the metadata cannot tell mobile or fixed line.
func TestNumberTypes(t *testing.T) {
	cases := map[string]struct {
		country string
		kind    notify.NumberType
	}{
		"+19002345678":  {"US", notify.NumberPremiumRate},
		"+18002345678":  {"US", notify.NumberTollFree},
		"+18882345678":  {"US", notify.NumberTollFree},
		"+15002345678":  {"US", notify.NumberPersonal},
		"+449098790000": {"GB", notify.NumberPremiumRate},
		"+447012345678": {"GB", notify.NumberPersonal},
		"+447400123456": {"GB", notify.NumberMobile},
		"+12015550123":  {"US", notify.NumberFixedLineOrMobile},
		"+12122000000":  {"US", notify.NumberFixedLineOrMobile},
		"+15062345678":  {"CA", notify.NumberFixedLineOrMobile},
		"+14165550100":  {"CA", notify.NumberFixedLineOrMobile},
		"+18762345678":  {"JM", notify.NumberMobile},
		"+15555550100":  {"", notify.NumberUnknown},
		"+80012345678":  {"", notify.NumberUnknown},
	}
	for number, want := range cases {
		if _, country, kind := (phoneregion.Regions{}).Place(number); country != want.country || kind != want.kind {
			t.Errorf("Place(%s) = %s %s, want %s %s", number, country, kind, want.country, want.kind)
		}
	}
}
