// Package twilio is the sms.Sender and sms.Lookup adapter for Twilio Programmable Messaging's
// REST API (Messages, 2010-04-01): a small client of our own rather than Twilio's generated
// library, which would hide whether a request was written, which sms.Exchange must know to tell
// "not sent" from "unknown".
//
// Send posts To, From or MessagingServiceSid, Body, ValidityPeriod and StatusCallback to
// Messages.json under basic authentication with an API key (its SID and secret; never the
// account's auth token, which only verifies callbacks) and records the answer's "sid" as the message ID.
// Twilio takes no client reference, so the attempt reference rides in the StatusCallback URL
// ({CallbackURL}?attempt=<attempt_ref>), which every signed status callback is posted to.
// ValidityPeriod is the time left before the deadline, rounded down, at most 36,000 s.
//
// Outcomes follow Twilio's documented statuses and error codes (docs/providers.md has the
// table with its sources); only an error's numeric code is kept, since its message may echo
// the number.
//
// Lookup never guesses: an attempt with a Message SID is fetched by SID; one without is never
// looked up, since the message list carries no reference of ours and lags without bound. So
// this Lookup never answers "not found", and a Twilio attempt never fails over, nor is re-sent,
// on a lookup; it is settled by its status callback or expires unresolved.
package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Provider is the name recorded for messages sent through Twilio.
const Provider = config.SMSTwilio

// MaxValiditySeconds is the longest ValidityPeriod Twilio accepts.
const MaxValiditySeconds = 36000

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// APIVersion is the path prefix of the Messages resource.
const APIVersion = "2010-04-01"

// CallbackAttemptQuery is the StatusCallback URL's query parameter that names the attempt.
const CallbackAttemptQuery = config.TwilioCallbackAttemptQuery

const maxResponse = 256 << 10

// The error codes this package classifies apart from their HTTP status.
const (
	// CodeThrottled is "Too Many Requests" (HTTP 429).
	CodeThrottled = "20429"
	// CodeAuthenticationFailed is a wrong account SID or API key (HTTP 401).
	CodeAuthenticationFailed = "20003"
	// CodeGeoPermission is a destination region not enabled in the account's Messaging Geo
	// Permissions.
	CodeGeoPermission = "21408"
	// CodeCannotRoute is a To and From that Twilio cannot connect.
	CodeCannotRoute = "21612"
)

// restricted are the 400 error codes that are restrictions of this account, not of the
// destination: another provider of the chain may serve it.
var restricted = map[string]bool{CodeGeoPermission: true, CodeCannotRoute: true}

// Config configures a Client.
type Config struct {
	// BaseURL is the API root (default config.DefaultTwilioBaseURL).
	BaseURL string
	// AccountSID names the account whose Messages resource is used; APIKeySID and
	// APIKeySecret, a standard API key of that account, authenticate (HTTP basic).
	AccountSID   string
	APIKeySID    string
	APIKeySecret string
	// From (a number or alphanumeric sender ID) or MessagingServiceSID, exactly one, sends.
	From                string
	MessagingServiceSID string
	// CallbackURL is the status callback route, without a query; required.
	CallbackURL string
	// Timeout bounds each call (default DefaultTimeout).
	Timeout time.Duration
	// Visibility is reported by Visibility; no Twilio answer turns into "not found".
	Visibility time.Duration
	// HTTPClient sends the requests (default: a client of its own).
	HTTPClient *http.Client
	// Clock tells the time (default: the system clock).
	Clock notify.Clock
}

// Client talks to Twilio. It implements sms.Sender and sms.Lookup.
type Client struct {
	cfg      Config
	messages *url.URL
	hc       *http.Client
	callback *url.URL
}

var (
	_ sms.Sender = (*Client)(nil)
	_ sms.Lookup = (*Client)(nil)
)

// New returns a Client for cfg. Its errors never quote the key secret.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = config.DefaultTwilioBaseURL
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("twilio.new: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"account SID", cfg.AccountSID}, {"API key SID", cfg.APIKeySID}, {"API key secret", cfg.APIKeySecret}, {"callback URL", cfg.CallbackURL}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("twilio.new: missing %s", strings.Join(missing, ", "))
	}
	if (cfg.From == "") == (cfg.MessagingServiceSID == "") {
		return nil, errors.New("twilio.new: exactly one of a sender and a messaging service SID is required")
	}
	cb, err := url.Parse(cfg.CallbackURL)
	if err != nil || (cb.Scheme != "http" && cb.Scheme != "https") || cb.Host == "" || cb.RawQuery != "" || cb.User != nil || cb.Fragment != "" {
		return nil, errors.New("twilio.new: the callback URL is not an http(s) URL without user, query or fragment")
	}
	if cfg.Visibility < 0 {
		return nil, fmt.Errorf("twilio.new: visibility %s is negative", cfg.Visibility)
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
	u.Path += "/" + APIVersion + "/Accounts/" + url.PathEscape(cfg.AccountSID) + "/Messages"
	return &Client{cfg: cfg, messages: u, hc: hc, callback: cb}, nil
}

// Visibility returns the configured window. Twilio lookups never answer "not found", so it
// only spaces reconciliation.
func (c *Client) Visibility() time.Duration { return c.cfg.Visibility }

// StatusCallback returns the status callback URL of the attempt ref: the callback route with
// the reference in its query.
func (c *Client) StatusCallback(ref string) string {
	u := *c.callback
	u.RawQuery = url.Values{CallbackAttemptQuery: {ref}}.Encode()
	return u.String()
}

// message is the part of Twilio's Message resource we read. It has no field for to, from or
// body, so they are never decoded.
type message struct {
	SID         string `json:"sid"`
	Status      string `json:"status"`
	ErrorCode   *int   `json:"error_code"`
	DateUpdated string `json:"date_updated"`
}

// apiError is Twilio's error body; its message is not read (it may echo the number).
type apiError struct {
	Code int `json:"code"`
}

func errorCode(body []byte) string {
	var ae apiError
	if json.Unmarshal(body, &ae) != nil || ae.Code == 0 {
		return ""
	}
	return strconv.Itoa(ae.Code)
}

func (c *Client) newRequest(ctx context.Context, method, u string, form url.Values) (*http.Request, error) {
	var body *bytes.Reader
	if form != nil {
		body = bytes.NewReader([]byte(form.Encode()))
	} else {
		body = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(c.cfg.APIKeySID, c.cfg.APIKeySecret)
	return req, nil
}

// Send makes one attempt to send req through the skeleton every HTTP provider shares
// (sms.HTTPSender): request and Classify are the two parts that are Twilio's own.
func (c *Client) Send(ctx context.Context, req sms.SendRequest) sms.Outcome {
	return sms.HTTPSender{
		Op: "twilio.send", MinValiditySeconds: 1, MaxValiditySeconds: MaxValiditySeconds,
		Client: c.hc, Timeout: c.cfg.Timeout, MaxResponse: maxResponse,
		Request: c.request,
		Classify: func(resp sms.HTTPResponse, req sms.SendRequest) sms.Outcome {
			return Classify(resp, req.AttemptRef, c.cfg.Clock.Now())
		},
	}.Send(ctx, req)
}

// request builds the message create for req, valid for secs seconds: the form with the
// attempt's StatusCallback and the configured sender.
func (c *Client) request(ctx context.Context, req sms.SendRequest, secs int64) (*http.Request, error) {
	form := url.Values{
		"To":             {req.To},
		"Body":           {req.Body},
		"ValidityPeriod": {strconv.FormatInt(secs, 10)},
		"StatusCallback": {c.StatusCallback(req.AttemptRef)},
	}
	if c.cfg.MessagingServiceSID != "" {
		form.Set("MessagingServiceSid", c.cfg.MessagingServiceSID)
	} else {
		form.Set("From", c.cfg.From)
	}
	return c.newRequest(ctx, http.MethodPost, c.messages.String()+".json", form)
}

// Classify turns Twilio's answer to a message create into an outcome (see the package
// documentation for the table and docs/providers.md for its sources).
func Classify(resp sms.HTTPResponse, ref string, now time.Time) sms.Outcome {
	code := errorCode(resp.Body)
	out := sms.ClassifySend(resp, sms.SendAnswer{
		Provider: Provider, Op: "send " + ref, Code: code,
		MessageID: func(body []byte) (string, bool) {
			var m message
			err := json.Unmarshal(body, &m)
			return m.SID, err == nil
		},
	}, now)
	perr := &sms.ProviderError{Provider: Provider, Op: "send " + ref, StatusCode: resp.StatusCode, Code: code}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		// Authentication failed: refused before anything was processed.
		out = sms.NotAccepted(sms.DetailUnavailable, 0, perr)
	case resp.StatusCode == http.StatusBadRequest && restricted[code]:
		out = sms.Restricted(code, perr)
	default:
		return out
	}
	out.HTTPStatus, out.Code = resp.StatusCode, code
	return out
}

// receiptOf maps a Message's status to a receipt: delivered is delivered; undelivered,
// failed and canceled are final failures; every other status (accepted, scheduled, queued,
// sending, sent, read) only proves acceptance.
func receiptOf(status string) sms.ReceiptStatus {
	switch status {
	case "delivered":
		return sms.ReceiptDelivered
	case "undelivered", "failed", "canceled":
		return sms.ReceiptUndelivered
	}
	return sms.ReceiptNone
}

// Lookup asks Twilio about an earlier attempt, by its Message SID only; see the package
// documentation. It never answers "not found".
func (c *Client) Lookup(ctx context.Context, req sms.LookupRequest) (sms.LookupResult, error) {
	if req.MessageID == "" {
		// No SID: the list cannot identify the attempt, so it is not asked. The status
		// callback settles it, or it expires.
		return sms.Inconclusive("no_message_sid"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := c.newRequest(ctx, http.MethodGet, c.messages.String()+"/"+url.PathEscape(req.MessageID)+".json", nil)
	if err != nil {
		return sms.Inconclusive("request_error"), fmt.Errorf("twilio.lookup %s: %w", req.AttemptRef, err)
	}
	resp, failure, ok := sms.Exchange(c.hc, hr, maxResponse)
	if !ok {
		return sms.Inconclusive("provider_error"), fmt.Errorf("twilio.lookup %s: %w", req.AttemptRef, failure.Err)
	}
	if resp.BodyErr != nil {
		return sms.Inconclusive("provider_error"), fmt.Errorf("twilio.lookup %s: %w", req.AttemptRef, resp.BodyErr)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		// A SID Twilio gave us and does not show: its store lags or the message was deleted.
		// Neither proves the attempt was not sent.
		return sms.Inconclusive("sid_not_found"), nil
	default:
		return sms.Inconclusive("provider_error"), &sms.ProviderError{Provider: Provider, Op: "lookup " + req.AttemptRef, StatusCode: resp.StatusCode, Code: errorCode(resp.Body)}
	}
	var m message
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		return sms.Inconclusive("provider_error"), fmt.Errorf("twilio.lookup %s: decoding: %w", req.AttemptRef, err)
	}
	if m.SID != req.MessageID {
		return sms.Inconclusive("sid_mismatch"), errors.New("twilio.lookup " + req.AttemptRef + ": the message fetched has another SID")
	}
	var at time.Time
	if t, err := time.Parse(time.RFC1123Z, m.DateUpdated); err == nil {
		at = t.UTC()
	}
	receipt := receiptOf(m.Status)
	if receipt == sms.ReceiptNone {
		at = time.Time{}
	}
	return sms.Found(m.SID, receipt, at), nil
}
