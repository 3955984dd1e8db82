package intake_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
)

func TestGuardRefusals(t *testing.T) {
	cases := []struct {
		name       string
		refuse     *notify.RefusedError // nil: refused by the allow-list
		status     int
		problem    intake.ProblemType
		retryAfter string
	}{
		{"hour", &notify.RefusedError{Reason: notify.RefusedDestinationHour, RetryAfter: 1500*time.Second + 200*time.Millisecond},
			http.StatusTooManyRequests, intake.ProblemRateLimited, "1501"},
		{"day", &notify.RefusedError{Reason: notify.RefusedDestinationDay, RetryAfter: 10 * time.Hour},
			http.StatusTooManyRequests, intake.ProblemRateLimited, "36000"},
		{"prefix", &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: 300 * time.Millisecond},
			http.StatusTooManyRequests, intake.ProblemPrefixRateLimited, "1"},
		{"blocked", &notify.RefusedError{Reason: notify.RefusedPrefixBlocked, RetryAfter: 12 * time.Hour},
			http.StatusTooManyRequests, intake.ProblemPrefixBlocked, "43200"},
		{"country", nil, http.StatusUnprocessableEntity, intake.ProblemDestinationNotAllowed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.intake.Guard = &notifytest.Guard{Refuse: tc.refuse}
			regions := notifytest.Regions{"+1": "US", "+44": "GB", "+49": "DE"} // phone is +44
			f.intake.Countries = regions.Countries("GB")
			if tc.refuse == nil {
				f.intake.Countries = regions.Countries("US", "DE")
			}
			resp := f.do(t, post(body(nil), "idempotency-key", "order-1"))
			if resp.StatusCode != tc.status || decodeProblem(t, resp).Type != tc.problem.URI() {
				t.Fatalf("status %d %s, want %d %s", resp.StatusCode, resp.Body, tc.status, tc.problem)
			}
			if got := resp.Headers[intake.HeaderRetryAfter]; got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			answers := resp.Body + headerText(resp.Headers)
			rec, err := f.intake.Status(notify.WithCaller(t.Context(), callerRole), "order-1")
			if tc.refuse == nil && !errors.Is(err, notify.ErrNotFound) {
				t.Errorf("a request outside the allow-list left a record: %v", err)
			}
			if tc.refuse != nil {
				if rec.State != notify.StateRefused {
					t.Errorf("stored %s, want the refusal recorded (refused)", rec.State)
				}
				if p := decodeProblem(t, resp); p.State != notify.StateRefused || p.Reason != rec.Reason {
					t.Errorf("problem state %q reason %q, want refused %s", p.State, p.Reason, rec.Reason)
				}
				// A repeat of the key: the same answer, marked as a replay, counted once.
				again := f.do(t, post(body(nil), "idempotency-key", "order-1"))
				answers += again.Body + headerText(again.Headers)
				if again.StatusCode != tc.status || again.Headers[intake.HeaderRetryAfter] != tc.retryAfter ||
					again.Headers[intake.HeaderIdempotentReplayed] != "true" || decodeProblem(t, again).Type != tc.problem.URI() {
					t.Errorf("repeat: %d %v %s, want the same %d with Idempotent-Replayed", again.StatusCode, again.Headers, again.Body, tc.status)
				}
				if n := strings.Count(f.metrics.String(), `"`+obs.MetricRefusals+`":1`); n != 1 {
					t.Errorf("%d Refusals metric lines for one refusal and its repeat, want 1", n)
				}
			}
			reason := string(notify.RefusedCountry)
			if tc.refuse != nil {
				reason = string(tc.refuse.Reason)
			}
			fp := notifytest.Sealer{}.DestinationFP(phone)
			logs, metrics := f.logs.String(), f.metrics.String()
			for _, want := range []string{`"refusal":"` + reason + `"`, `"destination_fp":"` + fp + `"`, `"country_code":"GB"`} {
				if !strings.Contains(logs, want) {
					t.Errorf("log lacks %s: %s", want, logs)
				}
			}
			if !strings.Contains(metrics, `"`+obs.MetricRefusals+`":1`) || !strings.Contains(metrics, `"Reason":"`+reason+`"`) {
				t.Errorf("no Refusals metric for %s: %s", reason, metrics)
			}
			for name, text := range map[string]string{"responses": answers, "log": logs, "metric": metrics} {
				for _, n := range needles() {
					if strings.Contains(text, n) {
						t.Errorf("%s holds %q", name, n)
					}
				}
			}
		})
	}
}

func headerText(h map[string]string) string {
	var b strings.Builder
	for k, v := range h {
		b.WriteString(k + ": " + v + "\n")
	}
	return b.String()
}

// TestDestinationRefusals: a number outside the allowed countries, of a type not allowed, or
// not valid gets 422 destination-not-allowed with its reason, and nothing is stored or counted;
// no answer, log line or metric names the number.
func TestDestinationRefusals(t *testing.T) {
	cases := []struct {
		name    string
		regions notifytest.Regions // phone is +44
		reason  notify.Reason
		refusal notify.RefusalReason
	}{
		{"country", notifytest.Regions{"+1": "US", "+44": "GB"}, intake.DestinationCountry, notify.RefusedCountry},
		{"premium rate", notifytest.Regions{"+1": "US", "+44": "GB:PREMIUM_RATE"}, intake.DestinationNumberType, notify.RefusedNumberType},
		{"personal", notifytest.Regions{"+1": "US", "+44": "GB:PERSONAL_NUMBER"}, intake.DestinationNumberType, notify.RefusedNumberType},
		{"fixed line", notifytest.Regions{"+1": "US", "+44": "GB:FIXED_LINE"}, intake.DestinationNumberType, notify.RefusedNumberType},
		{"not valid in its country", notifytest.Regions{"+1": "US", "+44": "GB:UNKNOWN"}, intake.DestinationInvalidNumber, notify.RefusedInvalidNumber},
		{"in no country", notifytest.Regions{"+1": "US", "+49": "GB"}, intake.DestinationInvalidNumber, notify.RefusedInvalidNumber},
		// What the number is comes before where it is.
		{"premium rate outside the allowed countries", notifytest.Regions{"+1": "US", "+44": "GB:PREMIUM_RATE"}, intake.DestinationNumberType, notify.RefusedNumberType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			guard := &notifytest.Guard{}
			f.intake.Guard = guard
			allowed := []string{"GB"}
			if tc.refusal == notify.RefusedCountry || strings.Contains(tc.name, "outside") {
				allowed = []string{"US"}
			}
			f.intake.Countries = tc.regions.Countries(allowed...)
			resp := f.do(t, post(body(nil), "idempotency-key", "order-1"))
			p := decodeProblem(t, resp)
			if resp.StatusCode != http.StatusUnprocessableEntity || p.Type != intake.ProblemDestinationNotAllowed.URI() || p.Reason != tc.reason {
				t.Fatalf("%d %s, want 422 destination-not-allowed with reason %s", resp.StatusCode, resp.Body, tc.reason)
			}
			if _, err := f.intake.Status(t.Context(), "order-1"); !errors.Is(err, notify.ErrNotFound) {
				t.Errorf("a refused number left a record: %v", err)
			}
			if len(guard.Admitted) != 0 {
				t.Errorf("a refused number was counted: %v", guard.Admitted)
			}
			logs, metrics := f.logs.String(), f.metrics.String()
			if !strings.Contains(logs, `"refusal":"`+string(tc.refusal)+`"`) || !strings.Contains(metrics, `"Reason":"`+string(tc.refusal)+`"`) {
				t.Errorf("no log or metric of the %s refusal: %s %s", tc.refusal, logs, metrics)
			}
			for name, text := range map[string]string{"response": resp.Body + headerText(resp.Headers), "log": logs, "metric": metrics} {
				for _, n := range append(needles(), phone, phone[1:]) {
					if strings.Contains(text, n) {
						t.Errorf("%s holds %q", name, n)
					}
				}
			}
		})
	}
}

// TestAdmissionWritesAZeroRefusal: an admission the guards let through writes Refusals 0 by
// Reason prefix_velocity, the set PrefixVelocityAlarm reads, so the alarm's quiet has data, and
// by reason and the number's country, the set the dashboard's refusals by country read.
func TestAdmissionWritesAZeroRefusal(t *testing.T) {
	f := newFixture(t)
	f.intake.Countries = notifytest.Regions{"+44": "GB"}.Countries("GB")
	resp := f.do(t, post(body(nil), "idempotency-key", "order-1"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d %s, want 202", resp.StatusCode, resp.Body)
	}
	var zero int
	for _, line := range strings.Split(f.metrics.String(), "\n") {
		if strings.Contains(line, `"`+obs.MetricRefusals+`":0`) && strings.Contains(line, `"Reason":"`+string(notify.RefusedPrefixVelocity)+`"`) &&
			strings.Contains(line, `[["Function","CountryCode","Reason"],["Function","Reason"]]`) && strings.Contains(line, `"CountryCode":"GB"`) {
			zero++
		}
	}
	if zero != 1 {
		t.Errorf("%d zero Refusals lines by [Function CountryCode Reason] and [Function Reason] for one admission, want 1: %s", zero, f.metrics.String())
	}
}
