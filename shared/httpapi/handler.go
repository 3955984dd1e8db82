package httpapi

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
)

// CollectionPath is the path of the notifications collection.
const CollectionPath = "/v1/notifications"

// PathParamKey names the path parameter that carries the idempotency key.
const PathParamKey = "key"

// MaxBodyBytes bounds the decoded size of a POST body.
const MaxBodyBytes = 8 << 10

// RetryAfterSeconds is the Retry-After of a 503 when the dispatch queue was unavailable.
const RetryAfterSeconds = 2

// Response header names. API Gateway passes them through as written.
const (
	HeaderContentType        = "Content-Type"
	HeaderLocation           = "Location"
	HeaderIdempotentReplayed = "Idempotent-Replayed"
	HeaderRetryAfter         = "Retry-After"
	HeaderAllow              = "Allow"
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

// Handler adapts API Gateway HTTP API (payload format 2.0) events to the notify.Intake
// service and back. It holds no business rule: validation is notify.ParseRequest, admission,
// status and cancellation are the Intake's.
type Handler struct {
	intake  *notify.Intake
	log     *slog.Logger
	metrics *obs.Metrics
}

// New returns a handler for in. A nil log discards; a nil metrics emits nothing.
func New(in *notify.Intake, log *slog.Logger, metrics *obs.Metrics) *Handler {
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
}

// Handle answers one HTTP API v2 event. It never returns an error: every failure is an
// application/problem+json response, so API Gateway never substitutes its own.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	requestID := ev.RequestContext.RequestID
	if requestID == "" {
		requestID = ulid.Make().String()
	}
	res := h.dispatch(ctx, ev)
	resp := h.respond(res, requestID)
	h.record(ctx, obs.WithSecrets(h.log, requestSecrets(ev)...), ev, res, requestID, time.Since(start))
	return resp, nil
}

// dispatch routes ev, turning a panic into a 500 whose cause is not echoed.
func (h *Handler) dispatch(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (res result) {
	defer func() {
		if v := recover(); v != nil {
			res = internalError(routeOf(ev), errors.New("panic in handler"))
		}
	}()
	return h.route(ctx, ev)
}

// route picks the operation from the route key API Gateway matched, or, for a $default or
// ANY route and local callers that set none, from the method and raw path.
func (h *Handler) route(ctx context.Context, ev events.APIGatewayV2HTTPRequest) result {
	switch routeKey(ev) {
	case RouteSubmit:
		return h.submit(ctx, ev)
	case RouteStatus:
		return h.status(ctx, pathKey(ev))
	case RouteCancel:
		return h.cancel(ctx, pathKey(ev))
	}
	method := strings.ToUpper(ev.RequestContext.HTTP.Method)
	path := stripStage(rawPath(ev), ev.RequestContext.Stage)
	switch {
	case path == CollectionPath:
		if method == http.MethodPost {
			return h.submit(ctx, ev)
		}
		return methodNotAllowed(http.MethodPost)
	case strings.HasPrefix(path, CollectionPath+"/"):
		seg := strings.TrimPrefix(path, CollectionPath+"/")
		if seg == "" || strings.Contains(seg, "/") {
			break
		}
		switch method {
		case http.MethodGet:
			return h.status(ctx, seg)
		case http.MethodDelete:
			return h.cancel(ctx, seg)
		}
		return methodNotAllowed(http.MethodGet + ", " + http.MethodDelete)
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

	req, err := notify.ParseRequest(body, headerKey(hdr["idempotency-key"]), h.intake.Clock.Now(), h.intake.Policy)
	if err != nil {
		return validationResult(route, err)
	}
	sub, err := h.intake.Submit(ctx, req)
	res := result{route: route, key: req.IdempotencyKey, notifID: sub.Record.NotificationID, replayed: sub.Replayed}
	var refused *notify.RefusedError
	switch {
	case errors.As(err, new(*notify.ValidationError)):
		return validationResult(route, err)
	case errors.As(err, &refused):
		return refusalResult(route, req.IdempotencyKey, refused)
	case errors.Is(err, notify.ErrKeyReuse):
		res.status = http.StatusUnprocessableEntity
		res.problem = newProblem(ProblemKeyReused, res.status,
			"This idempotency key was already used with a different request. Use a new key for a new request.")
		return res
	case errors.Is(err, notify.ErrEnqueue):
		res.status = http.StatusServiceUnavailable
		res.problem = newProblem(ProblemQueueUnavailable, res.status,
			"The notification is stored but could not be queued for dispatch. Repeat the same request to queue it again.")
		res.headers = map[string]string{HeaderRetryAfter: strconv.Itoa(RetryAfterSeconds)}
		res.cause = err
		return res
	case err != nil:
		r := internalError(route, err)
		r.key = req.IdempotencyKey
		return r
	}
	res.body = NewStatusView(sub.Record)
	if sub.Replayed {
		res.status = http.StatusOK
		res.headers = map[string]string{HeaderIdempotentReplayed: "true"}
		return res
	}
	res.status = http.StatusAccepted
	res.headers = map[string]string{HeaderLocation: CollectionPath + "/" + url.PathEscape(sub.Record.IdempotencyKey)}
	h.metrics.Transition(string(sub.Record.State), string(sub.Record.Reason))
	return res
}

func (h *Handler) status(ctx context.Context, rawKey string) result {
	const route = RouteStatus
	key, bad := validKey(route, rawKey)
	if bad != nil {
		return *bad
	}
	rec, err := h.intake.Status(ctx, key)
	switch {
	case errors.Is(err, notify.ErrNotFound):
		r := notFound(route)
		r.key = key
		return r
	case err != nil:
		r := internalError(route, err)
		r.key = key
		return r
	}
	return result{status: http.StatusOK, route: route, key: key, notifID: rec.NotificationID, body: NewStatusView(rec)}
}

func (h *Handler) cancel(ctx context.Context, rawKey string) result {
	const route = RouteCancel
	key, bad := validKey(route, rawKey)
	if bad != nil {
		return *bad
	}
	rec, err := h.intake.Cancel(ctx, key)
	res := result{route: route, key: key, notifID: rec.NotificationID}
	switch {
	case errors.Is(err, notify.ErrNotFound):
		r := notFound(route)
		r.key = key
		return r
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
		r := internalError(route, err)
		r.key = key
		return r
	}
	h.metrics.Transition(string(rec.State), string(rec.Reason))
	res.status, res.body = http.StatusOK, NewStatusView(rec)
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
		h.metrics.Refusal(string(r.Reason), r.CountryCode)
	}
	if res.route == RouteSubmit && res.status < 300 {
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
// allow-list, else 429 with Retry-After in whole seconds, rounded up.
func refusalResult(route, key string, r *notify.RefusedError) result {
	var res result
	switch r.Reason {
	case notify.RefusedCountry:
		res = problemResult(route, http.StatusUnprocessableEntity, ProblemDestinationNotAllowed,
			"Notifications to this country calling code are not allowed.")
	case notify.RefusedPrefixVelocity:
		res = problemResult(route, http.StatusTooManyRequests, ProblemPrefixRateLimited,
			"Too many new destinations in this number range right now. Nothing was stored; repeat the request after Retry-After seconds.")
	default:
		res = problemResult(route, http.StatusTooManyRequests, ProblemRateLimited,
			"Too many notifications for this destination in this window. Nothing was stored; repeat the request after Retry-After seconds.")
	}
	if res.status == http.StatusTooManyRequests {
		secs := max(1, int((r.RetryAfter+time.Second-1)/time.Second))
		res.headers = map[string]string{HeaderRetryAfter: strconv.Itoa(secs)}
	}
	res.key, res.refusal = key, r
	return res
}

func notFound(route string) result {
	return problemResult(route, http.StatusNotFound, ProblemNotificationNotFound, "No notification has this idempotency key.")
}

func methodNotAllowed(allow string) result {
	return result{status: http.StatusMethodNotAllowed, route: routeUnmatched,
		headers: map[string]string{HeaderAllow: allow},
		problem: newProblem(ProblemMethodNotAllowed, http.StatusMethodNotAllowed, "This path allows "+allow+".")}
}

func problemResult(route string, status int, t ProblemType, detail string) result {
	return result{status: status, route: route, problem: newProblem(t, status, detail)}
}

// validationResult maps a refusal from notify.ParseRequest to its problem.
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
	default:
		r = problemResult(route, http.StatusBadRequest, ProblemInvalidRequest, "One or more fields are invalid; see errors.")
	}
	r.problem.Errors = ve.Fields
	return r
}

// validKey unescapes and checks a key taken from the path. API Gateway hands path parameters
// over decoded, the raw path is not; no valid key contains "%", so unescaping is safe either
// way.
func validKey(route, raw string) (string, *result) {
	key := raw
	if strings.Contains(key, "%") {
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
	}
	if !notify.ValidKey(key) {
		r := problemResult(route, http.StatusBadRequest, ProblemInvalidRequest, "The key in the path is invalid; see errors.")
		r.problem.Errors = []notify.FieldError{{Field: PathParamKey,
			Detail: "must be 1 to " + strconv.Itoa(notify.MaxKeyLen) + " characters of A-Z a-z 0-9 . _ : ~ -"}}
		return "", &r
	}
	return key, nil
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
	case RouteSubmit, RouteStatus, RouteCancel:
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

func rawPath(ev events.APIGatewayV2HTTPRequest) string {
	if ev.RawPath != "" {
		return ev.RawPath
	}
	return ev.RequestContext.HTTP.Path
}

// pathKey returns the key path parameter, or the last segment of the raw path when the event
// carries no parameters.
func pathKey(ev events.APIGatewayV2HTTPRequest) string {
	if k, ok := ev.PathParameters[PathParamKey]; ok {
		return k
	}
	p := rawPath(ev)
	return p[strings.LastIndex(p, "/")+1:]
}

// stripStage removes a named stage's prefix from a raw path; the $default stage has none.
func stripStage(path, stage string) string {
	if stage == "" || stage == "$default" {
		return path
	}
	if rest, ok := strings.CutPrefix(path, "/"+stage+"/"); ok {
		return "/" + rest
	}
	return path
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
