package workercore

import (
	"slices"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Route is one provider of the dispatch chain: its name, recorded on the record with each
// attempt, and its Sender.
type Route struct {
	Name   string
	Sender sms.Sender
}

// LookupRoute is one provider of the reconcile chain: its name and a lookup that cannot send.
// ConfirmNotFound is set for a provider that does not document its lookup as exact (Sinch):
// its "not found" proves nothing until a second lookup, a visibility window after the first,
// finds nothing either.
type LookupRoute struct {
	Name            string
	Lookup          sms.LookupOnly
	ConfirmNotFound bool
}

// failoverReasons are the reasons of a retry_scheduled record whose last attempt is proven not
// to have been accepted by the provider that had it, so that its next attempt may go to the
// next provider of the chain: the provider answered "not accepted" (throttled, or unavailable:
// a documented "not processed" or a request never written), refused it for a restriction of
// its own (PROVIDER_REJECTED reaches retry_scheduled only then), or reconciliation found
// nothing at that provider after its visibility window (and no receipt).
var failoverReasons = []notify.Reason{
	notify.ReasonProviderThrottled, notify.ReasonProviderUnavailable,
	notify.ReasonProviderRejected, notify.ReasonReconciledNotFound,
}

// FailoverAllowed reports whether rec's next attempt may go to another provider than its last
// one: rec is retry_scheduled for one of failoverReasons and holds no receipt for the last
// attempt (a receipt says the provider accepted it, whatever it answered).
func FailoverAllowed(rec notify.Record) bool {
	return rec.State == notify.StateRetryScheduled && !rec.EarlyReceipt.Held() &&
		slices.Contains(failoverReasons, rec.Reason)
}

// RouteIndex returns the position of name in chain, or -1.
func RouteIndex(chain []Route, name string) int {
	return slices.IndexFunc(chain, func(r Route) bool { return r.Name == name })
}

// Choice is the provider chosen for an attempt.
type Choice struct {
	Route Route
	// Failover is true when the attempt goes to another provider than the last attempt.
	Failover bool
	// Skipped names the providers passed over because they were cooling down.
	Skipped []string
}

// Choose returns the provider of rec's next attempt at now:
//   - a first attempt goes to the first provider of the chain that is not cooling down;
//   - a retry whose last attempt is proven not accepted (FailoverAllowed) goes to the next
//     provider after the last one, cyclically, skipping those cooling down;
//   - any other retry stays with the provider of the last attempt, cooling down or not.
//
// When every candidate is cooling down, the first candidate is used: the cool-down saves
// calls, it never stops the chain.
func Choose(chain []Route, rec notify.Record, health *Health, now time.Time) Choice {
	last := RouteIndex(chain, rec.Provider)
	start := 0
	if rec.Attempt > 0 && last >= 0 {
		if !FailoverAllowed(rec) {
			return Choice{Route: chain[last]}
		}
		start = (last + 1) % len(chain)
	}
	var c Choice
	for k := range chain {
		r := chain[(start+k)%len(chain)]
		if !health.CoolingDown(r.Name, now) {
			c.Route = r
			break
		}
		c.Skipped = append(c.Skipped, r.Name)
	}
	if c.Route.Sender == nil {
		c.Route, c.Skipped = chain[start], nil
	}
	c.Failover = rec.Attempt > 0 && c.Route.Name != rec.Provider
	return c
}

// Default circuit breaker settings.
const (
	// DefaultTripAfter is how many "not accepted" answers in a row open a provider's breaker.
	DefaultTripAfter = 3
	// DefaultCoolDown is how long an open breaker skips its provider.
	DefaultCoolDown = 30 * time.Second
)

// Health is a per-provider circuit breaker kept in the function's memory (one per execution
// environment; nothing is stored). A provider that answers "not accepted" TripAfter times in a
// row is skipped by Choose for CoolDown; the first call after that is a trial, and any answer
// other than "not accepted" closes the breaker. A nil *Health never cools anything down. It is
// safe for concurrent use.
type Health struct {
	TripAfter int
	CoolDown  time.Duration

	mu    sync.Mutex
	state map[string]*breaker
}

type breaker struct {
	failures int
	until    time.Time
}

// NewHealth returns a Health with the default settings.
func NewHealth() *Health { return &Health{TripAfter: DefaultTripAfter, CoolDown: DefaultCoolDown} }

// CoolingDown reports whether provider is skipped at now.
func (h *Health) CoolingDown(provider string, now time.Time) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.state[provider]
	return b != nil && now.Before(b.until)
}

// Observe records the outcome of one call to provider at now. It reports whether this call
// opened the breaker.
func (h *Health) Observe(provider string, o sms.Outcome, now time.Time) (opened bool) {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == nil {
		h.state = map[string]*breaker{}
	}
	b := h.state[provider]
	if b == nil {
		b = &breaker{}
		h.state[provider] = b
	}
	if o.Normalized().Class != sms.ClassNotAccepted {
		b.failures, b.until = 0, time.Time{}
		return false
	}
	b.failures++
	if b.failures >= max(h.TripAfter, 1) {
		b.failures = 0
		b.until = now.Add(h.CoolDown)
		return true
	}
	return false
}
