// Package simclient is the sms.Sender and sms.Lookup adapter for the project's SMS simulator
// (package smssim, wire format simapi).
//
// Send posts {to, body, client_ref, validity_seconds} to /messages with the attempt reference
// as client_ref and the validity period rounded down to whole seconds. It classifies the
// answer as docs/design.md's table says, with the simulator's documented semantics: 201 accepted;
// 429 and 503 are "not processed" (not accepted, honouring Retry-After); other 4xx (except
// 408) are permanent rejections; 500, 502, 504, any other status, an unreadable or
// unparseable 2xx body, a timeout or a lost connection after the request was written are
// unknown; a failure before the request was written is not accepted.
//
// Lookup reads /messages/{id} when the message ID is known, else
// /messages?client_ref=<attempt_ref>. The simulator hides messages younger than its
// visibility window exactly as if they did not exist, so "nothing found" becomes NotFound only
// once Config.Visibility has passed since the attempt (sms.Absent); before that, and on any
// error, the result is inconclusive.
package simclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Provider is the name recorded for messages sent through the simulator.
const Provider = "simulator"

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

const maxResponse = 64 << 10

// Config configures a Client.
type Config struct {
	// BaseURL is the simulator's base URL, e.g. http://127.0.0.1:8025.
	BaseURL string
	// Token is the bearer token, when the simulator requires one.
	Token string
	// Timeout bounds each call (default DefaultTimeout). A send still running then is unknown.
	Timeout time.Duration
	// Visibility is the simulator's visibility window: "not found" counts only after it.
	Visibility time.Duration
	// HTTPClient sends the requests (default: a client of its own).
	HTTPClient *http.Client
	// Clock tells the time (default: the system clock).
	Clock notify.Clock
	// Name is the provider name the client answers as (default Provider); "simulator2" for
	// the simulator in its second-provider mode.
	Name string
}

// Client talks to the simulator. It implements sms.Sender and sms.Lookup.
type Client struct {
	name       string
	base       *url.URL
	token      string
	timeout    time.Duration
	visibility time.Duration
	hc         *http.Client
	clock      notify.Clock
}

var (
	_ sms.Sender = (*Client)(nil)
	_ sms.Lookup = (*Client)(nil)
)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("simclient.new: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.Visibility < 0 {
		return nil, fmt.Errorf("simclient.new: visibility %s is negative", cfg.Visibility)
	}
	c := &Client{name: cfg.Name, base: u, token: cfg.Token, timeout: cfg.Timeout, visibility: cfg.Visibility, hc: cfg.HTTPClient, clock: cfg.Clock}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.name == "" {
		c.name = Provider
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.clock == nil {
		c.clock = notify.SystemClock{}
	}
	return c, nil
}

// Visibility returns the window after an attempt before "not found" counts.
func (c *Client) Visibility() time.Duration { return c.visibility }

func (c *Client) newRequest(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Request, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// Send makes one attempt to send req, with the skeleton every HTTP provider shares
// (sms.HTTPSender).
func (c *Client) Send(ctx context.Context, req sms.SendRequest) sms.Outcome {
	return sms.HTTPSender{
		Op: "simclient.send", MaxValiditySeconds: simapi.MaxValiditySeconds,
		Client: c.hc, Timeout: c.timeout, MaxResponse: maxResponse,
		Request: c.sendRequest,
		Classify: func(resp sms.HTTPResponse, req sms.SendRequest) sms.Outcome {
			return classify(c.name, resp, req.AttemptRef, c.clock.Now())
		},
	}.Send(ctx, req)
}

// sendRequest is the POST /messages of req, valid for secs.
func (c *Client) sendRequest(ctx context.Context, req sms.SendRequest, secs int64) (*http.Request, error) {
	body, err := json.Marshal(simapi.SendRequest{To: req.To, Body: req.Body, ClientRef: req.AttemptRef, ValiditySeconds: secs})
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return c.newRequest(ctx, http.MethodPost, "/messages", nil, body)
}

// Name returns the provider name the client answers as.
func (c *Client) Name() string { return c.name }

// classify turns the simulator's answer to a send into an outcome. The simulator documents
// 503 as "not processed": nothing was recorded; and its 400 country_not_supported as a
// restriction of its own (sms.DetailRestricted), which another provider may not share.
func classify(name string, resp sms.HTTPResponse, ref string, now time.Time) sms.Outcome {
	var apiErr simapi.Error
	_ = json.Unmarshal(resp.Body, &apiErr)
	out := sms.ClassifySend(resp, sms.SendAnswer{
		Provider: name, Op: "send " + ref, Code: apiErr.Code, NotProcessed503: true,
		MessageID: func(body []byte) (string, bool) {
			var sr simapi.SendResponse
			err := json.Unmarshal(body, &sr)
			return sr.MessageID, err == nil
		},
	}, now)
	if out.Class == sms.ClassRejected && apiErr.Code == simapi.CodeCountryNotSupported {
		out.Detail = sms.DetailRestricted
	}
	return out
}

// Lookup asks the simulator about an earlier attempt.
func (c *Client) Lookup(ctx context.Context, req sms.LookupRequest) (sms.LookupResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var (
		hr  *http.Request
		err error
	)
	if req.MessageID != "" {
		hr, err = c.newRequest(ctx, http.MethodGet, "/messages/"+url.PathEscape(req.MessageID), nil, nil)
	} else {
		hr, err = c.newRequest(ctx, http.MethodGet, "/messages", url.Values{"client_ref": {req.AttemptRef}}, nil)
	}
	if err != nil {
		return sms.Inconclusive("request_error"), fmt.Errorf("simclient.lookup %s: %w", req.AttemptRef, err)
	}
	resp, failure, ok := sms.Exchange(c.hc, hr, maxResponse)
	if !ok {
		return sms.Inconclusive("provider_error"), fmt.Errorf("simclient.lookup %s: %w", req.AttemptRef, failure.Err)
	}
	if resp.BodyErr != nil {
		return sms.Inconclusive("provider_error"), fmt.Errorf("simclient.lookup %s: %w", req.AttemptRef, resp.BodyErr)
	}
	now := c.clock.Now()
	var msgs []simapi.Message
	switch {
	case resp.StatusCode == http.StatusOK && req.MessageID != "":
		var m simapi.Message
		if err := json.Unmarshal(resp.Body, &m); err != nil {
			return sms.Inconclusive("provider_error"), fmt.Errorf("simclient.lookup %s: decoding: %w", req.AttemptRef, err)
		}
		msgs = []simapi.Message{m}
	case resp.StatusCode == http.StatusOK:
		var list simapi.MessageList
		if err := json.Unmarshal(resp.Body, &list); err != nil {
			return sms.Inconclusive("provider_error"), fmt.Errorf("simclient.lookup %s: decoding: %w", req.AttemptRef, err)
		}
		msgs = list.Messages
	case resp.StatusCode == http.StatusNotFound && req.MessageID != "":
	default:
		var apiErr simapi.Error
		_ = json.Unmarshal(resp.Body, &apiErr)
		return sms.Inconclusive("provider_error"), &sms.ProviderError{Provider: c.name, Op: "lookup " + req.AttemptRef, StatusCode: resp.StatusCode, Code: apiErr.Code}
	}
	return found(msgs, req, now, c.visibility)
}

// found turns the messages a lookup saw into a result.
func found(msgs []simapi.Message, req sms.LookupRequest, now time.Time, visibility time.Duration) (sms.LookupResult, error) {
	var match []simapi.Message
	for _, m := range msgs {
		// A lookup by ID must still be about this attempt.
		if m.ClientRef == req.AttemptRef && m.MessageID != "" {
			match = append(match, m)
		}
	}
	if len(match) == 0 {
		if len(msgs) > 0 {
			return sms.Inconclusive("reference_mismatch"), errors.New("simclient.lookup " + req.AttemptRef + ": the message found carries another reference")
		}
		return sms.Absent(now, req.AttemptedAt, visibility), nil
	}
	m := match[0]
	res := sms.Found(m.MessageID, sms.ReceiptNone, time.Time{})
	res.Matches = len(match)
	switch m.Status {
	case simapi.StatusDelivered:
		res.Receipt = sms.ReceiptDelivered
	case simapi.StatusUndelivered:
		res.Receipt = sms.ReceiptUndelivered
	}
	if res.Receipt != sms.ReceiptNone && m.FinalAt != nil {
		res.ReceiptAt = *m.FinalAt
	}
	return res, nil
}
