package providerevents

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/config"
)

// The HTTP API routes of the providers' webhooks, as template.yaml declares them.
const (
	SimulatorRoute = "POST /v1/provider-events/simulator"
	SinchRoute     = "POST /v1/provider-events/sinch"
	TwilioRoute    = "POST /v1/provider-events/twilio"
)

// ErrRetryLater means an event was recorded but must be delivered again: a final receipt
// arrived while the dispatch worker still held the attempt's lease, or a store failed.
var ErrRetryLater = errors.New("provider event must be delivered again")

// Handler is the provider-events Lambda function's handler. Build it with
// providerevents.New (package shared/wire/providerevents).
type Handler struct {
	Recorder *Recorder
	// WebhookToken is the shared token the simulator sends in simapi.WebhookTokenHeader.
	// Empty disables the webhook: every call is refused.
	WebhookToken []byte
	// SinchToken is the token Sinch's delivery report callbacks carry in their URL's query
	// (config.SinchCallbackTokenQuery), as dispatch gave it to Sinch. Empty disables the
	// Sinch webhook: every call is refused.
	SinchToken []byte
	// TwilioTokens are the Twilio auth tokens a status callback's X-Twilio-Signature may be
	// made with: the current one and, during a rotation, the secondary. TwilioCallbackURL is
	// the route's public URL as dispatch gives it to Twilio (without the query), which the
	// signature covers. Either empty disables the Twilio webhook: every call is refused.
	TwilioTokens      [][]byte
	TwilioCallbackURL string
	// SinchPreviousToken is, during a rotation of the callback token, the token being retired:
	// the reports of batches dispatch sent with it are accepted too. Empty outside a rotation.
	SinchPreviousToken []byte
}

// Handle is the function's one entry point for lambda.Start: it looks at the shape of the raw
// payload and hands it to HandleSNS or, for an HTTP API event, HandleHTTP, returning the
// latter's response. A payload of neither shape is poison: acknowledged (nil, nil) and
// counted.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (any, error) {
	var probe struct {
		Records []struct {
			EventSource string `json:"EventSource"`
		} `json:"Records"`
		Version        string `json:"version"`
		RequestContext struct {
			HTTP struct {
				Method string `json:"method"`
			} `json:"http"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		h.Recorder.Poison(ctx, "unknown", fmt.Errorf("providerevents.handle: payload is not a JSON object: %w", ErrPoison))
		return nil, nil
	}
	switch {
	case len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:sns":
		var ev events.SNSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			h.Recorder.Poison(ctx, config.SMSEndUserSMS, fmt.Errorf("providerevents.handle: unreadable SNS event: %w", ErrPoison))
			return nil, nil
		}
		return nil, h.HandleSNS(ctx, ev)
	case probe.Version == "2.0" && probe.RequestContext.HTTP.Method != "":
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			h.Recorder.Poison(ctx, "unknown", fmt.Errorf("providerevents.handle: unreadable HTTP API event: %w", ErrPoison))
			return respond(http.StatusBadRequest, OutcomePoison), nil
		}
		return h.HandleHTTP(ctx, req)
	}
	h.Recorder.Poison(ctx, "unknown", fmt.Errorf("providerevents.handle: neither an SNS nor an HTTP API event: %w", ErrPoison))
	return nil, nil
}

// HandleSNS records the AWS End User Messaging SMS events of an SNS event, one per record. A
// malformed record is poison: counted and skipped. It returns an error, so that Lambda retries
// the invocation, only when a store failed; recording is idempotent, so a retry redoes nothing
// that was done. A final receipt that arrives while its attempt is still being sent is held on
// the record and acknowledged.
func (h *Handler) HandleSNS(ctx context.Context, ev events.SNSEvent) error {
	var errs []error
	for _, rec := range ev.Records {
		rc, err := ParseEndUserSMS([]byte(rec.SNS.Message))
		if err != nil {
			h.Recorder.Poison(ctx, config.SMSEndUserSMS, err)
			continue
		}
		if _, err := h.Recorder.Record(ctx, rc); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrRetryLater, err))
		}
	}
	return errors.Join(errs...)
}

// HandleHTTP hands an HTTP API event to the webhook of its route: HandleSinchWebhook for
// SinchRoute, HandleTwilioWebhook for TwilioRoute, HandleSimulatorWebhook for any other (SimulatorRoute, which the simulator's
// function alone is given).
func (h *Handler) HandleHTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if req.RouteKey == SinchRoute || req.RequestContext.RouteKey == SinchRoute {
		return h.HandleSinchWebhook(ctx, req)
	}
	if req.RouteKey == TwilioRoute || req.RequestContext.RouteKey == TwilioRoute {
		return h.HandleTwilioWebhook(ctx, req)
	}
	return h.HandleSimulatorWebhook(ctx, req)
}

// HandleSimulatorWebhook records one receipt the simulator POSTed (simapi.Receipt). It
// answers 200 with {"outcome": ...} for every acknowledged receipt (orphans and stale ones
// included), 400 for poison, 401 when the token is missing or wrong (or the webhook is
// disabled), 405 for another method, 413 for a body over 8 KiB, and 503 with Retry-After when
// the simulator should post it again. It never returns an error: API Gateway would turn it
// into a bare 500.
func (h *Handler) HandleSimulatorWebhook(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if req.RequestContext.HTTP.Method != http.MethodPost {
		return respondStatus(http.StatusMethodNotAllowed, "method not allowed"), nil
	}
	var got string
	for k, v := range req.Headers {
		if strings.EqualFold(k, simapi.WebhookTokenHeader) {
			got = v
			break
		}
	}
	if !tokenMatches(got, h.WebhookToken) {
		h.Recorder.log().WarnContext(ctx, "simulator webhook refused", "reason", "missing or wrong token",
			"source_ip", req.RequestContext.HTTP.SourceIP)
		return respondStatus(http.StatusUnauthorized, "unauthorized"), nil
	}
	return h.record(ctx, req, config.SMSSimulator, ParseSimulator), nil
}

// HandleSinchWebhook records one delivery report Sinch POSTed to the callback URL dispatch
// gave it (ParseSinch: a recipient_delivery_report_sms, matched on provider sinch, the batch
// ID and the attempt reference). The token is the callback URL's query parameter
// config.SinchCallbackTokenQuery, compared in constant time with the current token and, during
// a rotation, the previous one (both, always): Sinch signs no SMS delivery report. It answers
// as HandleSimulatorWebhook does; Sinch retries a callback answered 5xx or 429 (for up to about
// 23 hours) and drops one answered any other 4xx, so only a store failure asks it to come
// back. Neither the token nor the report's recipient is ever logged.
func (h *Handler) HandleSinchWebhook(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if req.RequestContext.HTTP.Method != http.MethodPost {
		return respondStatus(http.StatusMethodNotAllowed, "method not allowed"), nil
	}
	got := queryToken(req)
	current, previous := tokenMatches(got, h.SinchToken), tokenMatches(got, h.SinchPreviousToken)
	if !current && !previous {
		h.Recorder.log().WarnContext(ctx, "sinch webhook refused", "reason", "missing or wrong token",
			"source_ip", req.RequestContext.HTTP.SourceIP)
		return respondStatus(http.StatusUnauthorized, "unauthorized"), nil
	}
	return h.record(ctx, req, config.SMSSinch, ParseSinch), nil
}

// HandleTwilioWebhook records one status callback Twilio POSTed to the StatusCallback URL
// dispatch gave the message: its URL names the attempt (config.TwilioCallbackAttemptQuery),
// its form the MessageSid and MessageStatus (ParseTwilio), and it is matched on provider
// twilio, the SID and the attempt reference, and applied as every receipt is.
//
// The X-Twilio-Signature is checked first, before anything is parsed or counted: HMAC-SHA1,
// under either configured auth token, of TwilioCallbackURL with the request's raw query string
// followed by the sorted form parameters (TwilioSignatureValid). A missing or wrong signature,
// a body that cannot be verified (not a form, or over 8 KiB), a callback signed under a
// Webhooks Rule's settings, or a disabled webhook answers 403 and changes nothing. A replayed callback is recorded again, which changes nothing (recording is
// idempotent). It answers as HandleSimulatorWebhook does otherwise; Twilio does not retry a
// status callback by default, so a 503 (a store failed) loses it, and the attempt is left to
// its SID lookup, or to expire. Neither the tokens nor the callback's To and From are logged.
func (h *Handler) HandleTwilioWebhook(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if req.RequestContext.HTTP.Method != http.MethodPost {
		return respondStatus(http.StatusMethodNotAllowed, "method not allowed"), nil
	}
	refuse := func(reason string) (events.APIGatewayV2HTTPResponse, error) {
		h.Recorder.log().WarnContext(ctx, "twilio webhook refused", "reason", reason, "source_ip", req.RequestContext.HTTP.SourceIP)
		return respondStatus(http.StatusForbidden, "forbidden"), nil
	}
	if len(h.TwilioTokens) == 0 || h.TwilioCallbackURL == "" {
		return refuse("webhook not configured")
	}
	if header(req, TwilioSignatureSettingsHeader) != "" {
		return refuse("signed under a webhooks rule")
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return refuse("body is not base64")
		}
		body = b
	}
	if len(body) > maxEventBytes {
		return refuse("body too large to verify")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return refuse("body is not a form")
	}
	full := h.TwilioCallbackURL
	if req.RawQueryString != "" {
		full += "?" + req.RawQueryString
	}
	if !TwilioSignatureValid(h.TwilioTokens, full, form, header(req, TwilioSignatureHeader)) {
		return refuse("missing or wrong signature")
	}
	ref := queryParam(req, config.TwilioCallbackAttemptQuery)
	return h.record(ctx, req, config.SMSTwilio, func([]byte) (Receipt, error) { return ParseTwilio(ref, form) }), nil
}

// header returns req's header name, whatever its case (API Gateway lower-cases them).
func header(req events.APIGatewayV2HTTPRequest, name string) string {
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// record decodes an authorised webhook call's body, parses it with parse and records the
// receipt, answering 200 with the outcome, 400 or 413 for poison, and 503 with Retry-After
// when a store failed.
func (h *Handler) record(ctx context.Context, req events.APIGatewayV2HTTPRequest, provider string, parse func([]byte) (Receipt, error)) events.APIGatewayV2HTTPResponse {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			h.Recorder.Poison(ctx, provider, fmt.Errorf("providerevents.webhook: body is not base64: %w", ErrPoison))
			return respond(http.StatusBadRequest, OutcomePoison)
		}
		body = b
	}
	if len(body) > maxEventBytes {
		h.Recorder.Poison(ctx, provider, fmt.Errorf("providerevents.webhook: body over %d bytes: %w", maxEventBytes, ErrPoison))
		return respond(http.StatusRequestEntityTooLarge, OutcomePoison)
	}
	rc, err := parse(body)
	if err != nil {
		h.Recorder.Poison(ctx, provider, err)
		return respond(http.StatusBadRequest, OutcomePoison)
	}
	res, err := h.Recorder.Record(ctx, rc)
	if err != nil {
		resp := respondStatus(http.StatusServiceUnavailable, "try again later")
		resp.Headers["Retry-After"] = "1"
		return resp
	}
	return respond(http.StatusOK, res.Outcome)
}

// queryToken returns the callback token of req's query string. API Gateway passes the
// decoded parameters (several values of one name joined by commas); the raw query string is
// read when they are absent.
func queryToken(req events.APIGatewayV2HTTPRequest) string {
	return queryParam(req, config.SinchCallbackTokenQuery)
}

// queryParam returns the query parameter name of req: from the decoded parameters API Gateway
// passes, else from the raw query string.
func queryParam(req events.APIGatewayV2HTTPRequest, name string) string {
	if v, ok := req.QueryStringParameters[name]; ok {
		return v
	}
	q, err := url.ParseQuery(req.RawQueryString)
	if err != nil {
		return ""
	}
	return q.Get(name)
}

// tokenMatches compares a request's token with the configured one in constant time; an empty
// configured token matches nothing. Both are hashed first, so that neither their contents nor
// their lengths show in the timing.
func tokenMatches(got string, want []byte) bool {
	if len(want) == 0 || got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(want)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func respond(status int, o Outcome) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(map[string]string{"outcome": string(o)}) // a map of strings always marshals
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(b),
	}
}

func respondStatus(status int, message string) events.APIGatewayV2HTTPResponse {
	b, _ := json.Marshal(map[string]string{"message": message})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(b),
	}
}
