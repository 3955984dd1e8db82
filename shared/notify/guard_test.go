package notify_test

import (
	"context"
	"errors"
	"testing"
	"time"

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

func TestSubmitGuardCountsOnlyNewAdmissions(t *testing.T) {
	ctx := context.Background()
	f := newIntake()
	guard := &notifytest.Guard{}
	f.in.Guard = guard
	req := parse(t, body(nil), "k")
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	again, err := f.in.Submit(ctx, req)
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if n, _ := guard.Counts(); n != 1 {
		t.Errorf("counted %d admissions for one key, want 1", n)
	}
	// A replay is never refused, even when the guard would refuse a new admission now.
	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: time.Minute}
	if again, err := f.in.Submit(ctx, req); err != nil || !again.Replayed {
		t.Fatalf("replay under a full window: %+v %v", again, err)
	}
	_, err = f.in.Submit(ctx, parse(t, body(nil), "k2"))
	if !errors.Is(err, notify.ErrRateLimited) {
		t.Fatalf("new key under a full window: %v, want ErrRateLimited", err)
	}
	if _, err := f.in.Status(ctx, "k2"); !errors.Is(err, notify.ErrNotFound) {
		t.Errorf("a refused admission left a record: %v", err)
	}
}

// raceStore is a Store whose first Get misses although the record exists: a concurrent first
// request with the same key wins the put between this request's read and its put.
type raceStore struct {
	*notifytest.Store
	missed bool
}

func (s *raceStore) Get(ctx context.Context, key string) (notify.Record, error) {
	if !s.missed {
		s.missed = true
		return notify.Record{}, notify.ErrNotFound
	}
	return s.Store.Get(ctx, key)
}

func TestSubmitGuardReleasesWhenTheKeyWasTaken(t *testing.T) {
	ctx := context.Background()
	f := newIntake()
	req := parse(t, body(nil), "k")
	if _, err := f.in.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	guard := &notifytest.Guard{}
	f.in.Guard, f.in.Store = guard, &raceStore{Store: f.store}
	again, err := f.in.Submit(ctx, req)
	if err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if admitted, released := guard.Counts(); admitted != 1 || released != 1 {
		t.Errorf("counted %d, released %d; want the lost race's count released", admitted, released)
	}
}
