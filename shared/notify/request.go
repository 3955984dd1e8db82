package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// ChannelSMS is the only channel so far.
const ChannelSMS = "sms"

// The purposes a notification may serve, and the params each one takes.
const (
	PurposePasswordReset = "password_reset"
	PurposeOneTimeCode   = "one_time_code"
	PurposeMagicLink     = "magic_link"
)

// The param names. Their values are secrets: they are sealed and never logged or audited.
const (
	ParamResetURL = "reset_url"
	ParamCode     = "code"
	ParamLink     = "link"
)

// purposeParams lists, per purpose, the params it accepts; exactly one of them is required.
var purposeParams = map[string][]string{
	PurposePasswordReset: {ParamResetURL, ParamCode},
	PurposeOneTimeCode:   {ParamCode},
	PurposeMagicLink:     {ParamLink},
}

// Limits on request fields.
const (
	MaxKeyLen     = 200
	MaxEventIDLen = 128
	MaxURLLen     = 1024
	DefaultLocale = "en"
)

var (
	keyPattern    = regexp.MustCompile(`^[A-Za-z0-9._:~-]+$`)
	e164Pattern   = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	localePattern = regexp.MustCompile(`^[a-z]{2,3}(-[A-Z]{2})?$`)
	codePattern   = regexp.MustCompile(`^[A-Za-z0-9]{4,12}$`)
	// fieldNamePattern admits names that can be echoed in an error: no digits first, no "+".
	fieldNamePattern = regexp.MustCompile(`^[a-z_][a-z_.]{0,63}$`)
	urlPattern       = regexp.MustCompile(URLPattern)
)

// URLPattern is the only form a reset_url or link may take, besides being at most MaxURLLen
// characters long: "https://" in lower case; a DNS host name of two or more labels of ASCII
// letters, digits and hyphens (1 to 63 characters, no hyphen first or last), the last label
// starting with a letter, so that no IPv4 literal passes (nor an IPv6 one, whose brackets no
// label admits); no userinfo ("@" before the host), no port (not even :443), no fragment; then
// an optional path and an optional query of the characters RFC 3986 leaves unescaped there
// and %-escapes of two hex digits. Every other character, such as a space, a control
// character, a backslash or anything not ASCII (bidi controls included), is refused wherever
// it stands. openapi.yaml's HTTPSURL schema has the same pattern, and the root openapi tests
// hold the two to the same verdicts, case by case.
const URLPattern = `^https://` +
	`([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?` +
	`(/([A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?` +
	`(\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$`

// ValidURL reports whether s may be a reset_url or a link: at most MaxURLLen characters
// that match URLPattern.
func ValidURL(s string) bool {
	return len(s) <= MaxURLLen && urlPattern.MatchString(s)
}

// Request is a validated notification request. To and Params are secrets.
type Request struct {
	IdempotencyKey string
	EventID        string
	Channel        string
	Purpose        string
	To             string
	Locale         string
	Params         map[string]string
	ExpiresAt      time.Time
}

// Secret is the part of a request that is sealed at rest and removed once sending is done.
type Secret struct {
	To     string            `json:"to"`
	Params map[string]string `json:"params"`
	Locale string            `json:"locale"`
}

// Secret returns the sealed part of the request.
func (r Request) Secret() Secret { return Secret{To: r.To, Params: r.Params, Locale: r.Locale} }

// ProblemKind classifies why a request was refused, so an adapter can map it to a status.
type ProblemKind string

// The kinds of refused request.
const (
	ProblemMalformed   ProblemKind = "malformed"    // the body is not a JSON object
	ProblemInvalid     ProblemKind = "invalid"      // fields fail validation
	ProblemKeyMismatch ProblemKind = "key-mismatch" // header and body keys disagree
	ProblemInvalidKey  ProblemKind = "invalid-key"  // a key to read or cancel by is invalid
)

// FieldError names one invalid field. Detail never repeats the submitted value.
type FieldError struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// ValidationError reports a refused request with every field that failed.
type ValidationError struct {
	Kind   ProblemKind
	Fields []FieldError
}

// Error lists the failing fields without their values.
func (e *ValidationError) Error() string {
	parts := make([]string, 0, len(e.Fields))
	for _, f := range e.Fields {
		parts = append(parts, f.Field+": "+f.Detail)
	}
	return fmt.Sprintf("request %s: %s", e.Kind, strings.Join(parts, "; "))
}

// wireRequest is the JSON body. Pointers tell a missing field from an empty one.
type wireRequest struct {
	IdempotencyKey *string            `json:"idempotency_key"`
	EventID        *string            `json:"event_id"`
	Channel        *string            `json:"channel"`
	Purpose        *string            `json:"purpose"`
	To             *string            `json:"to"`
	Locale         *string            `json:"locale"`
	Params         *map[string]string `json:"params"`
	ExpiresAt      *string            `json:"expires_at"`
}

// ParseRequest decodes and validates a request body. headerKey is the Idempotency-Key header
// ("" when absent). Unknown fields are refused; the key comes from the header, else the body,
// else it is derived as <event_id>:<channel>:<purpose>. A body that is JSON null, or whose
// objects repeat a member name (compared without regard to case, as encoding/json matches
// fields), is malformed. The returned error is always a *ValidationError and never contains a
// submitted value.
func ParseRequest(body []byte, headerKey string, now time.Time, p Policy) (Request, error) {
	w, err := decodeRequest(body)
	if err != nil {
		return Request{}, err
	}
	var v validator
	req := v.request(w)
	req.ExpiresAt = v.expiresAt(w.ExpiresAt, now, p)
	bodyKey := ""
	if w.IdempotencyKey != nil {
		bodyKey = *w.IdempotencyKey
		v.key("idempotency_key", bodyKey)
	}
	if headerKey != "" {
		v.key("Idempotency-Key", headerKey)
	}
	if err := v.err(); err != nil {
		return Request{}, err
	}
	if headerKey != "" && w.IdempotencyKey != nil && headerKey != bodyKey {
		return Request{}, &ValidationError{Kind: ProblemKeyMismatch, Fields: []FieldError{{
			Field: "idempotency_key", Detail: "differs from the Idempotency-Key header",
		}}}
	}
	switch {
	case headerKey != "":
		req.IdempotencyKey = headerKey
	case bodyKey != "":
		req.IdempotencyKey = bodyKey
	default:
		req.IdempotencyKey = req.EventID + ":" + req.Channel + ":" + req.Purpose
	}
	return req, nil
}

// decodeRequest decodes body strictly: one JSON object, no repeated or unknown members.
func decodeRequest(body []byte) (wireRequest, error) {
	if err := checkStrictJSON(body); err != nil {
		return wireRequest{}, &ValidationError{Kind: ProblemMalformed, Fields: []FieldError{{Field: "body", Detail: err.Error()}}}
	}
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return wireRequest{}, malformed(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wireRequest{}, &ValidationError{Kind: ProblemMalformed, Fields: []FieldError{{Field: "body", Detail: "must hold exactly one JSON object"}}}
	}
	return w, nil
}

// request validates w's fields but the key and expires_at, and returns them as a Request.
func (v *validator) request(w wireRequest) Request {
	req := Request{
		EventID: v.required("event_id", w.EventID),
		Channel: v.required("channel", w.Channel),
		Purpose: v.required("purpose", w.Purpose),
		To:      v.required("to", w.To),
		Locale:  DefaultLocale,
	}
	if w.Locale != nil {
		req.Locale = *w.Locale
	}
	if req.EventID != "" && (len(req.EventID) > MaxEventIDLen || !keyPattern.MatchString(req.EventID)) {
		v.add("event_id", fmt.Sprintf("must be 1 to %d characters of A-Z a-z 0-9 . _ : ~ -", MaxEventIDLen))
	}
	if req.Channel != "" && req.Channel != ChannelSMS {
		v.add("channel", `must be "sms"`)
	}
	allowedParams, knownPurpose := purposeParams[req.Purpose]
	if req.Purpose != "" && !knownPurpose {
		v.add("purpose", "must be one of "+strings.Join(Purposes(), ", "))
	}
	if req.To != "" && !e164Pattern.MatchString(req.To) {
		v.add("to", "must be an E.164 number: + then 7 to 15 digits")
	}
	if !localePattern.MatchString(req.Locale) {
		v.add("locale", `must be a language tag such as "en" or "pt-BR"`)
	}
	if w.Params == nil {
		v.add("params", "is required")
	} else if knownPurpose {
		req.Params = v.params(req.Purpose, allowedParams, *w.Params)
	}
	return req
}

// expiresAt validates expires_at: required, RFC 3339 with a zone, at most MaxAhead ahead of
// now and at most MaxLateness behind it. It returns the time in UTC when it parses.
func (v *validator) expiresAt(s *string, now time.Time, p Policy) time.Time {
	if s == nil {
		v.add("expires_at", "is required")
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		v.add("expires_at", "must be an RFC 3339 timestamp with a zone")
		return time.Time{}
	}
	t = t.UTC()
	switch {
	case t.After(now.Add(p.MaxAhead)):
		v.add("expires_at", fmt.Sprintf("must be at most %s ahead", p.MaxAhead))
	case t.Before(now.Add(-p.MaxLateness)):
		v.add("expires_at", fmt.Sprintf("is more than %s in the past", p.MaxLateness))
	}
	return t
}

// CheckKey returns a *ValidationError of kind ProblemInvalidKey, for the field "key", when key
// cannot name a notification.
func CheckKey(key string) error {
	var v validator
	v.key("key", key)
	if len(v.fields) == 0 {
		return nil
	}
	return &ValidationError{Kind: ProblemInvalidKey, Fields: v.fields}
}

// ValidKey reports whether key can name a notification.
func ValidKey(key string) bool {
	return key != "" && len(key) <= MaxKeyLen && keyPattern.MatchString(key)
}

// Purposes returns the known purposes, sorted.
func Purposes() []string {
	out := make([]string, 0, len(purposeParams))
	for p := range purposeParams {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// malformed describes a JSON decoding failure without quoting the input.
func malformed(err error) *ValidationError {
	detail := "is not a valid JSON object"
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return &ValidationError{Kind: ProblemInvalid, Fields: []FieldError{{Field: safeName(typeErr.Field), Detail: "has the wrong JSON type"}}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &ValidationError{Kind: ProblemInvalid, Fields: []FieldError{{Field: safeName(name), Detail: "is not a known field"}}}
	}
	return &ValidationError{Kind: ProblemMalformed, Fields: []FieldError{{Field: "body", Detail: detail}}}
}

type validator struct{ fields []FieldError }

func (v *validator) add(field, detail string) {
	v.fields = append(v.fields, FieldError{Field: field, Detail: detail})
}

func (v *validator) required(field string, s *string) string {
	if s == nil || *s == "" {
		v.add(field, "is required")
		return ""
	}
	return *s
}

func (v *validator) key(field, key string) {
	if !ValidKey(key) {
		v.add(field, fmt.Sprintf("must be 1 to %d characters of A-Z a-z 0-9 . _ : ~ -", MaxKeyLen))
	}
}

func (v *validator) params(purpose string, allowed []string, in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for name, val := range in {
		if !contains(allowed, name) {
			v.add("params."+safeName(name), fmt.Sprintf("is not a param of %s", purpose))
			continue
		}
		out[name] = val
	}
	if len(out) != 1 {
		v.add("params", "must hold exactly one of "+strings.Join(allowed, ", "))
		return nil
	}
	for name, val := range out {
		switch name {
		case ParamCode:
			if !codePattern.MatchString(val) {
				v.add("params."+name, "must be 4 to 12 letters or digits")
			}
		case ParamResetURL, ParamLink:
			if !ValidURL(val) {
				v.add("params."+name, fmt.Sprintf("must be an https URL of at most %d characters on a DNS host name, "+
					"without user, port or fragment, in printable ASCII", MaxURLLen))
			}
		}
	}
	return out
}

func (v *validator) err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return &ValidationError{Kind: ProblemInvalid, Fields: v.fields}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// safeName keeps a client-chosen param name out of an error unless it is short and plain.
func safeName(name string) string {
	if !fieldNamePattern.MatchString(name) {
		return "(unnamed)"
	}
	return name
}

// Canonical returns the canonical form of the request that its fingerprint is computed from:
// the JSON of every field but the idempotency key, with keys sorted and the expiry in UTC. Two
// requests with the same key must have the same canonical form to count as a replay. It holds
// the number and the params: it is hashed under a secret key (RequestHasher), never stored.
func (r Request) Canonical() []byte {
	canonical := struct {
		Channel   string            `json:"channel"`
		EventID   string            `json:"event_id"`
		ExpiresAt string            `json:"expires_at"`
		Locale    string            `json:"locale"`
		Params    map[string]string `json:"params"`
		Purpose   string            `json:"purpose"`
		To        string            `json:"to"`
	}{r.Channel, r.EventID, r.ExpiresAt.UTC().Format(time.RFC3339Nano), r.Locale, r.Params, r.Purpose, r.To}
	b, err := json.Marshal(canonical)
	if err != nil {
		panic("notify: marshal canonical request: " + err.Error()) // strings and a map of strings always marshal
	}
	return b
}
