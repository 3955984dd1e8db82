package notify

import "fmt"

type edge struct{ from, to State }

// allowed is the transition table of docs/design.md: for each (from, to) pair, the reasons it
// accepts. A pair that is absent is refused.
var allowed = map[edge][]Reason{
	{StateNone, StateAccepted}: {ReasonAdmitted},
	{StateNone, StateExpired}:  {ReasonExpiredAtAdmission},

	{StateAccepted, StateDispatching}:       {ReasonLeaseAcquired},
	{StateRetryScheduled, StateDispatching}: {ReasonLeaseAcquired},

	{StateDispatching, StateSent}: {ReasonProviderAccepted},
	{StateDispatching, StateDispatchUnknown}: {
		ReasonProviderTimeout, ReasonConnectionLost, ReasonProviderAmbiguous, ReasonLeaseExpired,
	},
	// PROVIDER_REJECTED leads to retry_scheduled only for a refusal of the provider's own
	// (its countries or senders) while another provider of the chain is left to try.
	{StateDispatching, StateRetryScheduled}: {ReasonProviderThrottled, ReasonProviderUnavailable, ReasonProviderRejected},
	{StateDispatching, StateFailed}:         {ReasonProviderRejected, ReasonAttemptsExhausted},

	{StateDispatchUnknown, StateSent}:            {ReasonReconciledAccepted, ReasonReconciledByReceipt},
	{StateDispatchUnknown, StateDelivered}:       {ReasonReconciledByReceipt},
	{StateDispatchUnknown, StateUndelivered}:     {ReasonReconciledByReceipt},
	{StateDispatchUnknown, StateRetryScheduled}:  {ReasonReconciledNotFound},
	{StateDispatchUnknown, StateDispatchUnknown}: {ReasonReconcileInconclusive},

	{StateAccepted, StateExpired}:       {ReasonExpiredBeforeDispatch},
	{StateRetryScheduled, StateExpired}: {ReasonExpiredBeforeDispatch},
	// A reconciliation that proves nothing was sent, too late to retry, stopped before dispatch.
	{StateDispatchUnknown, StateExpired}: {ReasonExpiredUnresolved, ReasonExpiredBeforeDispatch},

	{StateAccepted, StateCancelled}:       {ReasonCancelled, ReasonSuperseded},
	{StateRetryScheduled, StateCancelled}: {ReasonCancelled, ReasonSuperseded},

	// Only the request that created the record, once the guard refused it, and only before
	// any duplicate settled the record as admitted (see Service.decide).
	// Dispatch refuses, before any send, a sealed number that fails the allow-list.
	{StateAccepted, StateRefused}: {ReasonRefusedDestinationHour, ReasonRefusedDestinationDay, ReasonRefusedPrefixVelocity, ReasonRefusedPrefixBlocked,
		ReasonRefusedDestinationNotAllowed},
	{StateRetryScheduled, StateRefused}: {ReasonRefusedDestinationNotAllowed},

	{StateSent, StateDelivered}:   {ReasonReceiptDelivered},
	{StateSent, StateUndelivered}: {ReasonReceiptFailed},

	// A conversion is evidence on a record the provider accepted: the state stays (see
	// Record.Convert). Undelivered is included because a used code proves the receipt wrong.
	{StateSent, StateSent}:               {ReasonConverted},
	{StateDelivered, StateDelivered}:     {ReasonConverted},
	{StateUndelivered, StateUndelivered}: {ReasonConverted},
}

// Allowed reports whether the domain permits moving from one state to another for reason.
func Allowed(from, to State, reason Reason) bool {
	for _, r := range allowed[edge{from, to}] {
		if r == reason {
			return true
		}
	}
	return false
}

// Reasons returns the reasons that the pair (from, to) accepts, or nil when the pair is refused.
func Reasons(from, to State) []Reason {
	return append([]Reason(nil), allowed[edge{from, to}]...)
}

// CheckTransition returns an error wrapping ErrInvalidTransition unless Allowed(from, to, reason).
func CheckTransition(from, to State, reason Reason) error {
	if Allowed(from, to, reason) {
		return nil
	}
	return fmt.Errorf("%w: %q -> %q (%s)", ErrInvalidTransition, from, to, reason)
}
