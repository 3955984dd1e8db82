package notify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// nanp places a few numbers of calling code 1 the way the real metadata does: one code, many
// countries.
var nanp = notifytest.Regions{"+1212": "US", "+1415": "US", "+1416": "CA", "+1876": "JM", "+1809": "DO", "+1242": "BS", "+44": "GB"}

func TestNewCountriesRefusesWhatIsNotASupportedCountry(t *testing.T) {
	for _, c := range []string{"1", "us", "USA", "ZZ", "FR", "+1", ""} {
		if _, err := notify.NewCountries([]string{c}, nanp); err == nil {
			t.Errorf("NewCountries(%q) accepted it", c)
		}
	}
	if _, err := notify.NewCountries([]string{"US"}, nil); err == nil {
		t.Error("NewCountries without Regions accepted a list")
	}
	c, err := notify.NewCountries([]string{"US", "CA"}, nanp)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Allows("CA") || c.Allows("JM") || c.Allows(notify.UnknownCountry) || !(notify.Countries{}).Allows("JM") {
		t.Error("allow-list answers wrong")
	}
}

func TestCountriesOf(t *testing.T) {
	c := nanp.Countries("US")
	for number, want := range map[string]string{
		"+12125550100": "US", "+18765550100": "JM", "+14165550100": "CA",
		"+15555550100": notify.UnknownCountry, "+80012345678": notify.UnknownCountry,
	} {
		if got := c.Of(number); got != want {
			t.Errorf("Of(%s) = %q, want %q", number, got, want)
		}
	}
	if got := (notify.Countries{}).Of("+12125550100"); got != "" {
		t.Errorf("the zero value placed a number in %q", got)
	}
}

// TestSubmitRefusesByCountryNotCallingCode: +1 is shared by the United States, Canada and the
// Caribbean; only the listed countries are admitted, and a number no country holds is refused.
func TestSubmitRefusesByCountryNotCallingCode(t *testing.T) {
	cases := []struct {
		to, country string
		admitted    bool
	}{
		{"+12125550100", "US", true},
		{"+14165550100", "CA", true},
		{"+18765550100", "JM", false},
		{"+18095550100", "DO", false},
		{"+12425550100", "BS", false},
		{"+15555550100", notify.UnknownCountry, false},
	}
	for _, tc := range cases {
		t.Run(tc.to, func(t *testing.T) {
			f := newService()
			guard := &notifytest.Guard{}
			f.in.Guard = guard
			f.in.Countries = nanp.Countries("US", "CA")
			_, err := f.in.Submit(context.Background(), parse(t, body(func(m map[string]any) { m["to"] = tc.to }), "k"))
			if tc.admitted {
				if err != nil {
					t.Fatalf("Submit: %v", err)
				}
				return
			}
			var refused *notify.RefusedError
			if !errors.As(err, &refused) || !errors.Is(err, notify.ErrDestinationNotAllowed) || refused.CountryCode != tc.country {
				t.Fatalf("err = %v, want a country refusal for %s", err, tc.country)
			}
			if n, _ := guard.Counts(); n != 0 || len(f.store.All()) != 0 || len(f.queue.Sent()) != 0 {
				t.Errorf("a refused country left counts %d, records %d, messages %d", n, len(f.store.All()), len(f.queue.Sent()))
			}
		})
	}
}

// TestGuardSeesTheCountry: the guard's view of a number carries its country, so its refusals
// are counted by country too.
func TestGuardSeesTheCountry(t *testing.T) {
	f := newService()
	f.in.Guard = &notifytest.Guard{Refuse: &notify.RefusedError{Reason: notify.RefusedDestinationHour}}
	f.in.Countries = nanp.Countries()
	_, err := f.in.Submit(context.Background(), parse(t, body(func(m map[string]any) { m["to"] = "+18765550100" }), "k"))
	var refused *notify.RefusedError
	if !errors.As(err, &refused) || refused.CountryCode != "JM" {
		t.Fatalf("err = %v (%+v), want the guard's refusal naming JM", err, refused)
	}
}

// countingRegions counts the lookups it answers.
type countingRegions struct {
	notifytest.Regions
	n int
}

func (c *countingRegions) Place(e164 string) (string, string, notify.NumberType) {
	c.n++
	return c.Regions.Place(e164)
}

// TestOneLookupPerAdmission: the allow-list and the guard ask for the same number's country;
// the library is asked once, and a new number is looked up anew.
func TestOneLookupPerAdmission(t *testing.T) {
	regions := &countingRegions{Regions: nanp}
	f := newService()
	f.in.Guard = &notifytest.Guard{}
	var err error
	if f.in.Countries, err = notify.NewCountries([]string{"US", "CA"}, regions); err != nil {
		t.Fatal(err)
	}
	for i, to := range []string{"+12125550100", "+14165550100"} {
		if _, err := f.in.Submit(context.Background(), parse(t, body(func(m map[string]any) { m["to"] = to }), "k"+to[1:])); err != nil {
			t.Fatal(err)
		}
		if regions.n != i+1 {
			t.Errorf("after %d admissions, %d lookups", i+1, regions.n)
		}
	}
	if got := f.in.Countries.Of("+18765550100"); got != "JM" || regions.n != 3 {
		t.Errorf("Of = %q after %d lookups, want JM after 3", got, regions.n)
	}
}
