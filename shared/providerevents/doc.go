// Package providerevents is the provider-events function: it takes the delivery events an SMS
// provider reports (AWS End User Messaging SMS events through SNS; Sinch's delivery report
// callbacks, Twilio's signed status callbacks and the simulator's webhook through the HTTP API),
// moves a sent notification to delivered or undelivered when the event is final, and keeps as
// evidence in the receipts table every event that the record cannot settle at once.
//
// # The receipts table: one item per attempt, for what the record does not hold
//
// The receipts table holds at most one item per attempt_ref (<notification_id>-a<N>): the most
// informative event stored for that attempt. Its status is "accepted" (any event that is not
// final: the provider queued it, handed it to a carrier, ...), "delivered" or "undelivered".
// Writing is one conditional PutItem (Store.Put):
//
//   - no item yet: the receipt is stored;
//   - the stored receipt is not final and the new one is: the final one replaces it, so a
//     late intermediate event never hides a final one, whatever the order they arrive in;
//   - anything else (the same event again, an intermediate event after a final one, or a
//     second final event that disagrees with the first) changes nothing: the first final
//     word is kept, and a contradiction is logged.
//
// A receipt holds the attempt reference, the provider's message ID, the status, the time the
// provider reported, the notification ID, the provider's name, the provider's own event code
// (e.g. TEXT_BLOCKED), when it was recorded and its TTL. It never holds a phone number or a
// message body: the parsers copy only those fields out of the provider's event, and nothing
// else of the event is kept or logged.
//
// # What a receipt does to a notification
//
// Recorder.Record makes one domain call per receipt. An intermediate receipt is stored and
// nothing else (reconciliation reads it as proof of acceptance), unless a final one is stored
// for the attempt already: that one is then acted on as below, so a retry finishes it.
//
// A final receipt is read against its record first, found through the notifications table's
// by_notification index. When the record settles it by itself, the receipt is NOT stored:
//
//	sent, same attempt, provider        → delivered / undelivered (RECEIPT_DELIVERED / RECEIPT_FAILED),
//	and message ID match                  one conditional Transition, re-read and retried on a conflict;
//	                                      the record's transition (and the audit entry the stream
//	                                      makes of it) holds the state, the provider, the message
//	                                      ID, the attempt and when it was applied, and the receipt
//	                                      log line its provider time and event code
//	delivered / undelivered, the same   → duplicate: nothing written (answered from the record's
//	state, same attempt, match            state)
//
// Every other final receipt is stored first, as before this rule, and then acted on:
//
//	dispatching, same attempt           → early: held on the record (HoldReceipt, one conditional
//	                                      write, no version change) and acknowledged; the dispatch
//	                                      worker's next transition applies it
//	dispatching, one already held       → duplicate
//	dispatch_unknown, same attempt      → recorded: reconciliation reads it (sms.ReceiptReader)
//	                                      before it asks the provider, and it is all an End User
//	                                      Messaging reconciliation has
//	no record (never existed or purged) → orphan: recorded and acknowledged
//	another provider or message         → mismatch: recorded, alarmed on, never applied
//	anything else                       → stale: recorded, acknowledged and logged (a receipt for
//	                                      another attempt than the record's is evidence of a
//	                                      double send; a final word contradicting the record's)
//
// Why (issue 29): storing a receipt that the record's transition applies at once cost a write
// unit per delivered notification and said nothing the transition and its audit entry do not;
// what is stored is what someone reads (reconciliation) or what the record cannot hold
// (evidence of something wrong). A final receipt whose application fails (a store error, or
// DefaultMaxTries lost races) is stored then, best effort, and answered with an error, so
// the provider delivers it again (SNS: Lambda's two retries; webhooks: 503) and the stored copy
// remains as evidence if it never does. A Lambda stopped before the transition has written
// nothing: the provider's redelivery applies the receipt, and without one the record stays
// sent (the provider took the message; the delivery is unknown), as it did when the receipt
// was stored first and never applied: nothing but a receipt moves a sent record. A malformed
// event is poison: it is acknowledged and counted, never retried and never logged with its
// content.
//
// # Entry points
//
// One Lambda function's code serves every source. Handler.Handle takes the raw invocation
// payload (json.RawMessage, which lambda.Start passes through undecoded) and dispatches on its
// shape: an SNS event (Records[].EventSource "aws:sns") goes to HandleSNS, an API Gateway HTTP
// API payload 2.0 event (version "2.0") goes to HandleHTTP, which hands the route
// SinchRoute to HandleSinchWebhook, TwilioRoute to HandleTwilioWebhook and any other to
// HandleSimulatorWebhook. The typed
// methods are exported so that the local stack can serve the webhook routes directly.
//
// HandleSNS returns an error, so that Lambda's asynchronous invocation retries the event, only
// when a store failed; SNS events carry no partial-batch response. An early final receipt is
// held on the record, so it no longer depends on a redelivery that may run out. HandleSimulatorWebhook checks
// the simulator's shared token (simapi.WebhookTokenHeader) in constant time and answers 200 on
// every acknowledged receipt (an early one included), 400 on poison, 401 on a bad token and 503
// (Retry-After) when a store failed and the provider should try again. HandleSinchWebhook
// answers the same way; its token is in the callback URL's query (Sinch signs no SMS delivery
// report), and its receipts are matched on provider sinch, the batch ID and the
// client_reference dispatch sent with the batch. HandleTwilioWebhook checks the
// X-Twilio-Signature (HMAC-SHA1 under either configured auth token, TwilioSignatureValid) before
// anything else and answers 403 when it fails; its receipts are matched on provider twilio, the
// MessageSid and the attempt reference the callback URL carries.
package providerevents
