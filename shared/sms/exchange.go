package sms

import (
	"errors"
	"fmt"
	"io"
	"net/http"
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
