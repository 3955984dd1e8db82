package notify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

func TestCallingCode(t *testing.T) {
	cases := []struct{ number, want string }{
		{"+14155550100", "1"},
		{"+79161234567", "7"},
		{"+447911123456", "44"},
		{"+4915112345678", "49"},
		{"+353851234567", "353"},
		{"+2348012345678", "234"},
		{"+8613812345678", "86"},
		{"+8525123456", "852"},
	}
	for _, tc := range cases {
		t.Run(tc.number, func(t *testing.T) {
			if got := notify.CallingCode(tc.number); got != tc.want {
				t.Errorf("CallingCode = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewCountriesRefusesNonCodes(t *testing.T) {
	for _, code := range []string{"4", "44x", "12", "+44", "3531"} {
		if _, err := notify.NewCountries([]string{code}); err == nil {
			t.Errorf("NewCountries(%q) accepted a non-code", code)
		}
	}
	c, err := notify.NewCountries([]string{"1", "44", "353"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Allows("44") || c.Allows("49") || !(notify.Countries{}).Allows("49") {
		t.Error("allow-list answers wrong")
	}
}

func TestSubmitOutsideAllowListStoresAndCountsNothing(t *testing.T) {
	f := newIntake()
	guard := &notifytest.Guard{}
	f.in.Guard = guard
	f.in.Countries, _ = notify.NewCountries([]string{"44"})
	_, err := f.in.Submit(context.Background(), parse(t, body(nil), "k")) // to: +1...
	var refused *notify.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, notify.ErrDestinationNotAllowed) || refused.CountryCode != "1" {
		t.Fatalf("err = %v, want a country refusal for code 1", err)
	}
	if n, _ := guard.Counts(); n != 0 || len(f.store.All()) != 0 || len(f.queue.Sent()) != 0 {
		t.Errorf("a refused country left counts %d, records %d, messages %d", n, len(f.store.All()), len(f.queue.Sent()))
	}
}
