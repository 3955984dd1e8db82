package notify

// Reason is the code recorded with every transition. The list is closed: the transition table
// names which reasons each (from, to) pair accepts.
type Reason string

// The reason codes of docs/design.md. Their string values are stored and audited; never rename one.
const (
	ReasonAdmitted              Reason = "ADMITTED"
	ReasonExpiredAtAdmission    Reason = "EXPIRED_AT_ADMISSION"
	ReasonLeaseAcquired         Reason = "LEASE_ACQUIRED"
	ReasonProviderAccepted      Reason = "PROVIDER_ACCEPTED"
	ReasonProviderTimeout       Reason = "PROVIDER_TIMEOUT"
	ReasonConnectionLost        Reason = "CONNECTION_LOST"
	ReasonProviderAmbiguous     Reason = "PROVIDER_AMBIGUOUS"
	ReasonLeaseExpired          Reason = "LEASE_EXPIRED"
	ReasonProviderThrottled     Reason = "PROVIDER_THROTTLED"
	ReasonProviderUnavailable   Reason = "PROVIDER_UNAVAILABLE"
	ReasonProviderRejected      Reason = "PROVIDER_REJECTED"
	ReasonAttemptsExhausted     Reason = "ATTEMPTS_EXHAUSTED"
	ReasonReconciledAccepted    Reason = "RECONCILED_ACCEPTED"
	ReasonReconciledNotFound    Reason = "RECONCILED_NOT_FOUND"
	ReasonReconcileInconclusive Reason = "RECONCILE_INCONCLUSIVE"
	// ReasonReconciledByReceipt settles dispatch_unknown from a delivery receipt stored for the
	// attempt (sent on an intermediate one, delivered or undelivered on a final one), before
	// and whatever the provider's lookup says.
	ReasonReconciledByReceipt   Reason = "RECONCILED_BY_RECEIPT"
	ReasonExpiredBeforeDispatch Reason = "EXPIRED_BEFORE_DISPATCH"
	ReasonExpiredUnresolved     Reason = "EXPIRED_UNRESOLVED"
	ReasonCancelled             Reason = "CANCELLED"
	ReasonSuperseded            Reason = "SUPERSEDED"
	ReasonReceiptDelivered      Reason = "RECEIPT_DELIVERED"
	ReasonReceiptFailed         Reason = "RECEIPT_FAILED"
	// ReasonConverted records the caller's report that the code or link was used. The state
	// stays what it was (sent, delivered or undelivered); the record gains converted_at.
	ReasonConverted Reason = "CONVERTED"
	// The abuse guard's refusals of a record it had not decided yet (accepted → refused): the
	// destination reached its admissions per UTC hour or per UTC day, or its prefix reached
	// its distinct destinations per minute.
	ReasonRefusedDestinationHour Reason = "REFUSED_DESTINATION_HOUR"
	ReasonRefusedDestinationDay  Reason = "REFUSED_DESTINATION_DAY"
	ReasonRefusedPrefixVelocity  Reason = "REFUSED_PREFIX_VELOCITY"
	// ReasonRefusedPrefixBlocked: the number's prefix is blocked because the codes sent to it
	// are not used (its conversion share fell under the threshold, or an operator blocked it).
	ReasonRefusedPrefixBlocked Reason = "REFUSED_PREFIX_BLOCKED"
	// ReasonRefusedDestinationNotAllowed: dispatch found the sealed number outside the allowed
	// countries or number types (Countries.Refusal), which intake never admits: a record
	// written by someone else, or admitted under another allow-list. Nothing is sent.
	ReasonRefusedDestinationNotAllowed Reason = "REFUSED_DESTINATION_NOT_ALLOWED"
)
