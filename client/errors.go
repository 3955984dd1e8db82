package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ProblemBase prefixes every problem type URI of the API.
const ProblemBase = "https://resetnotify.dev/problems/"

// The problem types (RFC 9457 "type") the API answers with; openapi.yaml lists them per
// status. Switch on these, never on a title or detail.
const (
	ProblemMalformedRequest     = ProblemBase + "malformed-request"
	ProblemInvalidRequest       = ProblemBase + "invalid-request"
	ProblemKeyMismatch          = ProblemBase + "idempotency-key-mismatch"
	ProblemKeyReused            = ProblemBase + "idempotency-key-reused"
	ProblemPayloadTooLarge      = ProblemBase + "payload-too-large"
	ProblemUnsupportedMediaType = ProblemBase + "unsupported-media-type"
	ProblemNotificationNotFound = ProblemBase + "notification-not-found"
	ProblemNotCancellable       = ProblemBase + "not-cancellable"
	ProblemConcurrentChange     = ProblemBase + "concurrent-change"
	ProblemQueueUnavailable     = ProblemBase + "dispatch-queue-unavailable"
	ProblemGuardUnavailable     = ProblemBase + "guard-unavailable"
	ProblemInternal             = ProblemBase + "internal-error"
	// The conversion's answers (POST .../conversion).
	ProblemNotSent             = ProblemBase + "not-sent"
	ProblemFeedbackUnavailable = ProblemBase + "feedback-unavailable"
	// The abuse guards' refusals (docs/abuse-guards.md).
	ProblemRateLimited           = ProblemBase + "rate-limited"
	ProblemPrefixRateLimited     = ProblemBase + "prefix-rate-limited"
	ProblemDestinationNotAllowed = ProblemBase + "destination-not-allowed"
	ProblemPrefixBlocked         = ProblemBase + "prefix-blocked"
)

// The sentinel errors an *APIError matches with errors.Is, one per kind of answer.
var (
	// ErrInvalidRequest is a 400: the request is malformed or has invalid fields (see
	// APIError.Problem.Errors). Repeating it cannot help.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrForbidden is a 403 from API Gateway: the request is not signed, badly signed, or its
	// principal may not invoke the route.
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound is a 404: no notification has this key.
	ErrNotFound = errors.New("notification not found")
	// ErrNotCancellable is a 409 not-cancellable: the notification has left accepted and
	// retry_scheduled; APIError.Problem.State tells where it stands.
	ErrNotCancellable = errors.New("notification not cancellable")
	// ErrNotSent is a 409 not-sent: a conversion reported for a notification that was never
	// sent; APIError.Problem.State tells where it stands (it may still be on its way).
	ErrNotSent = errors.New("notification never sent")
	// ErrPayloadTooLarge is a 413: the body is over the API's limit (8 KiB).
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrUnsupportedMediaType is a 415: the body was not sent as application/json.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
	// ErrKeyReused is a 422: the idempotency key was already used with a different request.
	// Nothing changed; a new request needs a new key.
	ErrKeyReused = errors.New("idempotency key reused with a different request")
	// ErrDestinationNotAllowed is a 422 destination-not-allowed: the number's country calling
	// code is outside the stack's allow-list. Repeating it cannot help.
	ErrDestinationNotAllowed = errors.New("destination not allowed")
	// ErrRateLimited is a 429 rate-limited, prefix-rate-limited or prefix-blocked: an abuse guard refused the
	// request and recorded the refusal under its key (state refused), so repeating the key
	// gets it again. The client does not retry it; APIError.RetryAfter says when a new request,
	// with a new key, may pass.
	ErrRateLimited = errors.New("rate limited")
	// ErrThrottled is a 429 that was still the answer when retries ran out: API Gateway's
	// throttling, which the client retries (never a guard's refusal, ErrRateLimited).
	ErrThrottled = errors.New("throttled")
	// ErrUnavailable is a 5xx that was still the answer when retries ran out.
	ErrUnavailable = errors.New("service unavailable")
)

// Problem is an RFC 9457 problem details object as the API writes it.
type Problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail,omitempty"`
	Instance string       `json:"instance,omitempty"`
	Errors   []FieldError `json:"errors,omitempty"`
	State    string       `json:"state,omitempty"`
	Reason   string       `json:"reason,omitempty"`
}

// FieldError names one invalid field and the rule it breaks, never its value.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// APIError is an answer other than success. Problem is set when the API answered with
// application/problem+json; Message when API Gateway answered itself ({"message": ...}).
type APIError struct {
	StatusCode int
	Problem    Problem
	Message    string
	// RequestID is the X-Request-Id (or API Gateway's apigw-requestid) to quote in a report.
	RequestID string
	// RetryAfter is the answer's Retry-After (seconds or an HTTP date), or 0.
	RetryAfter time.Duration
}

// Error describes the answer: status, problem slug, detail and the invalid fields. Every part
// is written by the API, which never echoes a number, a param or a body.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if slug, ok := strings.CutPrefix(e.Problem.Type, ProblemBase); ok {
		fmt.Fprintf(&b, " (%s)", slug)
	}
	switch {
	case e.Problem.Detail != "":
		b.WriteString(": " + e.Problem.Detail)
	case e.Message != "":
		b.WriteString(": " + e.Message)
	}
	for i, f := range e.Problem.Errors {
		sep := "; "
		if i == 0 {
			sep = " ["
		}
		b.WriteString(sep + f.Field + " " + f.Detail)
		if i == len(e.Problem.Errors)-1 {
			b.WriteString("]")
		}
	}
	if e.RequestID != "" {
		b.WriteString(" (request " + e.RequestID + ")")
	}
	return b.String()
}

// Is matches the sentinel error of the answer's kind.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrNotCancellable:
		return e.StatusCode == http.StatusConflict && e.Problem.Type == ProblemNotCancellable
	case ErrNotSent:
		return e.StatusCode == http.StatusConflict && e.Problem.Type == ProblemNotSent
	case ErrPayloadTooLarge:
		return e.StatusCode == http.StatusRequestEntityTooLarge
	case ErrUnsupportedMediaType:
		return e.StatusCode == http.StatusUnsupportedMediaType
	case ErrKeyReused:
		return e.StatusCode == http.StatusUnprocessableEntity && e.Problem.Type != ProblemDestinationNotAllowed
	case ErrDestinationNotAllowed:
		return e.StatusCode == http.StatusUnprocessableEntity && e.Problem.Type == ProblemDestinationNotAllowed
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests && e.guardRefusal()
	case ErrThrottled:
		return e.StatusCode == http.StatusTooManyRequests && !e.guardRefusal()
	case ErrUnavailable:
		return e.StatusCode >= 500
	}
	return false
}

// guardRefusal reports whether the answer is an abuse guard's refusal rather than API
// Gateway's throttling.
func (e *APIError) guardRefusal() bool {
	switch e.Problem.Type {
	case ProblemRateLimited, ProblemPrefixRateLimited, ProblemPrefixBlocked:
		return true
	}
	return false
}

// FieldErrors returns the invalid fields of a 400 invalid-request, or nil.
func (e *APIError) FieldErrors() []FieldError { return e.Problem.Errors }
