package sms

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Sender hands one message to a provider. It never retries on its own: each call is one
// attempt, and its Outcome is always classified (never a bare error), because what the
// worker may do next depends on which of the four classes it is.
type Sender interface {
	Send(ctx context.Context, req SendRequest) Outcome
}

// Lookup reads the provider's view of an earlier attempt. It never sends.
//
// A non-nil error always comes with a result whose Status is LookupInconclusive, so a caller
// may switch on the status alone and use the error only for diagnostics.
type Lookup interface {
	Lookup(ctx context.Context, req LookupRequest) (LookupResult, error)
}

// SendRequest is one attempt to send one message. To and Body are secrets: String, GoString
// and LogValue redact them, so printing or logging a request never leaks them.
type SendRequest struct {
	// To is the destination in E.164 form.
	To string
	// Body is the rendered message text.
	Body string
	// AttemptRef is the client reference of this attempt, <notification_id>-a<N>; see
	// AttemptRef. Adapters send it wherever the provider accepts a client reference.
	AttemptRef string
	// ValidityPeriod is how long the carrier may keep trying to deliver. It must not exceed the
	// time left before the dispatch deadline. Adapters round it down to the provider's unit,
	// clamp it to the provider's maximum, and refuse to send when it rounds to less than the
	// provider's minimum (see WholeSeconds).
	ValidityPeriod time.Duration
}

// String returns a redacted description of r.
func (r SendRequest) String() string {
	return fmt.Sprintf("SendRequest{To:<redacted> Body:<redacted %d bytes> AttemptRef:%s ValidityPeriod:%s}",
		len(r.Body), r.AttemptRef, r.ValidityPeriod)
}

// GoString returns the same redacted description as String, for %#v.
func (r SendRequest) GoString() string { return r.String() }

// LogValue implements slog.LogValuer with the secrets left out.
func (r SendRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("attempt_ref", r.AttemptRef),
		slog.Duration("validity", r.ValidityPeriod),
		slog.Int("body_bytes", len(r.Body)),
	)
}

// LookupRequest names an earlier attempt.
type LookupRequest struct {
	// AttemptRef is the attempt's client reference.
	AttemptRef string
	// MessageID is the provider's message ID, when a response carried one; adapters that can
	// look up by ID prefer it.
	MessageID string
	// AttemptedAt is a time no earlier than the provider could still have accepted the
	// attempt: when the dispatch worker stopped waiting for the provider (the time of the
	// dispatching → dispatch_unknown transition), or, for a worker that died, when its lease
	// ran out. "Not found" counts only once the provider's visibility window has passed since
	// then. Passing the time the lease was taken instead is only safe when the visibility
	// window also covers the whole lease. A zero AttemptedAt makes every "not found"
	// inconclusive.
	AttemptedAt time.Time
}

// AttemptRef returns the client reference of attempt n of a notification:
// <notification_id>-a<n>.
func AttemptRef(notificationID string, n int) string {
	return notificationID + "-a" + strconv.Itoa(n)
}

// ParseAttemptRef splits a client reference made by AttemptRef. It reports false for anything
// else.
func ParseAttemptRef(ref string) (notificationID string, n int, ok bool) {
	i := strings.LastIndex(ref, "-a")
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(ref[i+2:])
	if err != nil || n < 1 || strconv.Itoa(n) != ref[i+2:] {
		return "", 0, false
	}
	return ref[:i], n, true
}

// LookupOnly is a Lookup that cannot send: its only method is Lookup, and the value it wraps
// is unexported, so neither a method call nor a type assertion reaches a Send method. Give it
// to the reconcile worker.
type LookupOnly struct {
	l Lookup
}

// OnlyLookup wraps l in a LookupOnly.
func OnlyLookup(l Lookup) LookupOnly { return LookupOnly{l: l} }

// Lookup calls the wrapped Lookup. A zero LookupOnly reports an inconclusive result.
func (o LookupOnly) Lookup(ctx context.Context, req LookupRequest) (LookupResult, error) {
	if o.l == nil {
		return Inconclusive("no_lookup"), fmt.Errorf("sms.lookup %s: no lookup configured", req.AttemptRef)
	}
	return o.l.Lookup(ctx, req)
}
