package workercore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// The two providers of the failover tests' chain, in order.
const (
	primary   = "alpha"
	secondary = "beta"
)

// chainFixture is a fixture whose workers have a chain of two providers: primary is the
// fixture's sender and lookup, secondary has its own.
type chainFixture struct {
	*fixture
	sender2 *workercoretest.Sender
	lookup2 *workercoretest.Lookup
}

func newChainFixture(t *testing.T) *chainFixture {
	t.Helper()
	f := &chainFixture{fixture: newFixture(t), sender2: &workercoretest.Sender{}, lookup2: &workercoretest.Lookup{}}
	f.d.Chain = []workercore.Route{{Name: primary, Sender: f.sender}, {Name: secondary, Sender: f.sender2}}
	f.d.Provider, f.r.Provider = primary, primary
	f.r.Chain = []workercore.LookupRoute{{Name: primary, Lookup: sms.OnlyLookup(f.lookup)}, {Name: secondary, Lookup: sms.OnlyLookup(f.lookup2)}}
	return f
}

// refs returns the attempt references a sender was called with.
func refs(s *workercoretest.Sender) []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.AttemptRef)
	}
	return out
}

// TestFailoverOnProofOfNonAcceptance: each "not accepted" detail proves nothing was sent, so
// the next attempt goes to the secondary, at once (no backoff), and is recorded with it.
func TestFailoverOnProofOfNonAcceptance(t *testing.T) {
	for _, o := range []sms.Outcome{
		sms.NotAccepted(sms.DetailNotWritten, 0, errors.New("dial tcp: connection refused")),
		sms.NotAccepted(sms.DetailUnavailable, 0, nil),
		sms.NotAccepted(sms.DetailThrottled, 30*time.Second, nil),
	} {
		t.Run(string(o.Detail), func(t *testing.T) {
			f := newChainFixture(t)
			f.sender.Outcomes = []sms.Outcome{o}
			rec := f.admitKey(t, "k")
			f.dispatch(t, notify.MessageOf(rec))
			got := f.get(t, "k")
			if got.State != notify.StateRetryScheduled || got.Provider != primary || !got.NextActionAt.Equal(f.clock.Now()) {
				t.Fatalf("after the primary: %s/%s provider %q due %s, want retry_scheduled at once", got.State, got.Reason, got.Provider, got.NextActionAt)
			}
			f.drain(t, 5)
			got = f.get(t, "k")
			if got.State != notify.StateSent || got.Provider != secondary || got.Attempt != 2 {
				t.Fatalf("%s/%s provider %q attempt %d, want sent through %s as attempt 2", got.State, got.Reason, got.Provider, got.Attempt, secondary)
			}
			if diff := cmp.Diff([]string{"n-k-a2"}, refs(f.sender2)); diff != "" {
				t.Errorf("secondary's sends (-want +got):\n%s", diff)
			}
			if f.sender.Calls() != 1 {
				t.Errorf("primary called %d times, want 1", f.sender.Calls())
			}
			if !strings.Contains(f.metrics.String(), `"Failovers":1`) {
				t.Errorf("no Failovers metric:\n%s", f.metrics.String())
			}
		})
	}
}

// TestRejectionFailsOverOnlyForTheProvidersOwnRestriction: a refusal of the provider's own
// (its countries, its senders) goes to the next provider; a permanent refusal of the
// destination does not, and neither does a restriction at the last provider of the chain.
func TestRejectionFailsOverOnlyForTheProvidersOwnRestriction(t *testing.T) {
	tests := []struct {
		name      string
		first     sms.Outcome
		second    sms.Outcome
		want      state
		secondary int
	}{
		{"country not served: the secondary sends", sms.Restricted("ValidationException/DESTINATION_COUNTRY_BLOCKED", nil), sms.Accepted("b-1"),
			state{notify.StateSent, notify.ReasonProviderAccepted}, 1},
		{"destination rejected: failed, the secondary is never asked", sms.Rejected("opted_out", nil), sms.Accepted("b-1"),
			state{notify.StateFailed, notify.ReasonProviderRejected}, 0},
		{"restricted at the last provider too: failed", sms.Restricted("country_not_supported", nil), sms.Restricted("country_not_supported", nil),
			state{notify.StateFailed, notify.ReasonProviderRejected}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newChainFixture(t)
			f.sender.Outcomes = []sms.Outcome{tc.first}
			f.sender2.Outcomes = []sms.Outcome{tc.second}
			f.dispatch(t, notify.MessageOf(f.admitKey(t, "k")))
			f.drain(t, 5)
			if diff := cmp.Diff(tc.want, stateOf(f.get(t, "k"))); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if f.sender.Calls() != 1 || f.sender2.Calls() != tc.secondary {
				t.Errorf("primary %d, secondary %d calls; want 1 and %d", f.sender.Calls(), f.sender2.Calls(), tc.secondary)
			}
		})
	}
}

// TestUnknownNeverFailsOverBeforeReconciliation: an unknown outcome goes to reconciliation,
// which asks the provider that had the attempt. Found: sent through it, and the secondary is
// never called, however often the dispatch message comes back. Not found (after its
// visibility window): only then may the next attempt go to the secondary.
func TestUnknownNeverFailsOverBeforeReconciliation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answer    sms.LookupResult
		want      state
		provider  string
		secondary int
	}{
		{"found at the primary", sms.Found("a-1", sms.ReceiptNone, time.Time{}), state{notify.StateSent, notify.ReasonReconciledAccepted}, primary, 0},
		{"not found at the primary", sms.LookupResult{Status: sms.LookupNotFound}, state{notify.StateSent, notify.ReasonProviderAccepted}, secondary, 1},
		{"inconclusive", sms.Inconclusive("provider_error"), state{notify.StateExpired, notify.ReasonExpiredUnresolved}, primary, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newChainFixture(t)
			f.sender.Outcomes = []sms.Outcome{sms.Unknown(sms.DetailTimeout, context.DeadlineExceeded)}
			f.lookup.Answers = []workercoretest.Answer{{Result: tc.answer}}
			f.lookup2.Answers = []workercoretest.Answer{{Result: sms.LookupResult{Status: sms.LookupNotFound}}}
			rec := f.admitKey(t, "k")
			f.dispatch(t, notify.MessageOf(rec))
			// Duplicates of the dispatch message, and a sweep, before reconciliation ran.
			f.dispatch(t, notify.MessageOf(rec))
			f.dispatch(t, notify.MessageOf(f.get(t, "k")))
			if f.sender2.Calls() != 0 {
				t.Fatalf("the secondary was called before reconciliation: %v", refs(f.sender2))
			}
			f.drain(t, 40)
			for f.get(t, "k").State == notify.StateDispatchUnknown {
				f.clock.Advance(time.Minute)
				f.sweep(t)
				f.drain(t, 40)
			}
			got := f.get(t, "k")
			if diff := cmp.Diff(tc.want, stateOf(got)); diff != "" || got.Provider != tc.provider {
				t.Errorf("state (-want +got):\n%s provider %q, want %q", diff, got.Provider, tc.provider)
			}
			if f.sender2.Calls() != tc.secondary || f.sender.Calls() != 1 {
				t.Errorf("primary %d, secondary %d calls; want 1 and %d", f.sender.Calls(), f.sender2.Calls(), tc.secondary)
			}
			if len(f.lookup2.Requests()) != 0 {
				t.Errorf("the secondary was asked about the primary's attempt")
			}
		})
	}
}

// TestNoFailoverWhileAReceiptSaysAccepted: a receipt of the primary for the attempt outweighs
// its lookup's "not found", and a receipt held on a record the primary answered "not
// accepted" for stops every further attempt: the secondary is never called.
func TestNoFailoverWhileAReceiptSaysAccepted(t *testing.T) {
	t.Run("stored receipt against not found", func(t *testing.T) {
		f := newChainFixture(t)
		rec := f.unknownRecord(t, request("k", 10*time.Minute))
		ref := sms.AttemptRef(rec.NotificationID, rec.Attempt)
		f.r.Receipts = &workercoretest.Receipts{ByRef: map[string]sms.Receipt{ref: {AttemptRef: ref, Provider: primary}}}
		f.lookup.Answers = []workercoretest.Answer{{Result: sms.LookupResult{Status: sms.LookupNotFound}}}
		f.reconcile(t, notify.MessageOf(rec))
		f.drain(t, 10)
		if got := f.get(t, "k"); got.State != notify.StateDispatchUnknown || f.sender2.Calls() != 0 {
			t.Errorf("%s/%s, secondary calls %d: a receipt of the first provider must block the retry", got.State, got.Reason, f.sender2.Calls())
		}
	})
	t.Run("receipt held on a record answered not accepted", func(t *testing.T) {
		f := newChainFixture(t)
		f.sender.Outcomes = []sms.Outcome{sms.NotAccepted(sms.DetailUnavailable, 0, nil)}
		rec := f.admitKey(t, "k")
		f.dispatch(t, notify.MessageOf(rec))
		held := f.get(t, "k")
		held.EarlyReceipt = notify.Receipt{State: notify.StateDelivered, Provider: held.Provider}
		f.put(t, held)
		f.drain(t, 10)
		if f.sender2.Calls() != 0 || f.sender.Calls() != 1 {
			t.Errorf("primary %d, secondary %d calls after a receipt said the primary accepted", f.sender.Calls(), f.sender2.Calls())
		}
		if !strings.Contains(f.metrics.String(), `"ContradictedOutcomes":1`) {
			t.Errorf("no ContradictedOutcomes metric:\n%s", f.metrics.String())
		}
	})
}

// TestReconcileAsksTheProviderThatHadTheAttempt: an attempt that went to the secondary is
// looked up there; a record written before the chain (no provider) at the first provider.
func TestReconcileAsksTheProviderThatHadTheAttempt(t *testing.T) {
	for _, tc := range []struct {
		provider      string
		first, second int
	}{{secondary, 0, 1}, {primary, 1, 0}, {"", 1, 0}, {"retired", 0, 0}} {
		t.Run("provider "+tc.provider, func(t *testing.T) {
			f := newChainFixture(t)
			rec := f.unknownRecord(t, request("k", 10*time.Minute))
			rec.Provider = tc.provider
			f.put(t, rec)
			f.lookup.Answers = []workercoretest.Answer{{Result: sms.Found("a-1", sms.ReceiptNone, time.Time{})}}
			f.lookup2.Answers = []workercoretest.Answer{{Result: sms.Found("b-1", sms.ReceiptNone, time.Time{})}}
			f.reconcile(t, notify.MessageOf(f.get(t, "k")))
			if len(f.lookup.Requests()) != tc.first || len(f.lookup2.Requests()) != tc.second {
				t.Errorf("lookups: primary %d, secondary %d; want %d and %d", len(f.lookup.Requests()), len(f.lookup2.Requests()), tc.first, tc.second)
			}
		})
	}
}

// TestReceiptFromAnotherProviderIsNotApplied: a stored receipt for the attempt's reference
// that names another provider is evidence, never applied, and still blocks "not found".
func TestReceiptFromAnotherProviderIsNotApplied(t *testing.T) {
	f := newChainFixture(t)
	rec := f.unknownRecord(t, request("k", 10*time.Minute))
	rec.Provider = primary
	f.put(t, rec)
	ref := sms.AttemptRef(rec.NotificationID, rec.Attempt)
	f.r.Receipts = &workercoretest.Receipts{ByRef: map[string]sms.Receipt{ref: {AttemptRef: ref, Provider: secondary, MessageID: "b-9", Status: sms.ReceiptDelivered}}}
	f.lookup.Answers = []workercoretest.Answer{{Result: sms.LookupResult{Status: sms.LookupNotFound}}}
	f.reconcile(t, notify.MessageOf(f.get(t, "k")))
	got := f.get(t, "k")
	if got.State != notify.StateDispatchUnknown || got.Reason != notify.ReasonReconcileInconclusive {
		t.Errorf("%s/%s, want dispatch_unknown/RECONCILE_INCONCLUSIVE: the neighbour's receipt applied, or its presence ignored", got.State, got.Reason)
	}
	if !strings.Contains(f.metrics.String(), `"ReceiptMismatches":1`) {
		t.Errorf("no ReceiptMismatches metric:\n%s", f.metrics.String())
	}
}

// TestCoolDownSkipsAFailingProvider: after DefaultTripAfter "not accepted" answers in a row,
// new notifications go straight to the secondary until the cool-down has passed; then the
// primary gets a trial call again.
func TestCoolDownSkipsAFailingProvider(t *testing.T) {
	f := newChainFixture(t)
	f.d.Health = workercore.NewHealth()
	f.sender.Outcomes = []sms.Outcome{sms.NotAccepted(sms.DetailNotWritten, 0, errors.New("connection refused"))}
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	for _, k := range keys {
		f.dispatch(t, notify.MessageOf(f.admitKey(t, k)))
		f.drain(t, 5)
	}
	if f.sender.Calls() != workercore.DefaultTripAfter {
		t.Errorf("primary called %d times, want %d: the cool-down did not skip it", f.sender.Calls(), workercore.DefaultTripAfter)
	}
	for _, k := range keys {
		if got := f.get(t, k); got.State != notify.StateSent || got.Provider != secondary {
			t.Errorf("%s: %s through %q", k, got.State, got.Provider)
		}
	}
	if !strings.Contains(f.metrics.String(), `"ProviderCoolDownSkips":1`) {
		t.Errorf("no ProviderCoolDownSkips metric")
	}
	f.clock.Advance(workercore.DefaultCoolDown)
	f.dispatch(t, notify.MessageOf(f.admitKey(t, "k6")))
	if f.sender.Calls() != workercore.DefaultTripAfter+1 {
		t.Errorf("no trial call to the primary after the cool-down")
	}
}

// TestChooseStaysWithoutProof: a retry whose reason proves nothing about the last attempt, or
// whose record holds a receipt for it, stays with the provider of the last attempt, even when
// that provider is cooling down.
func TestChooseStaysWithoutProof(t *testing.T) {
	chain := []workercore.Route{{Name: primary, Sender: &workercoretest.Sender{}}, {Name: secondary, Sender: &workercoretest.Sender{}}}
	h := workercore.NewHealth()
	for range workercore.DefaultTripAfter {
		h.Observe(primary, sms.NotAccepted(sms.DetailThrottled, 0, nil), t0)
	}
	base := notify.Record{State: notify.StateRetryScheduled, Attempt: 1, Provider: primary}
	for _, tc := range []struct {
		name string
		edit func(*notify.Record)
		want string
	}{
		{"proven not accepted", func(r *notify.Record) { r.Reason = notify.ReasonProviderUnavailable }, secondary},
		{"not found after reconciliation", func(r *notify.Record) { r.Reason = notify.ReasonReconciledNotFound }, secondary},
		{"a reason that proves nothing", func(r *notify.Record) { r.Reason = notify.ReasonReconcileInconclusive }, primary},
		{"a receipt held for the last attempt", func(r *notify.Record) {
			r.Reason, r.EarlyReceipt = notify.ReasonProviderUnavailable, notify.Receipt{State: notify.StateDelivered}
		}, primary},
		{"first attempt, primary cooling down", func(r *notify.Record) { r.State, r.Attempt, r.Provider = notify.StateAccepted, 0, "" }, secondary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := base
			tc.edit(&rec)
			if got := workercore.Choose(chain, rec, h, t0).Route.Name; got != tc.want {
				t.Errorf("chose %s, want %s", got, tc.want)
			}
		})
	}
}
