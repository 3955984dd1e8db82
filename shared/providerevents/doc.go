// Package providerevents is the provider-events function: it takes the delivery events an SMS
// provider reports (End User Messaging events through SNS; Sinch's delivery reports, Twilio's
// signed status callbacks and the simulator's webhook through the HTTP API), moves a sent
// notification to delivered or undelivered when the event is final, and keeps in the receipts
// table every event the record cannot settle at once (docs/design.md, "Receipts").
//
// The receipts table holds at most one item per attempt_ref, written by one conditional
// PutItem (Store.Put): a final receipt replaces an intermediate one, and otherwise the first
// word is kept, so arrival order never hides a final event. A receipt holds the reference,
// the provider, its message ID, status, event code and times; never a number or a body.
//
// Recorder.Record makes one domain call per receipt. A final receipt that settles a sent
// record of the same attempt, provider and message ID is applied by one conditional
// transition and not stored (the transition and its audit entry hold it); a repeat of it is a
// duplicate. Every other final receipt is stored first, then acted on: held on a dispatching
// record (HoldReceipt), left for reconciliation of dispatch_unknown, or kept as an orphan,
// mismatch (alarmed on, never applied) or stale receipt. A receipt whose application fails is
// stored and answered with an error, so the provider delivers it again; a malformed event is
// poison, acknowledged and counted, never logged with its content.
//
// Handler.Handle takes the raw payload and dispatches on its shape: SNS events to HandleSNS
// (an error only when a store failed, so Lambda retries), HTTP API 2.0 events to HandleHTTP,
// which routes SinchRoute, TwilioRoute and the simulator's route to their webhook handlers.
// Webhooks answer 200 on every acknowledged receipt, 400 on poison, 401 on a bad token (403 on
// a bad X-Twilio-Signature, checked before anything is parsed) and 503 when a store failed.
package providerevents
