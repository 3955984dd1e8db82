// Package client calls the resetnotify API (docs/openapi.yaml) from a
// caller's backend, signing each request with AWS Signature Version 4 for execute-api, and
// makes "retry until you get an answer" safe by construction.
//
// Send always sends an idempotency key: the caller's, or the one the API would derive,
// <event_id>:<channel>:<purpose>. It repeats the same request, with the same key and body, on
// a network error, a try that timed out, API Gateway's 429, and any 5xx, after a jittered exponential backoff
// that is never shorter than the answer's Retry-After. Since the API admits each key exactly
// once and answers a repeat with 200 and the current status, a repeat can never admit a second
// notification, and every call for one key ends with the same notification ID. A replay (200)
// is success, not an error.
//
// Retries stop when the context is done, when MaxAttempts tries were made, and when the next
// try could not start before the context's deadline or, for Send, before the notification's
// expires_at: no try starts and no backoff ends after either. A call never outlives its
// context: each try also ends a little before the context's deadline (a tenth of the time
// left, at most 250 ms), so that the call returns by the deadline with the last answer, and
// no try starts with less than its need (a tenth of TryTimeout, at most 100 ms) plus 250 ms
// left.
//
// Answers that repeating cannot change are returned at once as an *APIError, which matches
// the sentinel errors with errors.Is: ErrInvalidRequest (400, with the field errors),
// ErrForbidden (403), ErrNotFound (404), ErrNotCancellable (409), ErrPayloadTooLarge (413),
// ErrUnsupportedMediaType (415), ErrKeyReused (422 idempotency-key-reused),
// ErrDestinationNotAllowed (422 destination-not-allowed) and ErrRateLimited (429 rate-limited
// or prefix-rate-limited: an abuse guard's refusal, recorded under the key (state refused),
// so the key keeps getting it; APIError.RetryAfter says when a new request, with a new key,
// may pass). When retries run out, the error wraps
// the last answer (ErrThrottled for 429, ErrUnavailable for a 5xx) or the last network error.
//
// No error of this package holds a phone number, a param or a request body: the API never
// echoes them, and this package adds nothing of the request but its method, path and key.
package client
