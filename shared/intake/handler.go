package intake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// The routes, as API Gateway route keys. template.yaml must declare exactly these, with the
// path parameter named PathParamKey.
const (
	RouteSubmit = "POST /v1/notifications"
	RouteStatus = "GET /v1/notifications/{key}"
	RouteCancel = "DELETE /v1/notifications/{key}"
	// RouteConvert reports that the notification's code or link was used.
	RouteConvert = "POST /v1/notifications/{key}/conversion"
)

// CollectionPath is the path of the notifications collection.
const CollectionPath = "/v1/notifications"

// PathParamKey names the path parameter that carries the idempotency key.
const PathParamKey = "key"

// QueryOwner names the query parameter of a GET by which the operator names the owner of the
// key it reads (an IAM principal ARN).
const QueryOwner = "owner"

// MaxBodyBytes bounds the decoded size of a POST body.
const MaxBodyBytes = 8 << 10

// RetryAfterSeconds is the Retry-After of a 503 when the dispatch queue was unavailable.
const RetryAfterSeconds = 2

// GuardRetryAfterSeconds is the Retry-After of a 503 when the abuse guard could not count an
// admission: past the decision bound and its skew margin (notify.DefaultDecisionBound,
// notify.SkewMargin), so that the repeat counts the record at once instead of waiting for
// the failed creator.
const GuardRetryAfterSeconds = 1

// Response header names. API Gateway passes them through as written.
const (
	HeaderContentType        = "Content-Type"
	HeaderLocation           = "Location"
	HeaderIdempotentReplayed = "Idempotent-Replayed"
	HeaderRetryAfter         = "Retry-After"
	HeaderRequestID          = "X-Request-Id"
	HeaderCacheControl       = "Cache-Control"
)

// Content types of responses.
const (
	ContentTypeJSON    = "application/json"
	ContentTypeProblem = "application/problem+json"
)

// routeUnmatched is the route reported in logs and metrics for a path no route serves.
const routeUnmatched = "unmatched"

// Handler adapts API Gateway HTTP API (payload format 2.0) events to the notify.Service
// service and back, with one Intake call per request. It checks only what belongs to HTTP
// (Content-Type, base64, body size); validation of the body and the key, admission, status
// and cancellation are the Intake's.
type Handler struct {
	intake  *notify.Service
	log     *slog.Logger
	metrics *obs.Metrics
}

// New returns a handler for in. A nil log discards; a nil metrics emits nothing.
func New(in *notify.Service, log *slog.Logger, metrics *obs.Metrics) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{intake: in, log: log, metrics: metrics}
}

// result is what one request produced, before the common headers are added.
type result struct {
	status   int
	headers  map[string]string
	body     any
	problem  *Problem
	route    string
	key      string // a validated idempotency key, or ""
	notifID  string
	replayed bool
	cause    error // logged for 5xx, never returned to the client
	refusal  *notify.RefusedError
	country  string // an admitted number's country (Record.Country)
}

// Handle answers one HTTP API v2 event. It never returns an error: every failure is an
// application/problem+json response, so API Gateway never substitutes its own.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	requestID := ev.RequestContext.RequestID
	if requestID == "" {
		requestID = ulid.Make().String()
	}
	res := h.recoverRoute(ctx, ev)
	resp := h.respond(res, requestID)
	h.record(ctx, obs.WithSecrets(h.log, requestSecrets(ev)...), ev, res, requestID, time.Since(start))
	return resp, nil
}

// recoverRoute routes ev, turning a panic into a 500 whose cause is not echoed.
func (h *Handler) recoverRoute(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (res result) {
	defer func() {
		if v := recover(); v != nil {
			res = internalError(routeOf(ev), errors.New("panic in handler"))
		}
	}()
	return h.route(ctx, ev)
}

// route picks the operation from the route key, once. template.yaml declares exactly
// RouteSubmit, RouteStatus, RouteCancel and RouteConvert, with the key as the path parameter PathParamKey,
// and the local gateway (infra/localapi) routes by the same template, so every caller sets them
// as API Gateway does. Any other route key is answered 404 route-not-found; API Gateway itself
// never delivers one.
func (h *Handler) route(ctx context.Context, ev events.APIGatewayV2HTTPRequest) result {
	ctx = notify.WithCaller(ctx, callerOf(ev))
	switch routeKey(ev) {
	case RouteSubmit:
		return h.submit(ctx, ev)
	case RouteStatus:
		return h.status(ctx, ev.PathParameters[PathParamKey], ev.QueryStringParameters[QueryOwner])
	case RouteCancel:
		return h.cancel(ctx, ev.PathParameters[PathParamKey])
	case RouteConvert:
		return h.convert(ctx, ev.PathParameters[PathParamKey])
	}
	return result{status: http.StatusNotFound, route: routeUnmatched,
		problem: newProblem(ProblemRouteNotFound, http.StatusNotFound, "No resource has this path.")}
}

func (h *Handler) submit(ctx context.Context, ev events.APIGatewayV2HTTPRequest) result {
	const route = RouteSubmit
	hdr := lowerHeaders(ev.Headers)
	if !isJSON(hdr["content-type"]) {
		return problemResult(route, http.StatusUnsupportedMediaType, ProblemUnsupportedMediaType,
			"Content-Type must be application/json (charset utf-8, if given).")
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return problemResult(route, http.StatusBadRequest, ProblemMalformedRequest, "The body is marked base64 but does not decode.")
		}
		body = decoded
	}
	if len(body) > MaxBodyBytes {
		return problemResult(route, http.StatusRequestEntityTooLarge, ProblemPayloadTooLarge,
			"The body must be at most "+strconv.Itoa(MaxBodyBytes)+" bytes.")
	}

	sub, err := h.intake.SubmitJSON(ctx, body, headerKey(hdr["idempotency-key"]))
	res := result{route: route, key: sub.Key, notifID: sub.Record.NotificationID, replayed: sub.Replayed}
	var refused *notify.RefusedError
	switch {
	case errors.As(err, new(*notify.ValidationError)):
		return validationResult(route, err)
	case errors.As(err, &refused):
		return refusalResult(route, sub, refused)
	case errors.Is(err, notify.ErrKeyReuse):
		res.status = http.StatusUnprocessableEntity
		res.problem = newProblem(ProblemKeyReused, res.status,
			"This idempotency key was already used with a different request. Use a new key for a new request.")
		return res
	case errors.Is(err, notify.ErrEnqueue):
		return unavailable(res, err, ProblemQueueUnavailable, RetryAfterSeconds,
			"The notification is stored but could not be queued for dispatch. Repeat the same request to queue it again.")
	case errors.Is(err, notify.ErrGuardUnavailable):
		return unavailable(res, err, ProblemGuardUnavailable, GuardRetryAfterSeconds,
			"The notification is stored but its abuse check could not run, so it is not sent. Repeat the same request after Retry-After seconds to have it checked and sent.")
	case err != nil:
		r := internalError(route, err)
		r.key = sub.Key
		return r
	}
	res.body = NewStatusView(sub.Record)
	if sub.Replayed {
		res.status = http.StatusOK
		res.headers = map[string]string{HeaderIdempotentReplayed: "true"}
		return res
	}
	res.status, res.country = http.StatusAccepted, sub.Record.Country
	res.headers = map[string]string{HeaderLocation: CollectionPath + "/" + url.PathEscape(notify.CallerKey(sub.Record.IdempotencyKey))}
	h.metrics.Transition(string(sub.Record.State), string(sub.Record.Reason))
	if sub.LateDecision {
		h.metrics.GuardDecisionLate()
	}
	return res
}

// unavailable is res as a 503 of type t for the cause err, with Retry-After retry seconds:
// the request may be repeated as it is.
func unavailable(res result, err error, t ProblemType, retry int, detail string) result {
	res.status = http.StatusServiceUnavailable
	res.problem = newProblem(t, res.status, detail)
	res.headers = map[string]string{HeaderRetryAfter: strconv.Itoa(retry)}
	res.cause = err
	return res
}

// status answers a GET. The query parameter QueryOwner, the principal ARN of the key's owner,
// lets the operator read another caller's key; for anyone else a foreign owner is a 404.
func (h *Handler) status(ctx context.Context, rawKey, owner string) result {
	const route = RouteStatus
	key := unescapeKey(rawKey)
	rec, err := h.intake.StatusOf(ctx, key, owner)
	if err != nil {
		return keyedError(route, key, err)
	}
	return result{status: http.StatusOK, route: route, key: key, notifID: rec.NotificationID, body: NewStatusView(rec)}
}

func (h *Handler) cancel(ctx context.Context, rawKey string) result {
	const route = RouteCancel
	key := unescapeKey(rawKey)
	rec, err := h.intake.Cancel(ctx, key)
	res := result{route: route, key: key, notifID: rec.NotificationID}
	switch {
	case errors.Is(err, notify.ErrNotCancellable):
		res.status = http.StatusConflict
		res.problem = newProblem(ProblemNotCancellable, res.status,
			"Only a notification that is accepted or retry_scheduled can be cancelled; this one is "+string(rec.State)+".")
		res.problem.State, res.problem.Reason = rec.State, rec.Reason
		return res
	case errors.Is(err, notify.ErrConflict):
		res.status = http.StatusConflict
		res.problem = newProblem(ProblemConcurrentChange, res.status,
			"The notification kept changing while it was being cancelled. Repeat the request.")
		return res
	case err != nil:
		return keyedError(route, key, err)
	}
	h.metrics.Transition(string(rec.State), string(rec.Reason))
	res.status, res.body = http.StatusOK, NewStatusView(rec)
	return res
}

// convert records a conversion: 200 with the status (Idempotent-Replayed on a repeat), 409
// not-sent for a notification never sent, 503 feedback-unavailable when the provider was not
// told (the conversion is recorded; a repeat tells it).
func (h *Handler) convert(ctx context.Context, rawKey string) result {
	const route = RouteConvert
	key := unescapeKey(rawKey)
	conv, err := h.intake.Convert(ctx, key)
	res := result{route: route, key: key, notifID: conv.Record.NotificationID, replayed: conv.Replayed}
	switch {
	case errors.Is(err, notify.ErrNotSent):
		res.status = http.StatusConflict
		res.problem = newProblem(ProblemNotSent, res.status,
			"Only a notification that was sent can be converted; this one is "+string(conv.Record.State)+".")
		res.problem.State, res.problem.Reason = conv.Record.State, conv.Record.Reason
		return res
	case errors.Is(err, notify.ErrFeedback):
		if !conv.Replayed {
			h.metrics.Transition(string(conv.Record.State), string(conv.Record.Reason))
			h.metrics.Conversion(obs.MetricConversions, conv.Record.Country)
		}
		res.status = http.StatusServiceUnavailable
		res.problem = newProblem(ProblemFeedbackUnavailable, res.status,
			"The conversion is recorded but the provider could not be told. Repeat the request after Retry-After seconds.")
		res.headers = map[string]string{HeaderRetryAfter: strconv.Itoa(RetryAfterSeconds)}
		res.cause = err
		return res
	case errors.Is(err, notify.ErrConflict):
		res.status = http.StatusConflict
		res.problem = newProblem(ProblemConcurrentChange, res.status,
			"The notification kept changing while the conversion was recorded. Repeat the request.")
		return res
	case err != nil:
		return keyedError(route, key, err)
	}
	if conv.Replayed {
		res.headers = map[string]string{HeaderIdempotentReplayed: "true"}
	} else {
		h.metrics.Transition(string(conv.Record.State), string(conv.Record.Reason))
		h.metrics.Conversion(obs.MetricConversions, conv.Record.Country)
	}
	res.status, res.body = http.StatusOK, NewStatusView(conv.Record)
	return res
}

// respond builds the API Gateway response: the body, Content-Type, the request ID and
// Cache-Control on every response.
func (h *Handler) respond(res result, requestID string) events.APIGatewayV2HTTPResponse {
	headers := map[string]string{
		HeaderRequestID:    requestID,
		HeaderCacheControl: "no-store",
	}
	for k, v := range res.headers {
		headers[k] = v
	}
	var body string
	if res.problem != nil {
		res.problem.Instance = "urn:resetnotify:request:" + requestID
		headers[HeaderContentType] = ContentTypeProblem
		body = res.problem.marshal()
	} else {
		headers[HeaderContentType] = ContentTypeJSON
		b, err := json.Marshal(res.body)
		if err != nil {
			p := newProblem(ProblemInternal, http.StatusInternalServerError, internalDetail)
			p.Instance = "urn:resetnotify:request:" + requestID
			headers[HeaderContentType] = ContentTypeProblem
			return events.APIGatewayV2HTTPResponse{StatusCode: p.Status, Headers: headers, Body: p.marshal()}
		}
		body = string(b)
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: res.status, Headers: headers, Body: body}
}

// record writes the one log line, through log (which masks the request's own secrets), and
// the request metric. Neither ever holds the body.
func (h *Handler) record(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, res result, requestID string, latency time.Duration) {
	attrs := []slog.Attr{
		slog.String("method", methodOf(ev)),
		slog.String("route", res.route),
		slog.Int("status", res.status),
		slog.String("key", res.key),
		slog.String("notification_id", res.notifID),
		slog.Float64("latency_ms", float64(latency.Microseconds())/1000),
		slog.String("request_id", requestID),
	}
	if res.problem != nil {
		attrs = append(attrs, slog.String("problem", string(res.problem.slug())))
	}
	if r := res.refusal; r != nil {
		// The fingerprint and the calling code only: never the number.
		attrs = append(attrs, slog.String("refusal", string(r.Reason)),
			slog.String("destination_fp", r.DestinationFP), slog.String("country_code", r.CountryCode))
		if !res.replayed {
			// A repeat of a refused key is the same refusal, counted once.
			h.metrics.Refusal(string(r.Reason), r.CountryCode)
		}
	} else if res.route == RouteSubmit && res.status == http.StatusAccepted {
		h.metrics.NotRefused(string(notify.RefusedPrefixVelocity), res.country)
	}
	if res.route == RouteSubmit && res.status == http.StatusTooManyRequests {
		attrs = append(attrs, slog.Bool("replayed", res.replayed))
	}
	if (res.route == RouteSubmit || res.route == RouteConvert) && res.status < 300 {
		attrs = append(attrs, slog.Bool("replayed", res.replayed))
	}
	level := slog.LevelInfo
	if res.status >= 500 {
		level = slog.LevelError
		if res.cause != nil {
			attrs = append(attrs, slog.String("error", res.cause.Error()))
		}
	}
	log.LogAttrs(ctx, level, "request", attrs...)
	h.metrics.Request(res.route, res.status, latency)
}

const internalDetail = "The request could not be completed. Quote the request ID when reporting it."

func internalError(route string, cause error) result {
	return result{status: http.StatusInternalServerError, route: route, cause: cause,
		problem: newProblem(ProblemInternal, http.StatusInternalServerError, internalDetail)}
}

// refusalResult answers an admission the guards refused: 422 for a destination outside the
// allow-list (nothing stored), else 429 with Retry-After in whole seconds, rounded up (0 once
// the window has passed, for a repeat of a refused key), the refused record's state and reason,
// and Idempotent-Replayed on a repeat.
func refusalResult(route string, sub notify.Submitted, r *notify.RefusedError) result {
	var res result
	const retry = " The refusal is recorded under this idempotency key: repeating it gets this answer again; after Retry-After seconds, send a new request with a new key."
	switch r.Reason {
	case notify.RefusedCountry, notify.RefusedNumberType, notify.RefusedInvalidNumber:
		d := destinationRefusals[r.Reason]
		res = problemResult(route, http.StatusUnprocessableEntity, ProblemDestinationNotAllowed, d.detail)
		res.problem.Reason = d.reason
	case notify.RefusedPrefixBlocked:
		res = problemResult(route, http.StatusTooManyRequests, ProblemPrefixBlocked,
			"Messages to this number range are blocked for now: they are not being used. Nothing was stored; repeat the request after Retry-After seconds.")
	case notify.RefusedPrefixVelocity:
		res = problemResult(route, http.StatusTooManyRequests, ProblemPrefixRateLimited,
			"Too many new destinations in this number range right now."+retry)
	default:
		res = problemResult(route, http.StatusTooManyRequests, ProblemRateLimited,
			"Too many notifications for this destination in this window."+retry)
	}
	if res.status == http.StatusTooManyRequests {
		secs := max(0, int((r.RetryAfter+time.Second-1)/time.Second))
		res.headers = map[string]string{HeaderRetryAfter: strconv.Itoa(secs)}
		if sub.Record.State == notify.StateRefused {
			res.problem.State, res.problem.Reason = sub.Record.State, sub.Record.Reason
			res.notifID = sub.Record.NotificationID
		}
		if sub.Replayed {
			res.headers[HeaderIdempotentReplayed] = "true"
		}
	}
	res.key, res.refusal, res.replayed = sub.Key, r, sub.Replayed
	return res
}

// keyedError answers the errors that every request naming a notification by its key can meet:
// a refused key (validationResult), no notification with it (404) and anything else (500),
// the last two naming the key for the log. Each route handles its own errors before this.
func keyedError(route, key string, err error) result {
	if errors.As(err, new(*notify.ValidationError)) {
		return validationResult(route, err)
	}
	r := internalError(route, err)
	if errors.Is(err, notify.ErrNotFound) {
		r = notFound(route)
	}
	r.key = key
	return r
}

func notFound(route string) result {
	return problemResult(route, http.StatusNotFound, ProblemNotificationNotFound, "No notification has this idempotency key.")
}

func problemResult(route string, status int, t ProblemType, detail string) result {
	return result{status: status, route: route, problem: newProblem(t, status, detail)}
}

// validationResult maps a *notify.ValidationError (a refused body, or a refused key in the
// path) to its problem.
func validationResult(route string, err error) result {
	var ve *notify.ValidationError
	if !errors.As(err, &ve) {
		return internalError(route, err)
	}
	var r result
	switch ve.Kind {
	case notify.ProblemMalformed:
		r = problemResult(route, http.StatusBadRequest, ProblemMalformedRequest, "The body must be exactly one JSON object.")
	case notify.ProblemKeyMismatch:
		r = problemResult(route, http.StatusBadRequest, ProblemKeyMismatch,
			"The Idempotency-Key header and the idempotency_key field must be equal when both are given.")
	case notify.ProblemInvalidKey:
		r = problemResult(route, http.StatusBadRequest, ProblemInvalidRequest, "The key in the path is invalid; see errors.")
	default:
		r = problemResult(route, http.StatusBadRequest, ProblemInvalidRequest, "One or more fields are invalid; see errors.")
	}
	r.problem.Errors = ve.Fields
	return r
}

// unescapeKey unescapes a key taken from the path when it holds "%". API Gateway and the
// local gateway hand path parameters over decoded; no valid key contains "%", so unescaping
// once more is safe, and notify.CheckKey judges the result.
func unescapeKey(raw string) string {
	if strings.Contains(raw, "%") {
		if k, err := url.PathUnescape(raw); err == nil {
			return k
		}
	}
	return raw
}

// callerOf returns the principal that sent ev, in canonical form (notify.CanonicalPrincipal):
// the IAM identity API Gateway puts in the request context of a route with IAM authorization
// (requestContext.authorizer.iam.userArn), a role for any of its sessions. It returns "" when
// ev carries none, or one that names no principal: then ev reads nothing, and a POST is
// refused (notify.ErrNoCaller, a 500 whose cause is logged), since only a route without IAM
// authorization, a template error, delivers such an event.
func callerOf(ev events.APIGatewayV2HTTPRequest) string {
	a := ev.RequestContext.Authorizer
	if a == nil || a.IAM == nil || a.IAM.UserARN == "" {
		return ""
	}
	p, err := notify.CanonicalPrincipal(a.IAM.UserARN)
	if err != nil {
		return ""
	}
	return p
}

// routeKey returns the matched route key of ev, from the top level or the request context.
func routeKey(ev events.APIGatewayV2HTTPRequest) string {
	if ev.RouteKey != "" {
		return ev.RouteKey
	}
	return ev.RequestContext.RouteKey
}

// routeOf names the route of ev for logs, from the route key when it is one of ours.
func routeOf(ev events.APIGatewayV2HTTPRequest) string {
	switch k := routeKey(ev); k {
	case RouteSubmit, RouteStatus, RouteCancel, RouteConvert:
		return k
	}
	return routeUnmatched
}

// methodOf returns the request method for logs: one of the standard ones, or OTHER, so that no
// client-chosen token reaches a log line.
func methodOf(ev events.APIGatewayV2HTTPRequest) string {
	m := strings.ToUpper(ev.RequestContext.HTTP.Method)
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// lowerHeaders returns headers keyed by lower-case name. HTTP API v2 already lower-cases them;
// local callers may not.
func lowerHeaders(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[strings.ToLower(k)] = v
	}
	return out
}

// isJSON reports whether a Content-Type value is application/json with no charset or utf-8.
func isJSON(contentType string) bool {
	if contentType == "" {
		return false
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// headerKey returns the Idempotency-Key header value. The IETF draft makes it a Structured
// Field string ("quoted"); a bare token is accepted too, as most clients send one.
func headerKey(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}
