package sms

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// HTTPResponse is a response whose body was read (up to a limit) and closed.
type HTTPResponse struct {
	StatusCode int
	Header     http.Header
	Body       []byte
	// BodyErr is set when the body could not be read whole (connection lost mid-body, or
	// longer than the limit). The status is still known.
	BodyErr error
}

// Exchange sends req with c, tracking whether the request was written (TraceWrites), and
// reads at most limit bytes of the response body. When no response arrives it returns
// ok == false and the failure classified by TransportOutcome.
func Exchange(c *http.Client, req *http.Request, limit int64) (resp HTTPResponse, failure Outcome, ok bool) {
	ctx, tracker := TraceWrites(req.Context())
	hr, err := c.Do(req.WithContext(ctx))
	if err != nil {
		return HTTPResponse{}, TransportOutcome(err, tracker), false
	}
	defer hr.Body.Close()
	resp = HTTPResponse{StatusCode: hr.StatusCode, Header: hr.Header}
	resp.Body, err = io.ReadAll(io.LimitReader(hr.Body, limit+1))
	switch {
	case err != nil:
		resp.BodyErr = fmt.Errorf("reading the response body: %w", err)
	case int64(len(resp.Body)) > limit:
		resp.Body = resp.Body[:limit]
		resp.BodyErr = errors.New("response body over the limit")
	}
	return resp, Outcome{}, true
}

// SendAnswer describes how to read an HTTP provider's answer to a send.
type SendAnswer struct {
	// Provider and Op name the call in errors, e.g. "sinch", "send <attempt_ref>".
	Provider, Op string
	// Code is the provider's error code from the body, if any.
	Code string
	// MessageID parses a 2xx body into the provider's message ID; false means unreadable.
	MessageID func(body []byte) (string, bool)
	// NotProcessed503 is true when the provider documents 503 as "not processed" (nothing was
	// recorded): a 503 is then not accepted rather than unknown.
	NotProcessed503 bool
}

// ClassifySend turns an HTTP provider's answer to a send into an outcome, as docs/design.md's
// provider-outcome table says: 200/201 with a readable message ID is accepted (an unreadable
// body is unknown); 429, and 503 where documented as not processed, are not accepted, with
// Retry-After; any other 4xx but 408 is rejected; 500, 502, 504 and anything else prove
// nothing and are unknown.
func ClassifySend(resp HTTPResponse, a SendAnswer, now time.Time) Outcome {
	perr := &ProviderError{Provider: a.Provider, Op: a.Op, StatusCode: resp.StatusCode, Code: a.Code}
	var out Outcome
	switch s := resp.StatusCode; {
	case s == http.StatusCreated || s == http.StatusOK:
		if resp.BodyErr != nil {
			out = Unknown(DetailAmbiguous, fmt.Errorf("%w: %w", perr, resp.BodyErr))
		} else if id, ok := a.MessageID(resp.Body); !ok || id == "" {
			out = Unknown(DetailAmbiguous, fmt.Errorf("%w: unreadable acceptance", perr))
		} else {
			out = Accepted(id)
		}
	case s == http.StatusTooManyRequests:
		out = NotAccepted(DetailThrottled, RetryAfter(resp.Header, now), perr)
	case s == http.StatusServiceUnavailable && a.NotProcessed503:
		out = NotAccepted(DetailUnavailable, RetryAfter(resp.Header, now), perr)
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout:
		out = Rejected(a.Code, perr)
	default:
		out = Unknown(DetailAmbiguous, perr)
	}
	out.HTTPStatus = resp.StatusCode
	if out.Class != ClassAccepted {
		out.Code = a.Code
	}
	return out
}
