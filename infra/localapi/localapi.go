// Package localapi serves Lambda handlers for API Gateway HTTP APIs (payload format 2.0) on a
// plain net/http server, for the local stack. Routes come from the ApiGatewayV2 routes that
// template.yaml declares, so the local run and AWS route the same requests
// to the same handler. It applies no IAM authorisation: the local stack is for one developer
// on loopback. Every request comes from a fixed local identity (LocalCallerRole), as API
// Gateway's IAM authorization describes its caller; a request with the header CallerHeader
// comes from the role it names instead, so that a developer or the e2e suite can act as a
// second caller. Only this local gateway honours that header: API Gateway takes the caller
// from the request's signature, and the intake function never reads the header.
package localapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// The local callers' identities.
const (
	// LocalAccount is the account of every local principal.
	LocalAccount = "000000000000"
	// LocalCallerRole is the role every local request comes from, unless CallerHeader names
	// another; each request is a session of it.
	LocalCallerRole = "resetnotify-local-caller"
	// CallerHeader names, on a local request only, the role (a name such as "second-shop")
	// the request comes from instead of LocalCallerRole.
	CallerHeader = "X-Resetnotify-Local-Caller"
)

// rolePattern is the shape of a role name IAM accepts.
var rolePattern = regexp.MustCompile(`^[A-Za-z0-9+=,.@_-]{1,64}$`)

// HandlerFunc is the signature of an HTTP API v2 Lambda handler.
type HandlerFunc func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Route is one HttpApi event of a function: its method and path template.
type Route struct {
	Function string
	Method   string // upper case, or "ANY"
	Path     string // e.g. /v1/notifications/{key}
}

// RouteKey returns the API Gateway route key, e.g. "GET /v1/notifications/{key}".
func (r Route) RouteKey() string { return r.Method + " " + r.Path }

// RoutesFromTemplate reads the routes of the SAM template at path: every
// AWS::ApiGatewayV2::Route whose integration invokes a function of the template (the form
// template.yaml uses), and every HttpApi event of an AWS::Serverless::Function (SAM's form).
func RoutesFromTemplate(path string) ([]Route, error) {
	tpl, err := samtemplate.Load(path)
	if err != nil {
		return nil, fmt.Errorf("localapi.routes: %w", err)
	}
	var routes []Route
	for _, id := range tpl.Of("AWS::ApiGatewayV2::Route") {
		r, err := explicitRoute(tpl, id)
		if err != nil {
			return nil, fmt.Errorf("localapi.routes %s: %w", path, err)
		}
		routes = append(routes, r)
	}
	for _, name := range tpl.Of("AWS::Serverless::Function") {
		events, _ := tpl.Resources[name].Properties["Events"].(map[string]any)
		for _, raw := range events {
			ev, _ := raw.(map[string]any)
			if ev["Type"] != "HttpApi" {
				continue
			}
			props, _ := ev["Properties"].(map[string]any)
			method, _ := props["Method"].(string)
			p, _ := props["Path"].(string)
			routes = append(routes, Route{Function: name, Method: strings.ToUpper(method), Path: p})
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].RouteKey() < routes[j].RouteKey() })
	return routes, nil
}

// integrationRef matches a route's Target, !Sub integrations/${Integration}.
var integrationRef = regexp.MustCompile(`^integrations/\$\{([A-Za-z0-9]+)\}$`)

// functionArnRef finds the function in an integration's IntegrationUri (${Function.Arn}).
var functionArnRef = regexp.MustCompile(`\$\{([A-Za-z0-9]+)\.Arn\}`)

// explicitRoute follows route id to its integration and that integration's function.
func explicitRoute(tpl *samtemplate.Template, id string) (Route, error) {
	props := tpl.Resources[id].Properties
	key, _ := props["RouteKey"].(string)
	method, p, ok := strings.Cut(key, " ")
	if !ok {
		return Route{}, fmt.Errorf("route %s: route key %q is not <METHOD> <path>", id, key)
	}
	target, _ := samtemplate.Lookup(props, "Target", "Fn::Sub")
	m := integrationRef.FindStringSubmatch(fmt.Sprint(target))
	if m == nil {
		return Route{}, fmt.Errorf("route %s: Target is not !Sub integrations/${<Integration>}", id)
	}
	integ, ok := tpl.Resources[m[1]]
	if !ok || integ.Type != "AWS::ApiGatewayV2::Integration" {
		return Route{}, fmt.Errorf("route %s: no integration %s", id, m[1])
	}
	uri, _ := samtemplate.Lookup(integ.Properties, "IntegrationUri", "Fn::Sub")
	f := functionArnRef.FindStringSubmatch(fmt.Sprint(uri))
	if f == nil {
		return Route{}, fmt.Errorf("integration %s: IntegrationUri names no ${<Function>.Arn}", m[1])
	}
	// AWS::Lambda::Function is the same function after the SAM transform.
	if typ := tpl.Resources[f[1]].Type; typ != "AWS::Serverless::Function" && typ != "AWS::Lambda::Function" {
		return Route{}, fmt.Errorf("integration %s: IntegrationUri names no function of the template", m[1])
	}
	return Route{Function: f[1], Method: strings.ToUpper(method), Path: p}, nil
}

// The request limits of AWS that the server applies, so that an oversized request gets the
// answer API Gateway gives instead of an emulator's error.
const (
	// MaxAPIBody is API Gateway's limit on a request body (10 MB); a larger one is refused
	// with 413 before any function runs.
	MaxAPIBody = 10 << 20
	// MaxInvokePayload is Lambda's limit on a synchronous invocation's payload: the whole
	// event as JSON, a base64-encoded body included. API Gateway accepts a body under
	// MaxAPIBody whose event is larger, Lambda refuses the invocation, and the caller gets
	// 413 "Request Too Long"; the function never runs.
	MaxInvokePayload = 6 << 20
)

// Answers to oversized requests, in API Gateway's words.
const (
	bodyTooLarge    = `{"message":"Request Entity Too Large"}`
	payloadTooLarge = `{"message":"Request Too Long"}`
)

// Server turns HTTP requests into HTTP API v2 events for the handlers of matching routes.
type Server struct {
	routes   []Route
	handlers map[string]HandlerFunc // by function logical ID
	// MaxBody bounds how much of a request body is read (MaxAPIBody).
	MaxBody int64
	// MaxPayload bounds the size of the event as JSON (MaxInvokePayload).
	MaxPayload int
	seq        atomic.Int64
}

// NewServer returns a server for routes whose functions have a handler in handlers. A route
// whose function has no handler answers 501, so a missing wiring is visible.
func NewServer(routes []Route, handlers map[string]HandlerFunc) *Server {
	return &Server{routes: routes, handlers: handlers, MaxBody: MaxAPIBody, MaxPayload: MaxInvokePayload}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, params, ok := s.match(r.Method, r.URL.EscapedPath())
	if !ok {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	h, ok := s.handlers[route.Function]
	if !ok {
		http.Error(w, `{"message":"no local handler for `+route.Function+`"}`, http.StatusNotImplemented)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.MaxBody+1))
	if err != nil || int64(len(body)) > s.MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, bodyTooLarge)
		return
	}
	role := LocalCallerRole
	if v := r.Header.Get(CallerHeader); v != "" {
		if !rolePattern.MatchString(v) {
			writeError(w, http.StatusForbidden, `{"message":"`+CallerHeader+` must be a role name"}`)
			return
		}
		role = v
	}
	ev := s.event(r, route, params, body)
	ev.RequestContext.Authorizer = Caller(role)
	if len(body) > s.MaxPayload/2 { // only a large body can make the event too large
		if raw, err := json.Marshal(ev); err != nil || len(raw) > s.MaxPayload {
			writeError(w, http.StatusRequestEntityTooLarge, payloadTooLarge)
			return
		}
	}
	resp, err := h(r.Context(), ev)
	if err != nil {
		// API Gateway answers a function error with a bare 500; so do we.
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusInternalServerError)
		return
	}
	writeResponse(w, resp)
}

func (s *Server) match(method, escapedPath string) (Route, map[string]string, bool) {
	for _, rt := range s.routes {
		if rt.Method != "ANY" && rt.Method != method {
			continue
		}
		if params, ok := matchPath(rt.Path, escapedPath); ok {
			return rt, params, true
		}
	}
	return Route{}, nil, false
}

// matchPath matches a path template with {name} segments against an escaped request path and
// returns the unescaped parameter values, as API Gateway does.
func matchPath(template, path string) (map[string]string, bool) {
	ts := strings.Split(strings.Trim(template, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	if len(ts) != len(ps) {
		return nil, false
	}
	params := map[string]string{}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			v, err := url.PathUnescape(ps[i])
			if err != nil || v == "" {
				return nil, false
			}
			params[strings.Trim(t, "{}")] = v
			continue
		}
		if t != ps[i] {
			return nil, false
		}
	}
	return params, true
}

func (s *Server) event(r *http.Request, route Route, params map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	query := map[string]string{}
	for k, v := range r.URL.Query() {
		query[k] = strings.Join(v, ",")
	}
	now := time.Now().UTC()
	id := fmt.Sprintf("local-%d-%d", now.UnixMilli(), s.seq.Add(1))
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.RouteKey(),
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   route.RouteKey(),
			AccountID:  LocalAccount,
			Stage:      "$default",
			RequestID:  id,
			APIID:      "local",
			DomainName: r.Host,
			Time:       now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.EscapedPath(),
				Protocol:  r.Proto,
				SourceIP:  strings.Split(r.RemoteAddr, ":")[0],
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	if len(r.Cookies()) > 0 {
		for _, c := range r.Cookies() {
			ev.Cookies = append(ev.Cookies, c.String())
		}
	}
	return ev
}

// Caller is the IAM authorizer context of a request from a session of role, as API
// Gateway fills it for a route with IAM authorization.
func Caller(role string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			AccountID: LocalAccount,
			CallerID:  "AROALOCAL:" + role,
			UserARN:   "arn:aws:sts::" + LocalAccount + ":assumed-role/" + role + "/local",
			UserID:    "AROALOCAL:" + role,
		},
	}
}

// writeError answers with one of API Gateway's own JSON errors.
func writeError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func writeResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
