package sms

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"
)

// WriteTracker records whether an HTTP client wrote a request to a connection. It is how an
// adapter tells "failed before the request was written" (safe to retry) from "failed after"
// (unknown).
type WriteTracker struct {
	wrote atomic.Bool
}

// TraceWrites returns a context that makes net/http report request writes to the returned
// tracker. Any client built on net/http honours it, including the AWS SDK's.
func TraceWrites(ctx context.Context) (context.Context, *WriteTracker) {
	t := &WriteTracker{}
	trace := &httptrace.ClientTrace{
		// WroteRequest is also called when writing failed part-way. Some bytes may then have
		// left, so a failed write counts as written: the cautious side is "unknown".
		WroteRequest: func(httptrace.WroteRequestInfo) { t.wrote.Store(true) },
	}
	return httptrace.WithClientTrace(ctx, trace), t
}

// Wrote reports whether a request was (possibly) written. A nil tracker reports true: without
// evidence, assume the worst.
func (t *WriteTracker) Wrote() bool { return t == nil || t.wrote.Load() }

// TransportOutcome classifies err, an HTTP round trip's failure that produced no response.
//
// With a tracker, a request that was never written is NotAccepted/not_written whatever the
// error (dial refused, DNS, TLS handshake, a deadline that ran out while connecting). A
// request that was written is Unknown: timeout when the error is a timeout or a cancelled
// wait, connection_lost otherwise (reset, EOF). With a nil tracker the error's type alone
// decides: FailedBeforeWrite errors are NotAccepted, everything else is Unknown.
//
// Go's transport never silently re-sends a POST that reached the wire: it retries only
// requests that wrote nothing, or that are idempotent or carry an Idempotency-Key header. The
// adapters therefore never set Idempotency-Key on a send.
func TransportOutcome(err error, t *WriteTracker) Outcome {
	if t != nil && !t.Wrote() || t == nil && FailedBeforeWrite(err) {
		return NotAccepted(DetailNotWritten, 0, err)
	}
	if IsTimeout(err) {
		return Unknown(DetailTimeout, err)
	}
	return Unknown(DetailConnectionLost, err)
}

// FailedBeforeWrite reports whether err by its type alone proves that no request byte left:
// a failed dial (refused, unreachable, DNS) or a failed TLS handshake.
func FailedBeforeWrite(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect") {
		return true
	}
	var (
		dns      *net.DNSError
		header   tls.RecordHeaderError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &dns) || errors.As(err, &header) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// IsTimeout reports whether err is a timeout or a cancelled wait: a context deadline or
// cancellation, or a net.Error that says Timeout.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// RetryAfter returns the wait a Retry-After header asks for (delay-seconds or an HTTP date,
// RFC 9110 §10.2.3) relative to now, or 0 when it is absent, malformed or in the past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 || s > int64(24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
