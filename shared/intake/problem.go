package intake

import (
	"encoding/json"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// ProblemBase prefixes every problem type URI.
const ProblemBase = "https://resetnotify.dev/problems/"

// ProblemType is the stable slug of a problem, appended to ProblemBase to form the RFC 9457
// "type" URI. Clients may switch on it; never rename one.
type ProblemType string

// The problem types the API answers with, and their HTTP statuses.
const (
	// ProblemMalformedRequest (400): the body is not exactly one JSON object, or is base64
	// that does not decode.
	ProblemMalformedRequest ProblemType = "malformed-request"
	// ProblemInvalidRequest (400): one or more fields fail validation; "errors" lists them as
	// {field, detail}. Also used for an invalid key in the path (field "key").
	ProblemInvalidRequest ProblemType = "invalid-request"
	// ProblemKeyMismatch (400): the Idempotency-Key header and the idempotency_key field differ.
	ProblemKeyMismatch ProblemType = "idempotency-key-mismatch"
	// ProblemKeyReused (422): the key was already used with a different request fingerprint
	// (IETF Idempotency-Key draft). Nothing changed.
	ProblemKeyReused ProblemType = "idempotency-key-reused"
	// ProblemPayloadTooLarge (413): the decoded body is over MaxBodyBytes.
	ProblemPayloadTooLarge ProblemType = "payload-too-large"
	// ProblemUnsupportedMediaType (415): Content-Type is missing or not application/json
	// (a charset parameter, if any, must be utf-8).
	ProblemUnsupportedMediaType ProblemType = "unsupported-media-type"
	// ProblemNotificationNotFound (404): no notification has this key (or it has been purged).
	ProblemNotificationNotFound ProblemType = "notification-not-found"
	// ProblemNotCancellable (409): the notification has left accepted and retry_scheduled;
	// "state" and "reason" tell where it stands.
	ProblemNotCancellable ProblemType = "not-cancellable"
	// ProblemConcurrentChange (409): the notification kept changing while the cancellation
	// was tried; repeating the request is safe.
	ProblemConcurrentChange ProblemType = "concurrent-change"
	// ProblemRouteNotFound (404): the event's route key is none of ours.
	ProblemRouteNotFound ProblemType = "route-not-found"
	// ProblemQueueUnavailable (503): the notification was stored but could not be handed to
	// the dispatch queue; repeat the same request after Retry-After seconds and it is queued
	// again.
	ProblemQueueUnavailable ProblemType = "dispatch-queue-unavailable"
	// ProblemGuardUnavailable (503): the notification was stored but the abuse guard could
	// not count it, so it is not sent; repeat the same request after Retry-After seconds and
	// it is counted (and refused over the limits, or sent).
	ProblemGuardUnavailable ProblemType = "guard-unavailable"
	// ProblemRateLimited (429): the destination reached its admissions per hour or per day.
	// The refusal is stored under the key (state refused): a repeat gets it again; a new
	// request with a new key may pass after Retry-After seconds.
	ProblemRateLimited ProblemType = "rate-limited"
	// ProblemPrefixRateLimited (429): the number's prefix admitted too many distinct
	// destinations this minute (suspected SMS pumping). Stored under the key as
	// ProblemRateLimited is.
	ProblemPrefixRateLimited ProblemType = "prefix-rate-limited"
	// ProblemDestinationNotAllowed (422): the number cannot be sent to; its "reason" says why
	// (DestinationCountry, DestinationNumberType or DestinationInvalidNumber), never naming the
	// number. Nothing was stored or counted; repeating the request will not help.
	ProblemDestinationNotAllowed ProblemType = "destination-not-allowed"
	// ProblemNotSent (409): a conversion was reported for a notification that was never sent;
	// "state" and "reason" tell where it stands.
	ProblemNotSent ProblemType = "not-sent"
	// ProblemFeedbackUnavailable (503): the conversion is recorded but the provider could not
	// be told; repeat the same request after Retry-After seconds.
	ProblemFeedbackUnavailable ProblemType = "feedback-unavailable"
	// ProblemPrefixBlocked (429): the number's prefix is blocked because its messages are not
	// used (suspected SMS pumping); repeat after Retry-After seconds.
	ProblemPrefixBlocked ProblemType = "prefix-blocked"
	// ProblemInternal (500): anything else. The detail never carries the cause.
	ProblemInternal ProblemType = "internal-error"
)

// The reasons of a destination-not-allowed problem (its "reason" member).
const (
	// DestinationCountry: the number's country is not on the allow-list (ALLOWED_COUNTRIES).
	DestinationCountry notify.Reason = "country"
	// DestinationNumberType: the number's type (premium rate, toll free, shared cost,
	// personal, pager, UAN, voicemail, ...) is not allowed (ALLOWED_NUMBER_TYPES).
	DestinationNumberType notify.Reason = "number-type"
	// DestinationInvalidNumber: the number is in no country, or not valid in its own.
	DestinationInvalidNumber notify.Reason = "invalid-number"
)

// destinationRefusals are the reason and detail of each refusal of a destination.
var destinationRefusals = map[notify.RefusalReason]struct {
	reason notify.Reason
	detail string
}{
	notify.RefusedCountry:       {DestinationCountry, "Notifications to this number's country are not allowed."},
	notify.RefusedNumberType:    {DestinationNumberType, "This number's type cannot receive these messages (only mobile numbers are allowed by default)."},
	notify.RefusedInvalidNumber: {DestinationInvalidNumber, "This is not a valid phone number of any country."},
}

// URI returns the problem's type URI.
func (t ProblemType) URI() string { return ProblemBase + string(t) }

// problemTitles are the short, fixed summaries of each type (RFC 9457 "title").
var problemTitles = map[ProblemType]string{
	ProblemMalformedRequest:      "Malformed request body",
	ProblemInvalidRequest:        "Invalid request",
	ProblemKeyMismatch:           "Idempotency keys disagree",
	ProblemKeyReused:             "Idempotency key reused with a different request",
	ProblemPayloadTooLarge:       "Request body too large",
	ProblemUnsupportedMediaType:  "Unsupported media type",
	ProblemNotificationNotFound:  "Notification not found",
	ProblemNotCancellable:        "Notification can no longer be cancelled",
	ProblemConcurrentChange:      "Notification changed concurrently",
	ProblemRouteNotFound:         "Not found",
	ProblemQueueUnavailable:      "Dispatch queue unavailable",
	ProblemGuardUnavailable:      "Abuse check unavailable",
	ProblemRateLimited:           "Too many notifications for this destination",
	ProblemPrefixRateLimited:     "Too many new destinations in this number range",
	ProblemDestinationNotAllowed: "Destination not allowed",
	ProblemNotSent:               "Notification was never sent",
	ProblemFeedbackUnavailable:   "Provider feedback unavailable",
	ProblemPrefixBlocked:         "Number range blocked",
	ProblemInternal:              "Internal error",
}

// Problem is an RFC 9457 problem details object with the API's extension members. Every
// string in it is written by the API: none is copied from the request, except a validated
// idempotency key.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Errors lists the invalid fields of an invalid-request problem.
	Errors []notify.FieldError `json:"errors,omitempty"`
	// State and Reason tell where a not-cancellable (or not-sent) notification stands; for a
	// destination-not-allowed, Reason alone says why (DestinationCountry, ...).
	State  notify.State  `json:"state,omitempty"`
	Reason notify.Reason `json:"reason,omitempty"`
}

// newProblem returns the problem of type t with status and detail.
func newProblem(t ProblemType, status int, detail string) *Problem {
	return &Problem{Type: t.URI(), Title: problemTitles[t], Status: status, Detail: detail}
}

func (p *Problem) slug() ProblemType {
	return ProblemType(p.Type[len(ProblemBase):])
}

func (p *Problem) marshal() string {
	b, err := json.Marshal(p)
	if err != nil {
		// Only strings, ints and FieldErrors: this cannot fail.
		return `{"type":"` + ProblemInternal.URI() + `","title":"Internal error","status":500}`
	}
	return string(b)
}
