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
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/sms/simapi"
)

// SimulatorRoute is the HTTP API route of the simulator's webhook, as template.yaml declares
// it.
const SimulatorRoute = "POST /v1/provider-events/simulator"

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
}

// Handle is the function's one entry point for lambda.Start: it looks at the shape of the raw
// payload and hands it to HandleSNS or HandleSimulatorWebhook, returning the latter's
// response. A payload of neither shape is poison: acknowledged (nil, nil) and counted.
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
		h.Recorder.Poison(ctx, "unknown", fmt.Errorf("receipts.handle: payload is not a JSON object: %w", ErrPoison))
		return nil, nil
	}
	switch {
	case len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:sns":
		var ev events.SNSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			h.Recorder.Poison(ctx, config.SMSEndUserSMS, fmt.Errorf("receipts.handle: unreadable SNS event: %w", ErrPoison))
			return nil, nil
		}
		return nil, h.HandleSNS(ctx, ev)
	case probe.Version == "2.0" && probe.RequestContext.HTTP.Method != "":
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			h.Recorder.Poison(ctx, config.SMSSimulator, fmt.Errorf("receipts.handle: unreadable HTTP API event: %w", ErrPoison))
			return respond(http.StatusBadRequest, OutcomePoison), nil
		}
		return h.HandleSimulatorWebhook(ctx, req)
	}
	h.Recorder.Poison(ctx, "unknown", fmt.Errorf("receipts.handle: neither an SNS nor an HTTP API event: %w", ErrPoison))
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
	if !h.authorised(req.Headers) {
		h.Recorder.log().WarnContext(ctx, "simulator webhook refused", "reason", "missing or wrong token",
			"source_ip", req.RequestContext.HTTP.SourceIP)
		return respondStatus(http.StatusUnauthorized, "unauthorized"), nil
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			h.Recorder.Poison(ctx, config.SMSSimulator, fmt.Errorf("receipts.webhook: body is not base64: %w", ErrPoison))
			return respond(http.StatusBadRequest, OutcomePoison), nil
		}
		body = b
	}
	if len(body) > maxEventBytes {
		h.Recorder.Poison(ctx, config.SMSSimulator, fmt.Errorf("receipts.webhook: body over %d bytes: %w", maxEventBytes, ErrPoison))
		return respond(http.StatusRequestEntityTooLarge, OutcomePoison), nil
	}
	rc, err := ParseSimulator(body)
	if err != nil {
		h.Recorder.Poison(ctx, config.SMSSimulator, err)
		return respond(http.StatusBadRequest, OutcomePoison), nil
	}
	res, err := h.Recorder.Record(ctx, rc)
	if err != nil {
		resp := respondStatus(http.StatusServiceUnavailable, "try again later")
		resp.Headers["Retry-After"] = "1"
		return resp, nil
	}
	return respond(http.StatusOK, res.Outcome), nil
}

// authorised compares the request's token with the configured one in constant time. Both are
// hashed first, so that neither their contents nor their lengths show in the timing.
func (h *Handler) authorised(headers map[string]string) bool {
	if len(h.WebhookToken) == 0 {
		return false
	}
	var got string
	for k, v := range headers {
		if strings.EqualFold(k, simapi.WebhookTokenHeader) {
			got = v
			break
		}
	}
	if got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(h.WebhookToken)
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
