// Package simapi is the wire format of the SMS simulator's HTTP API (package smssim), shared by
// the simulator, its client adapter (package simclient) and whoever receives its delivery
// receipts. It holds only data types and constants.
//
// Endpoints (JSON bodies):
//
//	POST   /messages            SendRequest → 201 SendResponse; errors are Error with a Code
//	GET    /messages/{id}       → 200 Message, or 404 Error{Code: "not_found"}
//	GET    /messages?client_ref=R → 200 MessageList (empty when nothing is visible)
//	POST   /messages/{id}/feedback  Feedback → 204, or 404: the message's code was used (no
//	                            bearer token: feedback cannot send)
//	GET    /inbox[?include=body]  → 200 Inbox: every accepted message, per destination
//	GET    /requests            → 200 RequestLog: every send request and what the simulator did
//	POST   /control/faults      Fault → 204: script the modes for one destination
//	DELETE /control/faults      → 204: forget every scripted fault
//	POST   /control/lookup      LookupFault → 204: make lookups fail
//	POST   /control/reset       → 204: forget messages, requests and faults
//	POST   /control/connections Connections → 204: close or reopen the send port (409
//	                            without one)
//	GET    /healthz             → 200
//
// A simulator started with a send port (-send-addr) serves the same API on a second address,
// the one the stack sends to; closing it makes every connection to it refused, as to a
// provider that is down, while the first address keeps serving the control API.
//
// Delivery receipts are POSTed as Receipt to the configured webhook URL, with the configured
// webhook token (if any) in the WebhookTokenHeader header.
package simapi

import "time"

// WebhookTokenHeader carries the shared webhook token on every receipt the simulator posts.
// It stands in for the signature a real provider puts on its delivery reports.
const WebhookTokenHeader = "X-Webhook-Token"

// Limits of a send request.
const (
	MaxBodyBytes       = 1600
	MaxClientRefLen    = 128
	MaxValiditySeconds = 3 * 24 * 60 * 60
)

// SendRequest is the body of POST /messages.
type SendRequest struct {
	To              string `json:"to"`
	Body            string `json:"body"`
	ClientRef       string `json:"client_ref"`
	ValiditySeconds int64  `json:"validity_seconds"`
}

// Feedback is the body of POST /messages/{id}/feedback, the simulator's stand-in for End User
// Messaging SMS's PutMessageFeedback.
type Feedback struct {
	Status string `json:"status"`
}

// FeedbackReceived is the one feedback status: the message's code or link was used.
const FeedbackReceived = "RECEIVED"

// SendResponse is the body of a 201 to POST /messages.
type SendResponse struct {
	MessageID string `json:"message_id"`
}

// Error is the body of every error response. Message never contains a number or a body.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes.
const (
	// CodeInvalidRequest (400) is a malformed request: permanent.
	CodeInvalidRequest = "invalid_request"
	// CodeUnauthorized (401) is a missing or wrong bearer token: permanent.
	CodeUnauthorized = "unauthorized"
	// CodeDestinationRejected (400) is the reject fault: permanent.
	CodeDestinationRejected = "destination_rejected"
	// CodeCountryNotSupported (400) is the reject_country fault: this provider does not serve
	// the destination's country. Permanent here, but another provider may serve it.
	CodeCountryNotSupported = "country_not_supported"
	// CodeThrottled (429, with Retry-After) means not processed; try again later.
	CodeThrottled = "throttled"
	// CodeNotProcessed (503, with Retry-After) is documented as "not processed": nothing was
	// recorded, so a retry cannot duplicate.
	CodeNotProcessed = "unavailable_not_processed"
	// CodeInternal (500) may come after the message was recorded: ambiguous.
	CodeInternal = "internal_error"
	// CodeNotFound (404) is a lookup that found nothing visible.
	CodeNotFound = "not_found"
	// CodeNoSendPort (409) answers POST /control/connections on a simulator without a send
	// port.
	CodeNoSendPort = "no_send_port"
)

// Status is a message's delivery status.
type Status string

// The statuses. A message is accepted until its delivery time, then delivered or undelivered.
const (
	StatusAccepted    Status = "accepted"
	StatusDelivered   Status = "delivered"
	StatusUndelivered Status = "undelivered"
	// StatusSilent, only as a Fault's Receipt, makes the carrier never report: the messages
	// later accepted for the destination stay accepted, and no receipt or status callback is
	// ever posted for them.
	StatusSilent Status = "silent"
)

// Reasons for an undelivered message.
const (
	// ReasonValidityExpired means the validity period lapsed before the carrier could
	// deliver: the carrier dropped the message.
	ReasonValidityExpired = "validity_expired"
	// ReasonCarrierFailed is a scripted undelivered receipt.
	ReasonCarrierFailed = "carrier_failed"
)

// Message is the lookup view of one accepted message. It holds neither the number nor the
// body.
type Message struct {
	MessageID       string    `json:"message_id"`
	ClientRef       string    `json:"client_ref"`
	Status          Status    `json:"status"`
	Reason          string    `json:"reason,omitempty"`
	AcceptedAt      time.Time `json:"accepted_at"`
	ValiditySeconds int64     `json:"validity_seconds"`
	// FinalAt is when the final status was reached; absent while accepted.
	FinalAt *time.Time `json:"final_at,omitempty"`
	// Feedback is the last feedback status reported for the message (FeedbackReceived).
	Feedback string `json:"feedback,omitempty"`
}

// MessageList is the body of GET /messages?client_ref=.
type MessageList struct {
	Messages []Message `json:"messages"`
}

// Receipt is the body POSTed to the webhook when a message reaches its final status.
type Receipt struct {
	MessageID string    `json:"message_id"`
	ClientRef string    `json:"client_ref"`
	Status    Status    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
	// Provider is the provider the simulator stands in for: DefaultProvider, or "simulator2"
	// in its second-provider mode. Empty (from an older simulator) means DefaultProvider.
	Provider string `json:"provider,omitempty"`
}

// DefaultProvider is the provider name of a simulator not in its second-provider mode.
const DefaultProvider = "simulator"

// Fault is the body of POST /control/faults. Modes are consumed one per send request to To,
// and the last one stays in force; Mode is shorthand for a single mode. Receipt, when set,
// is the final status of every message later accepted for To ("delivered" or
// "undelivered"), or "silent": none is ever reported.
type Fault struct {
	To      string   `json:"to"`
	Mode    string   `json:"mode,omitempty"`
	Modes   []string `json:"modes,omitempty"`
	Receipt Status   `json:"receipt,omitempty"`
}

// Connections is the body of POST /control/connections. Refuse true closes the send port's
// listener and its connections, so that every connect is refused; false opens it again on
// the same address.
type Connections struct {
	Refuse bool `json:"refuse"`
}

// LookupFault is the body of POST /control/lookup. Mode is "normal", "unavailable" (503),
// "error" (500) or "timeout" (hang, then drop the connection).
type LookupFault struct {
	Mode string `json:"mode"`
}

// Inbox is the body of GET /inbox, keyed by destination number.
type Inbox struct {
	Destinations map[string]InboxDestination `json:"destinations"`
}

// InboxDestination is what the simulator accepted for one destination.
type InboxDestination struct {
	// Count is the number of accepted messages. The simulator never deduplicates, so more
	// than one per notification is a double send.
	Count    int            `json:"count"`
	Messages []InboxMessage `json:"messages"`
}

// InboxMessage is one accepted message.
type InboxMessage struct {
	MessageID       string    `json:"message_id"`
	ClientRef       string    `json:"client_ref"`
	Mode            string    `json:"mode"`
	AcceptedAt      time.Time `json:"accepted_at"`
	ValiditySeconds int64     `json:"validity_seconds"`
	ValidUntil      time.Time `json:"valid_until"`
	DeliverAt       time.Time `json:"deliver_at"`
	// Lapsed means the validity period ran out before DeliverAt: the carrier dropped it.
	Lapsed  bool   `json:"lapsed"`
	Receipt Status `json:"receipt"`
	// Body is present only with ?include=body.
	Body string `json:"body,omitempty"`
}

// RequestLog is the body of GET /requests.
type RequestLog struct {
	Requests []RequestEntry `json:"requests"`
}

// RequestEntry is one send request and what the simulator did with it.
type RequestEntry struct {
	Seq       int       `json:"seq"`
	At        time.Time `json:"at"`
	To        string    `json:"to"`
	ClientRef string    `json:"client_ref"`
	Mode      string    `json:"mode"`
	// Recorded means the message was accepted into the inbox (whatever the client saw).
	Recorded  bool   `json:"recorded"`
	MessageID string `json:"message_id,omitempty"`
	// HTTPStatus is the status answered, or 0 when the simulator hung or dropped the
	// connection instead.
	HTTPStatus int `json:"http_status"`
	// Note explains an unusual end, e.g. "client_gone" for a latency request whose client
	// stopped waiting before it was accepted.
	Note string `json:"note,omitempty"`
}
