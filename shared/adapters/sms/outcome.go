package sms

import (
	"fmt"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Class is one row group of docs/design.md's provider-outcome table.
type Class string

// The four classes of a send's outcome. The zero Class is not one of them; Outcome treats it
// as ClassUnknown.
const (
	ClassAccepted    Class = "accepted"
	ClassNotAccepted Class = "not_accepted"
	ClassRejected    Class = "rejected"
	ClassUnknown     Class = "unknown"
)

// Detail says why an outcome has its class.
type Detail string

// Details of ClassNotAccepted.
const (
	// DetailThrottled is a 429 or the provider's own throttling or quota error.
	DetailThrottled Detail = "throttled"
	// DetailUnavailable is a response the provider documents as "not processed" (a 503).
	DetailUnavailable Detail = "unavailable"
	// DetailNotWritten is a failure before the request was written: dial refused, DNS, TLS
	// handshake, or a validity period too short to send at all.
	DetailNotWritten Detail = "not_written"
)

// Details of ClassRejected.
const (
	// DetailPermanent is a 4xx the provider will answer the same way again.
	DetailPermanent Detail = "permanent"
	// DetailRestricted is a refusal that comes from this provider's own restrictions (the
	// destination country is not enabled or not supported for the account, the sender
	// identity cannot be used there), not from the destination itself: another provider of
	// the chain may not share it, so the attempt may fail over. Adapters use it only for the
	// codes their provider documents as such (see Restricted); our own policy (a country the
	// deployment blocks) is never one of them.
	DetailRestricted Detail = "restricted"
)

// Details of ClassUnknown.
const (
	// DetailTimeout is a timeout (or a cancelled wait) after the request was written.
	DetailTimeout Detail = "timeout"
	// DetailConnectionLost is a reset or EOF after the request was written.
	DetailConnectionLost Detail = "connection_lost"
	// DetailAmbiguous is a 500, 502 or 504, an unexpected status, or a response that could not
	// be read or parsed.
	DetailAmbiguous Detail = "ambiguous"
)

// Outcome is the classified result of one Send.
type Outcome struct {
	Class  Class
	Detail Detail
	// MessageID is the provider's ID for an accepted message.
	MessageID string
	// RetryAfter is how long the provider asked us to wait, when it said so (NotAccepted only).
	RetryAfter time.Duration
	// Code is the provider's error code, when it gave one (e.g. "ThrottlingException",
	// "syntax_invalid_parameter_format"). It is safe to log and audit.
	Code string
	// HTTPStatus is the response's status code, or 0 when no response was read.
	HTTPStatus int
	// Err is a diagnostic for anything but an acceptance. It never contains the destination
	// number or the body.
	Err error
}

// Accepted returns the outcome of a send the provider accepted as messageID.
func Accepted(messageID string) Outcome {
	return Outcome{Class: ClassAccepted, MessageID: messageID}
}

// NotAccepted returns the outcome of a send the provider certainly did not accept.
func NotAccepted(d Detail, retryAfter time.Duration, err error) Outcome {
	return Outcome{Class: ClassNotAccepted, Detail: d, RetryAfter: max(retryAfter, 0), Err: err}
}

// Rejected returns the outcome of a send the provider refused for good, with its code.
func Rejected(code string, err error) Outcome {
	return Outcome{Class: ClassRejected, Detail: DetailPermanent, Code: code, Err: err}
}

// Restricted returns the outcome of a send this provider refused for a restriction of its
// own (DetailRestricted), with its code.
func Restricted(code string, err error) Outcome {
	return Outcome{Class: ClassRejected, Detail: DetailRestricted, Code: code, Err: err}
}

// Unknown returns the outcome of a send the provider may or may not have accepted.
func Unknown(d Detail, err error) Outcome {
	return Outcome{Class: ClassUnknown, Detail: d, Err: err}
}

// Normalized returns o with an unrecognised class or detail made safe: anything that is not
// one of the four classes becomes Unknown/ambiguous, an Accepted outcome without a message ID
// becomes Unknown/ambiguous (we cannot prove acceptance), and a NotAccepted or Unknown detail
// outside its class's list becomes the most cautious detail of that class.
func (o Outcome) Normalized() Outcome {
	switch o.Class {
	case ClassAccepted:
		if o.MessageID == "" {
			o.Class, o.Detail = ClassUnknown, DetailAmbiguous
		} else {
			o.Detail = ""
		}
	case ClassNotAccepted:
		switch o.Detail {
		case DetailThrottled, DetailUnavailable, DetailNotWritten:
		default:
			o.Detail = DetailUnavailable
		}
	case ClassRejected:
		if o.Detail != DetailRestricted {
			o.Detail = DetailPermanent
		}
	case ClassUnknown:
		switch o.Detail {
		case DetailTimeout, DetailConnectionLost, DetailAmbiguous:
		default:
			o.Detail = DetailAmbiguous
		}
	default:
		o.Class, o.Detail = ClassUnknown, DetailAmbiguous
	}
	return o
}

// Reason returns the reason code the dispatch worker records for o: the one place where
// provider outcomes meet the transition table.
func (o Outcome) Reason() notify.Reason {
	o = o.Normalized()
	switch o.Class {
	case ClassAccepted:
		return notify.ReasonProviderAccepted
	case ClassNotAccepted:
		if o.Detail == DetailThrottled {
			return notify.ReasonProviderThrottled
		}
		return notify.ReasonProviderUnavailable
	case ClassRejected:
		return notify.ReasonProviderRejected
	}
	switch o.Detail {
	case DetailTimeout:
		return notify.ReasonProviderTimeout
	case DetailConnectionLost:
		return notify.ReasonConnectionLost
	}
	return notify.ReasonProviderAmbiguous
}

// FailoverAllowed reports whether o proves the provider did not send, in a way that allows
// the next attempt to go to another provider: not accepted (not written, throttled, or a
// documented "not processed"), or rejected for a restriction of this provider's own
// (DetailRestricted). Accepted, permanently rejected and unknown outcomes never allow it; an
// unknown outcome may lead to another provider only after reconciliation found nothing at the
// provider that had it.
func (o Outcome) FailoverAllowed() bool {
	o = o.Normalized()
	switch o.Class {
	case ClassNotAccepted:
		return true
	case ClassRejected:
		return o.Detail == DetailRestricted
	}
	return false
}

// State returns the state a dispatching record moves to after o. A NotAccepted outcome
// moves to retry_scheduled; the worker records failed / ATTEMPTS_EXHAUSTED or expired instead
// when no attempt or time is left.
func (o Outcome) State() notify.State {
	switch o.Normalized().Class {
	case ClassAccepted:
		return notify.StateSent
	case ClassNotAccepted:
		return notify.StateRetryScheduled
	case ClassRejected:
		return notify.StateFailed
	}
	return notify.StateDispatchUnknown
}

// String describes o without its error, e.g. "not_accepted/throttled retry_after=2s".
func (o Outcome) String() string {
	var b strings.Builder
	b.WriteString(string(o.Class))
	if o.Detail != "" {
		b.WriteString("/" + string(o.Detail))
	}
	if o.MessageID != "" {
		b.WriteString(" message_id=" + o.MessageID)
	}
	if o.HTTPStatus != 0 {
		fmt.Fprintf(&b, " status=%d", o.HTTPStatus)
	}
	if o.Code != "" {
		b.WriteString(" code=" + o.Code)
	}
	if o.RetryAfter > 0 {
		b.WriteString(" retry_after=" + o.RetryAfter.String())
	}
	return b.String()
}

// ProviderError is a provider's answer reduced to what is safe to log and audit: who answered,
// to which operation, with which status, code and request ID. It deliberately has no field
// for the provider's free-text message, which may echo the destination number.
type ProviderError struct {
	Provider   string
	Op         string
	StatusCode int
	Code       string
	RequestID  string
}

// Error describes e.
func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.%s: provider answered", e.Provider, e.Op)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " status %d", e.StatusCode)
	}
	if e.Code != "" {
		b.WriteString(" code " + e.Code)
	}
	if e.RequestID != "" {
		b.WriteString(" request " + e.RequestID)
	}
	return b.String()
}
