package obs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// WithSecrets returns a logger that masks every occurrence of each of secrets (the values one
// request carried: its number, each param) in the message and in every attribute of every
// line, on top of the guard NewLogger installs. Empty secrets are ignored; longer ones are
// masked first, so a value that contains another is masked whole.
func WithSecrets(log *slog.Logger, secrets ...string) *slog.Logger {
	var pairs []string
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	for _, s := range slices.Compact(sorted) {
		if s != "" {
			pairs = append(pairs, s, Redacted)
		}
	}
	if len(pairs) == 0 {
		return log
	}
	return slog.New(&secretHandler{next: log.Handler(), r: strings.NewReplacer(pairs...)})
}

// secretHandler masks known secret values before the wrapped handler sees a record.
type secretHandler struct {
	next slog.Handler
	r    *strings.Replacer
}

func (h *secretHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *secretHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.mask(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *secretHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = h.mask(a)
	}
	return &secretHandler{next: h.next.WithAttrs(masked), r: h.r}
}

func (h *secretHandler) WithGroup(name string) slog.Handler {
	return &secretHandler{next: h.next.WithGroup(name), r: h.r}
}

// mask returns a with every string it renders to masked; groups are masked member by member.
func (h *secretHandler) mask(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Replace(v.String()))
	case slog.KindGroup:
		members := v.Group()
		masked := make([]any, len(members))
		for i, m := range members {
			masked[i] = h.mask(m)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.Replace(x.Error()))
		case []byte:
			return slog.String(a.Key, Redacted)
		default:
			return slog.String(a.Key, h.r.Replace(fmt.Sprint(x)))
		}
	}
	return a
}
