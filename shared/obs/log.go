// Package obs sets up the functions' observability: a JSON log/slog logger with a redaction
// guard, and CloudWatch Embedded Metric Format (EMF) lines for requests and transitions. It
// uses the standard library only.
//
// The guard is a second line of defence. Code must never log a phone number, a param, a
// request body or a sealed payload in the first place; the guard blanks attributes whose name
// says they hold one, and masks anything in a logged string or error that looks like an E.164
// number or a URL, so a mistake does not become a leak.
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
	// e164Like matches a + followed by 7 to 15 digits, with or without separators between them.
	e164Like = regexp.MustCompile(`\+[1-9](?:[\s.()-]{0,2}[0-9]){6,14}`)
	// urlLike matches an absolute http(s) URL up to the next space or quote.
	urlLike = regexp.MustCompile(`(?i)\bhttps?:(?://|%2F%2F|\\/\\/)[^\s"'<>]*`)
)

// Redact returns s with everything that looks like an E.164 number or an http(s) URL masked.
func Redact(s string) string {
	if !strings.ContainsAny(s, "+:") {
		return s
	}
	s = urlLike.ReplaceAllString(s, Redacted)
	return e164Like.ReplaceAllString(s, Redacted)
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

// ParseLevel turns a LOG_LEVEL value (debug, info, warn or error, any case) into a level. The
// empty string means info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("obs.level: want debug, info, warn or error")
}
