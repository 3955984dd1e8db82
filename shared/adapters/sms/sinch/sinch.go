// Package sinch is the sms.Sender and sms.Lookup adapter for the Sinch SMS REST API (XMS), the
// project's HTTP provider with a client reference and a lookup.
//
// Why Sinch rather than Twilio: Sinch's batch API carries our own reference. Send posts
//
//	POST {BaseURL}/xms/v1/{service_plan_id}/batches
//	Authorization: Bearer {api_token}
//	{"from", "to": [number], "body", "client_reference": <attempt_ref>,
//	 "expire_at": now + validity, "delivery_report": "per_recipient_final",
//	 "callback_url": <CallbackURL>?token=<CallbackToken>}
//
// and the answer (201) is the batch, whose "id" is the message ID we record. Twilio's Messages
// resource has no client reference field at all, so looking an attempt up there would need a
// mapping of our own, written before the send — a second store on the critical path.
//
// What the real API offers, honestly: the validity period is expressed as an absolute
// "expire_at" (ISO-8601, at most 3 days after sending), so it is computed from our clock,
// truncated to whole seconds — never later than now + validity; clock skew between us and
// Sinch shifts it. Lookup by message ID is GET /batches/{batch_id}. Lookup by reference
// uses the client_reference filter of GET /batches (documented in Sinch's SDKs as
// ListBatchesRequestData.client_reference), bounded by start_date (the list defaults to the
// last 24 hours); whether that filter matches exactly is not documented, so the results are
// filtered again for an exact match. Only the first page is read: when the listing's count
// exceeds it and nothing on it matches, the lookup is inconclusive. The batch carries no
// delivery status; receipts arrive at callback_url and are recorded by provider-events.
//
// Delivery reports: with a CallbackURL, each batch asks for "per_recipient_final" (one
// recipient_delivery_report_sms per message, carrying its final status, the batch ID and our
// client_reference) at the callback URL with CallbackToken in its query (CallbackTokenQuery).
// Sinch does not sign SMS delivery reports, and its basic authentication or OAuth for
// callbacks is configured by Sinch per account, so the secret in the URL is what tells a
// report from a forgery. Without a CallbackURL the batch asks for none ("none"): the account's
// default callback, if it has one, is not ours to rely on.
// Sinch's documentation does not say that any 5xx means "not processed", so every 5xx,
// including 503, is unknown; 429 is not accepted; other 4xx (except 408) are permanent. Error
// bodies are {"code", "text"}: only the code is kept, since the text may echo the number.
package sinch

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
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Provider is the name recorded for messages sent through Sinch.
const Provider = "sinch"

// MaxValiditySeconds is the latest expire_at Sinch accepts: 3 days after sending.
const MaxValiditySeconds = 3 * 24 * 60 * 60

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

const maxResponse = 256 << 10

// lookBack is how far before the attempt time a lookup by reference starts listing: the
// attempt may have started up to a lease before AttemptedAt, and clocks differ.
const lookBack = time.Hour

// Config configures a Client.
type Config struct {
	// BaseURL is the regional API root, e.g. https://us.sms.api.sinch.com.
	BaseURL string
	// ServicePlanID and APIToken authenticate (Bearer token).
	ServicePlanID string
	APIToken      string
	// From is the sender number or alphanumeric sender ID.
	From string
	// CallbackURL receives delivery reports (the Sinch webhook route, without a query);
	// optional. CallbackToken, required with it, is added to its query as CallbackTokenQuery.
	CallbackURL   string
	CallbackToken string
	// Timeout bounds each call (default DefaultTimeout).
	Timeout time.Duration
	// Visibility is how long after an attempt a lookup must wait before "not found" counts.
	Visibility time.Duration
	// HTTPClient sends the requests (default: a client of its own).
	HTTPClient *http.Client
	// Clock tells the time (default: the system clock).
	Clock notify.Clock
}

// CallbackTokenQuery is the query parameter of the callback URL that carries CallbackToken
// (config.SinchCallbackTokenQuery, which provider-events reads; a test keeps them equal).
const CallbackTokenQuery = "token"

// The delivery_report values a batch asks for.
const (
	// ReportFinal asks for one callback per recipient, with its final status.
	ReportFinal = "per_recipient_final"
	// ReportNone asks for no callback.
	ReportNone = "none"
)

// Client talks to Sinch. It implements sms.Sender and sms.Lookup.
type Client struct {
	cfg     Config
	batches *url.URL
	hc      *http.Client
	// callback is the callback URL with its token, or "" when no reports are asked for.
	callback string
}

var (
	_ sms.Sender = (*Client)(nil)
	_ sms.Lookup = (*Client)(nil)
)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sinch.new: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	var missing []string
	for name, v := range map[string]string{"service plan ID": cfg.ServicePlanID, "API token": cfg.APIToken, "sender": cfg.From} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sinch.new: missing %s", strings.Join(missing, ", "))
	}
	if cfg.Visibility < 0 {
		return nil, fmt.Errorf("sinch.new: visibility %s is negative", cfg.Visibility)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = notify.SystemClock{}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	u.Path += "/xms/v1/" + url.PathEscape(cfg.ServicePlanID) + "/batches"
	callback, err := callbackURL(cfg.CallbackURL, cfg.CallbackToken)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, batches: u, hc: hc, callback: callback}, nil
}

// callbackURL returns base with token in its query, "" when base is empty. Its errors never
// quote the token.
func callbackURL(base, token string) (string, error) {
	if base == "" {
		return "", nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", errors.New("sinch.new: the callback URL is not an http(s) URL without user, query or fragment")
	}
	if token == "" {
		return "", errors.New("sinch.new: a callback URL needs a callback token")
	}
	u.RawQuery = url.Values{CallbackTokenQuery: {token}}.Encode()
	return u.String(), nil
}

// Visibility returns the window after an attempt before "not found" counts.
func (c *Client) Visibility() time.Duration { return c.cfg.Visibility }

// batchRequest is the body of POST /batches for one text message.
type batchRequest struct {
	From            string   `json:"from"`
	To              []string `json:"to"`
	Body            string   `json:"body"`
	ClientReference string   `json:"client_reference"`
	ExpireAt        string   `json:"expire_at"`
	DeliveryReport  string   `json:"delivery_report"`
	CallbackURL     string   `json:"callback_url,omitempty"`
}

// deliveryReport is what a batch asks for: final reports at the callback when there is one.
func (c *Client) deliveryReport() string {
	if c.callback == "" {
		return ReportNone
	}
	return ReportFinal
}

// batch is the part of Sinch's batch object we read.
type batch struct {
	ID              string `json:"id"`
	ClientReference string `json:"client_reference"`
	Canceled        bool   `json:"canceled"`
}

type batchList struct {
	Count   int     `json:"count"`
	Batches []batch `json:"batches"`
}

type apiError struct {
	Code string `json:"code"`
}

// timeFormat is the ISO-8601 form Sinch documents, in UTC.
const timeFormat = "2006-01-02T15:04:05.000Z"

func (c *Client) newRequest(ctx context.Context, method string, u *url.URL, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.cfg.APIToken)
	return req, nil
}

// Send makes one attempt to send req, with the skeleton every HTTP provider shares
// (sms.HTTPSender).
func (c *Client) Send(ctx context.Context, req sms.SendRequest) sms.Outcome {
	return sms.HTTPSender{
		Op: "sinch.send", MaxValiditySeconds: MaxValiditySeconds,
		Client: c.hc, Timeout: c.cfg.Timeout, MaxResponse: maxResponse,
		Request: c.sendRequest,
		Classify: func(resp sms.HTTPResponse, req sms.SendRequest) sms.Outcome {
			return classify(resp, req.AttemptRef, c.cfg.Clock.Now())
		},
	}.Send(ctx, req)
}

// sendRequest is the POST /batches of req, expiring secs after now.
func (c *Client) sendRequest(ctx context.Context, req sms.SendRequest, secs int64) (*http.Request, error) {
	now := c.cfg.Clock.Now()
	body, err := json.Marshal(batchRequest{
		From:            c.cfg.From,
		To:              []string{req.To},
		Body:            req.Body,
		ClientReference: req.AttemptRef,
		// Truncating never moves the expiry later than now + validity.
		ExpireAt:       now.Add(time.Duration(secs) * time.Second).UTC().Truncate(time.Second).Format(timeFormat),
		DeliveryReport: c.deliveryReport(),
		CallbackURL:    c.callback,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return c.newRequest(ctx, http.MethodPost, c.batches, body)
}

// classify turns Sinch's answer to a send into an outcome. Sinch does not document a 503 as
// "not processed", so it proves nothing.
func classify(resp sms.HTTPResponse, ref string, now time.Time) sms.Outcome {
	var ae apiError
	_ = json.Unmarshal(resp.Body, &ae)
	return sms.ClassifySend(resp, sms.SendAnswer{
		Provider: Provider, Op: "send " + ref, Code: ae.Code,
		MessageID: func(body []byte) (string, bool) {
			var b batch
			err := json.Unmarshal(body, &b)
			return b.ID, err == nil
		},
	}, now)
}

// Lookup asks Sinch about an earlier attempt: by batch ID when known, else by client
// reference. It reads one page of the listing (100 batches); when the listing's count says
// there are more and none on the page matches, the answer is inconclusive, not "not found".
func (c *Client) Lookup(ctx context.Context, req sms.LookupRequest) (sms.LookupResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := c.newRequest(ctx, http.MethodGet, c.lookupURL(req), nil)
	if err != nil {
		return sms.Inconclusive("request_error"), fmt.Errorf("sinch.lookup %s: %w", req.AttemptRef, err)
	}
	resp, failure, ok := sms.Exchange(c.hc, hr, maxResponse)
	if !ok {
		return sms.Inconclusive("provider_error"), fmt.Errorf("sinch.lookup %s: %w", req.AttemptRef, failure.Err)
	}
	if resp.BodyErr != nil {
		return sms.Inconclusive("provider_error"), fmt.Errorf("sinch.lookup %s: %w", req.AttemptRef, resp.BodyErr)
	}
	batches, more, err := lookupBatches(resp, req)
	if err != nil {
		return sms.Inconclusive("provider_error"), err
	}
	return c.lookupAnswer(req, batches, more)
}

// lookupURL is the batch of req's message ID when known, else one page of the listing by
// client reference, from shortly before the attempt.
func (c *Client) lookupURL(req sms.LookupRequest) *url.URL {
	u := *c.batches
	if req.MessageID != "" {
		u.Path += "/" + url.PathEscape(req.MessageID)
		return &u
	}
	q := url.Values{"client_reference": {req.AttemptRef}, "page_size": {"100"}}
	if !req.AttemptedAt.IsZero() {
		q.Set("start_date", req.AttemptedAt.Add(-lookBack).UTC().Format(timeFormat))
	}
	u.RawQuery = q.Encode()
	return &u
}

// lookupBatches decodes the batches of a lookup's answer: the one batch asked for, or a page
// of the listing. more is set when the listing holds batches beyond the page read: a match may
// be among them, so finding none on this page proves nothing. A batch ID that is not found
// gives no batches; any other failure is an error.
func lookupBatches(resp sms.HTTPResponse, req sms.LookupRequest) (batches []batch, more bool, err error) {
	switch {
	case resp.StatusCode == http.StatusOK && req.MessageID != "":
		var b batch
		if err := json.Unmarshal(resp.Body, &b); err != nil {
			return nil, false, fmt.Errorf("sinch.lookup %s: decoding: %w", req.AttemptRef, err)
		}
		return []batch{b}, false, nil
	case resp.StatusCode == http.StatusOK:
		var l batchList
		if err := json.Unmarshal(resp.Body, &l); err != nil {
			return nil, false, fmt.Errorf("sinch.lookup %s: decoding: %w", req.AttemptRef, err)
		}
		return l.Batches, l.Count > len(l.Batches), nil
	case resp.StatusCode == http.StatusNotFound && req.MessageID != "":
		return nil, false, nil
	}
	var ae apiError
	_ = json.Unmarshal(resp.Body, &ae)
	return nil, false, &sms.ProviderError{Provider: Provider, Op: "lookup " + req.AttemptRef, StatusCode: resp.StatusCode, Code: ae.Code}
}

// lookupAnswer tells from the batches read whether the provider accepted req's attempt.
func (c *Client) lookupAnswer(req sms.LookupRequest, batches []batch, more bool) (sms.LookupResult, error) {
	var match []batch
	for _, b := range batches {
		if b.ClientReference == req.AttemptRef && b.ID != "" {
			match = append(match, b)
		}
	}
	if len(match) == 0 {
		if req.MessageID != "" && len(batches) > 0 {
			return sms.Inconclusive("reference_mismatch"), errors.New("sinch.lookup " + req.AttemptRef + ": the batch found carries another reference")
		}
		if more {
			return sms.Inconclusive("more_pages"), nil
		}
		return sms.Absent(c.cfg.Clock.Now(), req.AttemptedAt, c.cfg.Visibility), nil
	}
	res := sms.Found(match[0].ID, sms.ReceiptNone, time.Time{})
	res.Matches = len(match)
	return res, nil
}
