package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNumbersThatCannotReceiveSMS: a stack at the template's defaults (US,CA; MOBILE and
// FIXED_LINE_OR_MOBILE) refuses premium-rate, toll-free and personal numbers of the US and
// GB, a Jamaican mobile and a number of no country with 422 destination-not-allowed and the
// reason, stores nothing (GET answers 404) and never names the number; it admits US and
// Canadian numbers, which the phone-number metadata places as FIXED_LINE_OR_MOBILE (their
// digits cannot tell a mobile from a fixed line).
func TestNumbersThatCannotReceiveSMS(t *testing.T) {
	s := getStack(t)
	refused := []struct{ name, to, reason string }{
		{"us-premium", "+19002345678", "number-type"},
		{"us-toll-free", "+18002345678", "number-type"},
		{"us-personal", "+15002345678", "number-type"},
		{"gb-premium", "+449098790000", "number-type"},
		{"gb-personal", "+447012345678", "number-type"},
		{"jm-mobile", "+18762345678", "country"},
		{"no-country", "+15555550100", "invalid-number"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			n := s.newNotification(t, "refused-"+tc.name, tc.to, 10*time.Minute)
			r := s.submit(t, n)
			var p struct{ Type, Reason string }
			if err := json.Unmarshal(r.Body, &p); err != nil || r.Code != http.StatusUnprocessableEntity ||
				!strings.HasSuffix(p.Type, "/problems/destination-not-allowed") || p.Reason != tc.reason {
				t.Fatalf("POST %s: %d %s, want 422 destination-not-allowed with reason %s", tc.name, r.Code, r.Body, tc.reason)
			}
			if strings.Contains(string(r.Body), tc.to[1:]) {
				t.Errorf("the answer names the number: %s", r.Body)
			}
			if g := s.call(t, http.MethodGet, "/v1/notifications/"+n.key(), nil, nil); g.Code != http.StatusNotFound {
				t.Errorf("GET after the refusal: %d %s, want 404 (nothing stored)", g.Code, g.Body)
			}
		})
	}
	admitted := []struct{ name, to string }{
		{"us", number(t)},
		{"ca-toronto", fmt.Sprintf("+1416%07d", 2_000_000+time.Now().UnixNano()%8_000_000)},
		{"ca-new-brunswick", fmt.Sprintf("+1506%07d", 2_000_000+time.Now().UnixNano()%8_000_000)},
	}
	for _, tc := range admitted {
		t.Run(tc.name, func(t *testing.T) {
			n := s.newNotification(t, "admitted-"+tc.name, tc.to, 10*time.Minute)
			if r := s.submit(t, n); r.Code != http.StatusAccepted {
				t.Fatalf("POST %s: %d %s, want 202", tc.name, r.Code, r.Body)
			}
		})
	}
}

// TestOneFormPerNumber: a number written with the national prefix after the calling code
// (+1 1 212 ...) is the same number as its E.164 form (+1 212 ...): the two forms share the
// destination's hourly limit (the template's GuardPerHour, 5), and the providers only ever see
// the E.164 form. A run that straddles a UTC hour, when the limit's window turns, is repeated
// once with a new number.
func TestOneFormPerNumber(t *testing.T) {
	s := getStack(t)
	for try := 0; ; try++ {
		hour := time.Now().UTC().Truncate(time.Hour)
		canonical := number(t)
		trunk := "+11" + canonical[2:]
		var keys []string
		var codes []int
		for i := range 6 {
			to := canonical
			if i%2 == 1 {
				to = trunk
			}
			n := s.newNotification(t, fmt.Sprintf("one-form-%d-%d", try, i), to, 10*time.Minute)
			r := s.submit(t, n)
			keys, codes = append(keys, n.key()), append(codes, r.Code)
		}
		if time.Now().UTC().Truncate(time.Hour) != hour && try == 0 {
			continue
		}
		want := []int{202, 202, 202, 202, 202, 429}
		if fmt.Sprint(codes) != fmt.Sprint(want) {
			t.Fatalf("answers to the two forms of one number: %v, want %v (one hourly limit of 5)", codes, want)
		}
		for _, k := range keys[:5] {
			s.waitState(t, k, 30*time.Second, "sent", "delivered")
		}
		if n := s.sent(t, canonical); n != 5 {
			t.Errorf("the providers accepted %d messages for the E.164 form, want 5", n)
		}
		if n := s.sent(t, trunk); n != 0 {
			t.Errorf("the providers saw the national-prefix form %d times", n)
		}
		return
	}
}
