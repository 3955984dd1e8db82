// Package notify is the domain core of resetnotify: the states a notification moves through,
// the closed list of reason codes, the table of allowed transitions, request validation, the
// canonical request fingerprint and the dispatch deadline. It imports only the standard
// library and never reads the clock itself: every time-dependent decision takes "now" from an
// injected Clock, so each branch can be tested with a fake one.
//
// The state diagram (∅ is "no record yet"):
//
//	∅ ──ADMITTED──▶ accepted            ∅ ──EXPIRED_AT_ADMISSION──▶ expired
//	accepted | retry_scheduled ──LEASE_ACQUIRED──▶ dispatching
//	dispatching ──PROVIDER_ACCEPTED──▶ sent
//	dispatching ──PROVIDER_TIMEOUT | CONNECTION_LOST | PROVIDER_AMBIGUOUS | LEASE_EXPIRED──▶ dispatch_unknown
//	dispatching ──PROVIDER_THROTTLED | PROVIDER_UNAVAILABLE──▶ retry_scheduled
//	dispatching ──PROVIDER_REJECTED──▶ retry_scheduled   (the provider's own restriction; another provider is left)
//	dispatching ──PROVIDER_REJECTED | ATTEMPTS_EXHAUSTED──▶ failed
//	dispatch_unknown ──RECONCILED_ACCEPTED | RECONCILED_BY_RECEIPT──▶ sent
//	dispatch_unknown ──RECONCILED_BY_RECEIPT──▶ delivered | undelivered   (a stored final receipt)
//	dispatch_unknown ──RECONCILED_NOT_FOUND──▶ retry_scheduled
//	dispatch_unknown ──RECONCILE_INCONCLUSIVE──▶ dispatch_unknown
//	accepted | retry_scheduled ──EXPIRED_BEFORE_DISPATCH──▶ expired
//	dispatch_unknown ──EXPIRED_UNRESOLVED (or EXPIRED_BEFORE_DISPATCH once reconciled as not sent)──▶ expired
//	accepted | retry_scheduled ──CANCELLED | SUPERSEDED──▶ cancelled
//	accepted ──REFUSED_DESTINATION_HOUR | REFUSED_DESTINATION_DAY | REFUSED_PREFIX_VELOCITY──▶ refused
//	sent ──RECEIPT_DELIVERED──▶ delivered        sent ──RECEIPT_FAILED──▶ undelivered
//	sent | delivered | undelivered ──CONVERTED──▶ the same state   (the code or link was used)
//
// Every other (from, to, reason) triple is refused with ErrInvalidTransition. A transition
// always increments the record's version and is applied by the store as one conditional write
// on the expected version; taking the lease is additionally conditioned on now being before
// the dispatch deadline, so a slow worker can never send late.
package notify
