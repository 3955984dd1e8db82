package notify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// designTransitions is docs/design.md's transition list written out as "from -> to : REASON"
// lines, independently of the table in transition.go, so that a change to one alone fails.
const designTransitions = `
none -> accepted : ADMITTED
none -> expired : EXPIRED_AT_ADMISSION
accepted -> dispatching : LEASE_ACQUIRED
retry_scheduled -> dispatching : LEASE_ACQUIRED
dispatching -> sent : PROVIDER_ACCEPTED
dispatching -> dispatch_unknown : PROVIDER_TIMEOUT
dispatching -> dispatch_unknown : CONNECTION_LOST
dispatching -> dispatch_unknown : PROVIDER_AMBIGUOUS
dispatching -> dispatch_unknown : LEASE_EXPIRED
dispatching -> retry_scheduled : PROVIDER_THROTTLED
dispatching -> retry_scheduled : PROVIDER_UNAVAILABLE
dispatching -> retry_scheduled : PROVIDER_REJECTED
dispatching -> failed : PROVIDER_REJECTED
dispatching -> failed : ATTEMPTS_EXHAUSTED
dispatch_unknown -> sent : RECONCILED_ACCEPTED
dispatch_unknown -> retry_scheduled : RECONCILED_NOT_FOUND
dispatch_unknown -> dispatch_unknown : RECONCILE_INCONCLUSIVE
dispatch_unknown -> sent : RECONCILED_BY_RECEIPT
dispatch_unknown -> delivered : RECONCILED_BY_RECEIPT
dispatch_unknown -> undelivered : RECONCILED_BY_RECEIPT
accepted -> expired : EXPIRED_BEFORE_DISPATCH
retry_scheduled -> expired : EXPIRED_BEFORE_DISPATCH
dispatch_unknown -> expired : EXPIRED_UNRESOLVED
dispatch_unknown -> expired : EXPIRED_BEFORE_DISPATCH
accepted -> cancelled : CANCELLED
accepted -> cancelled : SUPERSEDED
retry_scheduled -> cancelled : CANCELLED
retry_scheduled -> cancelled : SUPERSEDED
sent -> delivered : RECEIPT_DELIVERED
sent -> undelivered : RECEIPT_FAILED
sent -> sent : CONVERTED
delivered -> delivered : CONVERTED
undelivered -> undelivered : CONVERTED
accepted -> refused : REFUSED_DESTINATION_HOUR
accepted -> refused : REFUSED_DESTINATION_DAY
accepted -> refused : REFUSED_PREFIX_VELOCITY
accepted -> refused : REFUSED_PREFIX_BLOCKED
`

var allReasons = []notify.Reason{
	notify.ReasonAdmitted, notify.ReasonExpiredAtAdmission, notify.ReasonLeaseAcquired,
	notify.ReasonProviderAccepted, notify.ReasonProviderTimeout, notify.ReasonConnectionLost,
	notify.ReasonProviderAmbiguous, notify.ReasonLeaseExpired, notify.ReasonProviderThrottled,
	notify.ReasonProviderUnavailable, notify.ReasonProviderRejected, notify.ReasonAttemptsExhausted,
	notify.ReasonReconciledAccepted, notify.ReasonReconciledNotFound, notify.ReasonReconcileInconclusive,
	notify.ReasonReconciledByReceipt,
	notify.ReasonExpiredBeforeDispatch, notify.ReasonExpiredUnresolved, notify.ReasonCancelled,
	notify.ReasonSuperseded, notify.ReasonReceiptDelivered, notify.ReasonReceiptFailed,
	notify.ReasonConverted,
	notify.ReasonRefusedDestinationHour, notify.ReasonRefusedDestinationDay, notify.ReasonRefusedPrefixVelocity,
	notify.ReasonRefusedPrefixBlocked,
}

func TestEveryPairAgainstDesignTable(t *testing.T) {
	want := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(designTransitions), "\n") {
		want[line] = true
	}
	from := append([]notify.State{notify.StateNone}, notify.States...)
	to := append([]notify.State{notify.StateNone}, notify.States...)
	seen := 0
	for _, f := range from {
		for _, tt := range to {
			for _, r := range allReasons {
				key := stateName(f) + " -> " + stateName(tt) + " : " + string(r)
				got := notify.Allowed(f, tt, r)
				if got != want[key] {
					t.Errorf("Allowed(%q, %q, %s) = %v, design says %v", f, tt, r, got, want[key])
				}
				err := notify.CheckTransition(f, tt, r)
				if got != (err == nil) {
					t.Errorf("CheckTransition(%q, %q, %s) = %v, disagrees with Allowed", f, tt, r, err)
				}
				if err != nil && !errors.Is(err, notify.ErrInvalidTransition) {
					t.Errorf("CheckTransition error %v does not wrap ErrInvalidTransition", err)
				}
				if got {
					seen++
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("table allows %d triples, design lists %d", seen, len(want))
	}
}

// TestTerminalStatesHaveNoWayOut: a terminal state leads to no other state. The one edge it may
// have is the conversion, which is evidence and keeps the state.
func TestTerminalStatesHaveNoWayOut(t *testing.T) {
	for _, s := range notify.States {
		out := 0
		for _, to := range notify.States {
			for _, r := range notify.Reasons(s, to) {
				if to != s || r != notify.ReasonConverted {
					out++
				}
			}
		}
		if s.Terminal() && out != 0 {
			t.Errorf("terminal state %s has %d ways out", s, out)
		}
		if !s.Terminal() && out == 0 {
			t.Errorf("state %s is not terminal but has no way out", s)
		}
		if !s.Valid() {
			t.Errorf("%s not Valid", s)
		}
	}
	if notify.State("bogus").Valid() || notify.StateNone.Valid() {
		t.Error("unknown state counted as valid")
	}
}

func stateName(s notify.State) string {
	if s == notify.StateNone {
		return "none"
	}
	return string(s)
}
