// Package intake is the intake function's handler, its HTTP API: it turns API Gateway HTTP API events
// (payload format 2.0) into calls of notify.Service and its results into responses. It holds no
// business rule.
//
// Routes (RouteSubmit, RouteStatus, RouteCancel) are taken from the event's route key and the
// key from its path parameter, once: API Gateway and the local gateway set them alike.
//
//	POST   /v1/notifications        202 + Location (first admission, also when admitted as expired)
//	                                200 + Idempotent-Replayed: true (same key, same request)
//	                                400 malformed-request | invalid-request | idempotency-key-mismatch
//	                                413 payload-too-large, 415 unsupported-media-type
//	                                422 idempotency-key-reused, 503 dispatch-queue-unavailable + Retry-After
//	                                503 guard-unavailable + Retry-After (stored, not counted, not sent)
//	GET    /v1/notifications/{key}  200 status view, 400 invalid-request, 404 notification-not-found
//	DELETE /v1/notifications/{key}  200 cancelled status view, 400, 404, 409 not-cancellable | concurrent-change
//	any other route key             404 route-not-found
//	anything unexpected             500 internal-error
//
// Checks on a POST run in this order: Content-Type (415), base64 decoding (400), size of the
// decoded body (413), then notify.Service.SubmitJSON, the one domain call, which validates the
// body (400) before admission; GET and DELETE hand the key to Service.Status and Service.Cancel,
// which check it (400) before reading. Every error is application/problem+json
// (RFC 9457) with type https://resetnotify.dev/problems/<slug> (see ProblemType), title,
// status, detail and instance (urn:resetnotify:request:<request ID>). No response, log line or
// metric ever holds a phone number, a param, or any part of the body: field errors name the
// field and the rule, never the value, and a key is echoed only once it is valid.
//
// Every response carries Content-Type, Cache-Control: no-store and X-Request-Id with the API
// Gateway request ID. Each request is logged as one line (method, route, status, key,
// notification_id, latency_ms, request_id, problem) and counted as an EMF metric.
package intake
