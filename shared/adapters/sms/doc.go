// Package sms holds the ports between the dispatch and reconcile workers and an SMS provider,
// and the one classification of provider outcomes that docs/design.md's "Provider outcomes" table
// defines. It imports only the standard library and the domain core.
//
// A send has exactly four outcomes (Class):
//
//	ClassAccepted     the provider accepted; we hold its message ID            → sent
//	ClassNotAccepted  known not accepted: failed before the request was
//	                  written, 429, or a 503 the provider documents as
//	                  "not processed"; RetryAfter when the provider said so    → retry_scheduled
//	ClassRejected     a permanent 4xx (invalid or opted-out number, blocked)   → failed
//	                  (DetailRestricted: a restriction of this provider's own,
//	                  which the next provider of a chain may not share)
//	ClassUnknown      timeout after the request was written, connection lost,
//	                  500/502/504, unreadable body                             → dispatch_unknown
//
// Outcome.Reason maps an outcome to the notify.Reason the worker records, and Outcome.State to
// the state it moves to. Outcome.FailoverAllowed says whether it proves the provider sent
// nothing, so that the next attempt may go to another provider: not accepted, or rejected as
// restricted. An outcome the adapter could not classify is Unknown, never
// NotAccepted: an unknown outcome is never retried blindly.
//
// Sender and Lookup are separate interfaces so that the reconcile worker can be handed a
// value that cannot send. LookupOnly wraps any Lookup in a type whose only method is Lookup;
// the reconcile worker should take a LookupOnly (a concrete type), so that the compiler, not
// a convention, guarantees it never sends.
//
// HTTPSender is the send skeleton the HTTP providers share (validity in whole seconds, a
// bounded exchange, a failure without an answer classified by whether the request was written);
// an adapter gives it a request builder and a classifier, normally ClassifySend with the
// provider's documented semantics. Exchange and ClassifySend are its parts, for a lookup.
//
// Nothing here logs, and no error an adapter returns contains the destination number or the
// message body: SendRequest redacts both when printed or logged, and a provider's refusal is
// reported as a ProviderError carrying only its status and code, never its free-text message
// (which may echo the number).
package sms
