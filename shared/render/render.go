package render

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// DefaultMaxSegments is the segment budget when configuration sets none: two, so a reset link
// of up to MaxURLLen characters fits in every template while a runaway param cannot turn one
// notification into a long, expensive concatenated message.
const DefaultMaxSegments = 2

// MaxURLLen is the longest reset_url or link that every template of every locale fits within
// DefaultMaxSegments, as long as the URL is GSM-7 (plain ASCII URLs are, except for a few
// characters such as ` that force UCS-2). A test checks it. Intake may refuse longer URLs at
// admission with Check, so a request that can never be rendered is refused up front.
const MaxURLLen = 200

// Errors of Render. They never carry a param value.
var (
	// ErrTooLong means the body would take more segments than the budget allows.
	ErrTooLong = errors.New("message does not fit the SMS segment budget")
	// ErrUnknownPurpose means no template exists for the purpose.
	ErrUnknownPurpose = errors.New("no template for the purpose")
	// ErrMissingParam means the params do not hold what the purpose's template needs.
	ErrMissingParam = errors.New("params do not hold what the template needs")
)

// Message is a rendered SMS. Body is a secret: String, GoString and LogValue leave it out.
type Message struct {
	Body string
	// Locale is the locale whose template was used, after fallback.
	Locale string
	// Template names the template, e.g. "password_reset/url".
	Template string
	Count
}

// String describes m without its body.
func (m Message) String() string {
	return fmt.Sprintf("render.Message{Template:%s Locale:%s Encoding:%s Units:%d Segments:%d Body:<redacted>}",
		m.Template, m.Locale, m.Encoding, m.Units, m.Segments)
}

// GoString is String, so %#v does not print the body either.
func (m Message) GoString() string { return m.String() }

// LogValue implements slog.LogValuer without the body.
func (m Message) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("template", m.Template),
		slog.String("locale", m.Locale),
		slog.String("encoding", string(m.Encoding)),
		slog.Int("units", m.Units),
		slog.Int("segments", m.Segments),
	)
}

// Renderer renders messages within a segment budget. The zero value uses DefaultMaxSegments.
type Renderer struct {
	// MaxSegments is the budget; 0 or less means DefaultMaxSegments.
	MaxSegments int
}

// New returns a Renderer with a budget of maxSegments (DefaultMaxSegments when 0 or less).
func New(maxSegments int) *Renderer { return &Renderer{MaxSegments: maxSegments} }

// Budget returns the segment budget in effect.
func (r *Renderer) Budget() int {
	if r == nil || r.MaxSegments <= 0 {
		return DefaultMaxSegments
	}
	return r.MaxSegments
}

// Render returns the message for purpose in locale with params, or an error wrapping
// ErrUnknownPurpose, ErrMissingParam or ErrTooLong. password_reset uses its link template when
// params hold reset_url and its code template when they hold code.
func (r *Renderer) Render(purpose, locale string, params map[string]string) (Message, error) {
	name, data, err := pick(purpose, params)
	if err != nil {
		return Message{}, err
	}
	loc := ResolveLocale(locale)
	text, _ := lookup(loc, name)
	body, err := fill(text, data)
	if err != nil {
		return Message{}, fmt.Errorf("render %s %s: %w", name, loc, err)
	}
	m := Message{Body: body, Locale: loc, Template: name}
	m.Count = Segments(m.Body)
	if m.Segments > r.Budget() {
		return Message{}, fmt.Errorf("render %s %s: %s %d units in %d segments, budget %d: %w",
			name, loc, m.Encoding, m.Units, m.Segments, r.Budget(), ErrTooLong)
	}
	return m, nil
}

// Check reports whether Render would succeed, without returning the body.
func (r *Renderer) Check(purpose, locale string, params map[string]string) error {
	_, err := r.Render(purpose, locale, params)
	return err
}

// values is what a template may use.
type values struct {
	URL, Code, Link string
}

// pick names the template for purpose and gathers its values.
func pick(purpose string, params map[string]string) (string, values, error) {
	need := func(param string) (string, error) {
		v := params[param]
		if v == "" {
			return "", fmt.Errorf("render %s: param %s missing: %w", purpose, param, ErrMissingParam)
		}
		return v, nil
	}
	switch purpose {
	case notify.PurposePasswordReset:
		if params[notify.ParamResetURL] != "" {
			return TemplatePasswordResetURL, values{URL: params[notify.ParamResetURL]}, nil
		}
		code, err := need(notify.ParamCode)
		return TemplatePasswordResetCode, values{Code: code}, err
	case notify.PurposeOneTimeCode:
		code, err := need(notify.ParamCode)
		return TemplateOneTimeCode, values{Code: code}, err
	case notify.PurposeMagicLink:
		link, err := need(notify.ParamLink)
		return TemplateMagicLink, values{Link: link}, err
	}
	return "", values{}, fmt.Errorf("render: purpose %q: %w", safe(purpose), ErrUnknownPurpose)
}

// safe keeps an unexpected purpose string short and printable in an error.
func safe(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

// FallbackLocale is the locale used when nothing closer is supported.
const FallbackLocale = notify.DefaultLocale

// ResolveLocale returns the supported locale used for locale: the exact tag, else the
// supported locale of the same language, else FallbackLocale.
func ResolveLocale(locale string) string {
	if hasLocale(locale) {
		return locale
	}
	lang, _, _ := strings.Cut(locale, "-")
	if loc := language(strings.ToLower(lang)); loc != "" {
		return loc
	}
	return FallbackLocale
}

// Locales returns the supported locales, sorted.
func Locales() []string {
	var out []string
	for _, s := range sources {
		if !slices.Contains(out, s.locale) {
			out = append(out, s.locale)
		}
	}
	sort.Strings(out)
	return out
}

// TemplateNames returns the names of the templates every locale has, sorted.
func TemplateNames() []string {
	var out []string
	for _, s := range sources {
		if s.locale == FallbackLocale {
			out = append(out, s.name)
		}
	}
	sort.Strings(out)
	return out
}
