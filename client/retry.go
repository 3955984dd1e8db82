package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// decodeFunc turns a final answer into the call's result; it returns retry=true for an answer
// that a repeat may improve on (such as a success whose body did not arrive whole).
type decodeFunc func(*response) (retry bool, err error)

// do runs req until an answer that decode accepts or refuses for good, retrying as the package
// documentation says, and returns the number of tries.
func (c *Client) do(ctx context.Context, req request, decode decodeFunc) (int, error) {
	var last error
	for n := 1; ; n++ {
		resp, err := c.try(ctx, req)
		var retryAfter time.Duration
		switch {
		case errors.As(err, new(permanentError)):
			return n, fmt.Errorf("%s: %w", req.op, err)
		case err != nil && ctx.Err() != nil:
			return n, c.stopped(req.op, n, ctx.Err(), fmt.Errorf("try %d: %w", n, err))
		case err != nil:
			last = fmt.Errorf("try %d: %w", n, err)
		case retryableStatus(resp.status):
			ae := apiError(resp)
			if errors.Is(ae, ErrRateLimited) {
				// A guard's refusal is recorded under the key: final.
				return n, fmt.Errorf("%s: %w", req.op, ae)
			}
			retryAfter = ae.RetryAfter
			last = fmt.Errorf("try %d: %w", n, ae)
		default:
			retry, err := decode(resp)
			if !retry {
				if err != nil {
					return n, fmt.Errorf("%s: %w", req.op, err)
				}
				return n, nil
			}
			last = fmt.Errorf("try %d: %w", n, err)
		}
		if n >= c.opts.MaxAttempts {
			return n, fmt.Errorf("%s: gave up after %d tries: %w", req.op, n, last)
		}
		delay := max(c.jitter(c.backoffCap(n)), retryAfter)
		if !c.fits(ctx, req, delay) {
			return n, noTimeLeft(req.op, n, last)
		}
		if err := c.sleep(ctx, delay); err != nil {
			return n, c.stopped(req.op, n, err, last)
		}
		// A timer may fire late: check again that the next try may still start.
		if !c.fits(ctx, req, 0) {
			return n, noTimeLeft(req.op, n, last)
		}
	}
}

// noTimeLeft is the error of a call that stopped because no further try could start in time.
func noTimeLeft(op string, n int, last error) error {
	return fmt.Errorf("%s: gave up after %d tries, no time left for another: %w", op, n, last)
}

// stopped is the error of a call whose context ended, wrapping both the context's error and
// the last failure.
func (c *Client) stopped(op string, n int, ctxErr, last error) error {
	if last == nil {
		return fmt.Errorf("%s: stopped after %d tries: %w", op, n, ctxErr)
	}
	return fmt.Errorf("%s: stopped after %d tries: %w (last: %w)", op, n, ctxErr, last)
}

// fits reports whether a try could start after delay, before the context's deadline and the
// request's notAfter. A try needs some time to be of use: a tenth of the try timeout, at most
// 100 ms, besides the most tryContext keeps back (maxReserve). Counting all of maxReserve, not
// the tenth of what is left, means a try that tryContext cut short is the last one: the call
// returns with up to maxReserve to spare, not with a tenth of the few milliseconds left after
// one more short try (a loaded machine's scheduling delay overran that).
func (c *Client) fits(ctx context.Context, req request, delay time.Duration) bool {
	start := time.Now().Add(delay)
	need := min(c.opts.TryTimeout/10, 100*time.Millisecond)
	if dl, ok := ctx.Deadline(); ok && !start.Add(need+maxReserve).Before(dl) {
		return false
	}
	return req.notAfter.IsZero() || c.now().Add(delay).Before(req.notAfter)
}

// backoffCap is the upper bound of the backoff after try n: BaseDelay doubled per try, at most
// MaxDelay.
func (c *Client) backoffCap(n int) time.Duration {
	d := c.opts.BaseDelay
	for i := 1; i < n && d < c.opts.MaxDelay; i++ {
		d *= 2
	}
	return min(d, c.opts.MaxDelay)
}

// fullJitter returns a random duration in [0, d).
func fullJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// retryableStatus reports whether an answer may change if the same request is repeated:
// throttling and every server error.
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// parseRetryAfter reads a Retry-After value in seconds or as an HTTP date (RFC 9110), or 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apiError builds the *APIError of a non-success answer from its problem or gateway body.
func apiError(resp *response) *APIError {
	e := &APIError{StatusCode: resp.status, RequestID: resp.header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.header.Get("Retry-After"), time.Now())}
	if e.RequestID == "" {
		e.RequestID = resp.header.Get("Apigw-Requestid")
	}
	mt, _, _ := mime.ParseMediaType(resp.header.Get("Content-Type"))
	switch mt {
	case "application/problem+json":
		_ = json.Unmarshal(resp.body, &e.Problem)
	case "application/json":
		var gw struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(resp.body, &gw) == nil {
			e.Message = gw.Message
		}
	}
	return e
}
