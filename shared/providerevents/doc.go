// Package providerevents is the provider-events function: it takes the delivery events an SMS
// provider reports (AWS End User Messaging SMS events through SNS; Sinch's delivery report
// callbacks, Twilio's signed status callbacks and the simulator's webhook through the HTTP API),
// keeps each as evidence in the receipts table, and moves a sent notification to delivered or
// undelivered when the event is final.
//
// # One receipt per attempt
//
// The receipts table holds one item per attempt_ref (<notification_id>-a<N>): the most
// informative event known for that attempt. Its status is "accepted" (any event that is not
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
// Recorder.Record makes one domain call per receipt. It records the receipt first, always, as
// evidence for reconciliation: the reconcile worker of a provider without a lookup API (AWS
// End User Messaging SMS), and the reconcile worker of every provider before its lookup, read
// this table through Store, an sms.ReceiptReader. Then, for a
// final receipt, it finds the record through the notifications table's by_notification index
// and acts on its state:
//
//	sent, same attempt                  → delivered / undelivered (RECEIPT_DELIVERED / RECEIPT_FAILED),
//	                                      one conditional Transition, re-read and retried on a conflict
//	dispatching, same attempt           → early: held on the record (HoldReceipt, one conditional
//	                                      write, no version change) and acknowledged; the dispatch
//	                                      worker's next transition applies it
//	dispatch_unknown, same attempt      → recorded: reconciliation reads it before the lookup
//	delivered / undelivered, same word  → duplicate (also a second final receipt while one is held)
//	no record (never existed or purged) → orphan: recorded and acknowledged
//	anything else                       → stale: recorded, acknowledged and logged (a receipt for
//	                                      another attempt than the record's is evidence of a
//	                                      double send)
//
// An intermediate receipt is only recorded. A malformed event is poison: it is acknowledged
// and counted, never retried and never logged with its content.
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
