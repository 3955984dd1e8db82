// Package obs sets up the functions' observability: a JSON log/slog logger with a redaction
// guard, and CloudWatch Embedded Metric Format (EMF) lines for requests and transitions. It
// uses the standard library only.
//
// The guard is a second line of defence. Code must never log a phone number, a param, a
// request body or a sealed payload in the first place; the guard blanks attributes whose name
// says they hold one, and masks anything in a logged string or error that looks like an E.164
// number (with +, %2B, 00 or nothing before it, with or without spaces, dots, dashes or
// brackets between the digits) or a URL, so a mistake does not become a leak. WithSecrets
// adds the exact values one request carried (its number and every param value), masked
// wherever they appear.
package obs

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
)

// Redacted replaces a value the guard refused to log.
const Redacted = "[REDACTED]"

// sensitiveKeys are attribute names whose value is never logged, whatever it holds.
var sensitiveKeys = map[string]bool{
	"to": true, "phone": true, "phone_number": true, "destination": true, "e164": true,
	"params": true, "param": true, "reset_url": true, "code": true, "link": true, "url": true,
	"body": true, "raw_body": true, "payload": true, "sealed": true, "secret": true,
	"token": true, "authorization": true, "password": true, "pepper": true, "key_material": true,
}

var (
	// e164Like matches an E.164 number written with an international prefix (+, its URL
	// encoding %2B, or 00): 7 to 15 digits, the first not 0, separators allowed between them.
	e164Like = regexp.MustCompile(`(?i)(?:\+|%2B|\b00)[\s(]{0,2}[1-9](?:[\s.()-]{0,2}[0-9]){6,14}`)
	// bareE164Like matches one written without a prefix: 10 to 15 digits, the first not 0,
	// not inside a longer run of letters or digits (so dates, stream sequence numbers and
	// zero-padded versions pass). Group 1 and 2 keep the characters around it.
	bareE164Like = regexp.MustCompile(`(^|[^0-9A-Za-z+%])([1-9](?:[\s.()-]{0,2}[0-9]){9,14})([^0-9A-Za-z]|$)`)
	// urlLike matches an absolute http(s) URL up to the next space or quote.
	urlLike = regexp.MustCompile(`(?i)\bhttps?:(?://|%2F%2F|\\/\\/)[^\s"'<>]*`)
)

// Redact returns s with everything that looks like an E.164 number or an http(s) URL masked.
func Redact(s string) string {
	s = urlLike.ReplaceAllString(s, Redacted)
	s = e164Like.ReplaceAllString(s, Redacted)
	return bareE164Like.ReplaceAllString(s, "${1}"+Redacted+"${3}")
}

// NewLogger returns a JSON logger writing to w at level, with the redaction guard installed.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: guard}))
}

// guard is the ReplaceAttr hook of NewLogger.
func guard(_ []string, a slog.Attr) slog.Attr {
	if sensitiveKeys[strings.ToLower(a.Key)] {
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Redact(v.String()))
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, Redact(x.String()))
		case []byte:
			return slog.String(a.Key, Redacted)
		default:
			return slog.String(a.Key, Redact(fmt.Sprint(x)))
		}
	}
	return a
}
