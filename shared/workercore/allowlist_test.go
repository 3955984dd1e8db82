package workercore_test

import (
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

// TestDispatchRechecksTheAllowList: dispatch refuses, without a send, a sealed number that the
// allow-list refuses (another country, a premium-rate number), whoever wrote the record:
// refused / REFUSED_DESTINATION_NOT_ALLOWED. An allowed number written with its national
// prefix after the calling code reaches the provider in its E.164 form only.
func TestDispatchRechecksTheAllowList(t *testing.T) {
	f := newFixture(t)
	countries, err := notify.NewCountries([]string{"US"}, phoneregion.Regions{})
	if err != nil {
		t.Fatal(err)
	}
	f.d.Countries = countries
	for key, to := range map[string]string{"gb-mobile": "+447400123456", "us-premium": "+19002345678", "no-country": "+15555550100"} {
		req := request(key, 10*time.Minute)
		req.To = to
		f.dispatch(t, notify.MessageOf(f.admit(t, req)))
		if got := stateOf(f.get(t, key)); got != (state{notify.StateRefused, notify.ReasonRefusedDestinationNotAllowed}) {
			t.Errorf("%s: %+v, want refused / REFUSED_DESTINATION_NOT_ALLOWED", key, got)
		}
	}
	if n := f.sender.Calls(); n != 0 {
		t.Fatalf("%d sends of numbers the allow-list refuses", n)
	}
	req := request("us-trunk", 10*time.Minute)
	req.To = "+112125550100"
	f.dispatch(t, notify.MessageOf(f.admit(t, req)))
	if reqs := f.sender.Requests(); len(reqs) != 1 || reqs[0].To != "+12125550100" {
		t.Errorf("sent %+v, want one send to the E.164 form +12125550100", reqs)
	}
}
