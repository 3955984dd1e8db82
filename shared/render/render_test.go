package render_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/render"
)

// maxCode is the longest code notify admits (4 to 12 letters or digits).
const maxCode = "ABCDEF123456"

// url returns an https URL of exactly n characters.
func url(n int) string {
	const prefix = "https://shop.example/reset?t="
	return prefix + strings.Repeat("x", n-len(prefix))
}

// paramsFor returns the params of a template's purpose with the longest value of each kind:
// a maximal code, or a link of urlLen characters.
func paramsFor(name string, urlLen int) (purpose string, params map[string]string) {
	switch name {
	case render.TemplatePasswordResetURL:
		return notify.PurposePasswordReset, map[string]string{notify.ParamResetURL: url(urlLen)}
	case render.TemplatePasswordResetCode:
		return notify.PurposePasswordReset, map[string]string{notify.ParamCode: maxCode}
	case render.TemplateOneTimeCode:
		return notify.PurposeOneTimeCode, map[string]string{notify.ParamCode: maxCode}
	case render.TemplateMagicLink:
		return notify.PurposeMagicLink, map[string]string{notify.ParamLink: url(urlLen)}
	}
	panic("unknown template " + name)
}

func isLink(name string) bool {
	return name == render.TemplatePasswordResetURL || name == render.TemplateMagicLink
}

// TestEveryTemplateFitsWithMaximalParams renders every template of every locale with the
// longest params it must carry and checks the budget, the encoding and that the secret is in
// the body exactly once.
func TestEveryTemplateFitsWithMaximalParams(t *testing.T) {
	r := render.New(0)
	if len(render.Locales()) < 2 {
		t.Fatalf("locales %v: want English and at least one other", render.Locales())
	}
	for _, loc := range render.Locales() {
		for _, name := range render.TemplateNames() {
			t.Run(loc+"/"+name, func(t *testing.T) {
				purpose, params := paramsFor(name, render.MaxURLLen)
				m, err := r.Render(purpose, loc, params)
				if err != nil {
					t.Fatalf("Render with maximal params: %v", err)
				}
				if m.Locale != loc || m.Template != name {
					t.Errorf("rendered %s/%s, want %s/%s", m.Locale, m.Template, loc, name)
				}
				if m.Encoding != render.GSM7 {
					t.Errorf("encoding %s: the fixed text must stay GSM-7", m.Encoding)
				}
				if m.Segments > render.DefaultMaxSegments {
					t.Errorf("%d segments, budget %d", m.Segments, render.DefaultMaxSegments)
				}
				for _, v := range params {
					if strings.Count(m.Body, v) != 1 {
						t.Errorf("body does not carry the param exactly once")
					}
				}
				if strings.Contains(m.Body, "{{") || strings.Contains(m.Body, "<no value>") {
					t.Errorf("body has an unfilled placeholder")
				}
			})
		}
	}
}

// TestOverlongParamsAreRefused checks the budget at render time: a link of notify's maximum
// length (1024) fits no template, and one character past what fits is refused.
func TestOverlongParamsAreRefused(t *testing.T) {
	r := render.New(0)
	for _, loc := range render.Locales() {
		for _, name := range render.TemplateNames() {
			if !isLink(name) {
				continue
			}
			t.Run(loc+"/"+name, func(t *testing.T) {
				purpose, params := paramsFor(name, notify.MaxURLLen)
				if _, err := r.Render(purpose, loc, params); !errors.Is(err, render.ErrTooLong) {
					t.Fatalf("Render with a %d-character URL: %v, want ErrTooLong", notify.MaxURLLen, err)
				}
				// Find the longest URL that fits, then check one more character is refused.
				n := render.MaxURLLen
				for {
					purpose, params = paramsFor(name, n+1)
					if _, err := r.Render(purpose, loc, params); err != nil {
						break
					}
					n++
				}
				purpose, params = paramsFor(name, n)
				m, err := r.Render(purpose, loc, params)
				if err != nil || m.Segments != render.DefaultMaxSegments || m.Units > 2*render.GSM7Part {
					t.Fatalf("longest fitting URL (%d): %v, %d segments, %d units", n, err, m.Segments, m.Units)
				}
				purpose, params = paramsFor(name, n+1)
				err = r.Check(purpose, loc, params)
				if !errors.Is(err, render.ErrTooLong) {
					t.Fatalf("URL of %d characters: %v, want ErrTooLong", n+1, err)
				}
				if strings.Contains(err.Error(), "shop.example") {
					t.Errorf("error carries the param: %v", err)
				}
			})
		}
	}
}

func TestBudgetIsConfigurable(t *testing.T) {
	purpose, params := paramsFor(render.TemplatePasswordResetURL, 120)
	if _, err := render.New(1).Render(purpose, "en", params); !errors.Is(err, render.ErrTooLong) {
		t.Errorf("one segment: %v, want ErrTooLong", err)
	}
	if m, err := render.New(2).Render(purpose, "en", params); err != nil || m.Segments != 2 {
		t.Errorf("two segments: %+v, %v", m, err)
	}
	if got := (&render.Renderer{}).Budget(); got != render.DefaultMaxSegments {
		t.Errorf("zero Renderer budget %d", got)
	}
}

func TestNonGSMParamSwitchesToUCS2(t *testing.T) {
	r := render.New(3)
	purpose := notify.PurposeMagicLink
	// A grave accent is outside GSM-7: the whole message goes UCS-2 (70/67 per segment).
	link := "https://shop.example/m/`" + strings.Repeat("a", 80)
	m, err := r.Render(purpose, "en", map[string]string{notify.ParamLink: link})
	if err != nil {
		t.Fatal(err)
	}
	if m.Encoding != render.UCS2 || m.Segments != 3 {
		t.Errorf("got %s in %d segments, want UCS-2 in 3", m.Encoding, m.Segments)
	}
	if _, err := render.New(2).Render(purpose, "en", map[string]string{notify.ParamLink: link}); !errors.Is(err, render.ErrTooLong) {
		t.Errorf("UCS-2 over two segments: %v, want ErrTooLong", err)
	}
}

func TestLocaleFallback(t *testing.T) {
	tests := map[string]string{
		"en": "en", "de": "de", "pt-BR": "pt-BR",
		"de-AT": "de", "de-CH": "de", "pt-PT": "pt-BR", "pt": "pt-BR", "en-GB": "en",
		"fr": "en", "fr-CA": "en", "": "en", "xx-YY": "en",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := render.ResolveLocale(in); got != want {
				t.Errorf("ResolveLocale(%q) = %q, want %q", in, got, want)
			}
		})
	}
	m, err := render.New(0).Render(notify.PurposeOneTimeCode, "fr-FR", map[string]string{notify.ParamCode: "1234"})
	if err != nil || m.Locale != "en" || !strings.HasPrefix(m.Body, "Your verification code is 1234.") {
		t.Errorf("fallback render: %v %v %q", m, err, m.Body)
	}
}

func TestRenderedText(t *testing.T) {
	r := render.New(0)
	tests := []struct {
		purpose, locale string
		params          map[string]string
		want            string
	}{
		{notify.PurposePasswordReset, "en", map[string]string{notify.ParamResetURL: "https://s.example/r/1"},
			"Reset your password: https://s.example/r/1 This link expires soon. If you did not ask for it, ignore this message."},
		{notify.PurposePasswordReset, "de", map[string]string{notify.ParamCode: "AB12"},
			"Ihr Code zum Zurücksetzen des Passworts: AB12. Er läuft bald ab. Geben Sie ihn nicht weiter."},
		{notify.PurposeOneTimeCode, "pt-BR", map[string]string{notify.ParamCode: "9876"},
			"Seu codigo de verificacao é 9876. Nao o compartilhe com ninguém."},
		{notify.PurposeMagicLink, "de", map[string]string{notify.ParamLink: "https://s.example/m/2"},
			"Anmelden: https://s.example/m/2 Der Link gilt einmal und läuft bald ab."},
	}
	for _, tc := range tests {
		t.Run(tc.purpose+"/"+tc.locale, func(t *testing.T) {
			m, err := r.Render(tc.purpose, tc.locale, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, m.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	r := render.New(0)
	tests := []struct {
		name    string
		purpose string
		params  map[string]string
		want    error
	}{
		{"unknown purpose", "newsletter", map[string]string{notify.ParamCode: "1234"}, render.ErrUnknownPurpose},
		{"reset without url or code", notify.PurposePasswordReset, map[string]string{}, render.ErrMissingParam},
		{"code without code", notify.PurposeOneTimeCode, map[string]string{notify.ParamLink: "https://x.example"}, render.ErrMissingParam},
		{"magic link without link", notify.PurposeMagicLink, nil, render.ErrMissingParam},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Render(tc.purpose, "en", tc.params); !errors.Is(err, tc.want) {
				t.Errorf("Render = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMessageNeverPrintsItsBody(t *testing.T) {
	m, err := render.New(0).Render(notify.PurposeOneTimeCode, "en", map[string]string{notify.ParamCode: "SECRET99"})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("rendered", "message", m)
	for _, s := range []string{fmt.Sprint(m), fmt.Sprintf("%v %+v %#v %s", m, m, m, m), logged.String()} {
		if strings.Contains(s, "SECRET99") {
			t.Errorf("body leaked: %s", s)
		}
	}
}

func TestSegments(t *testing.T) {
	tests := []struct {
		name string
		body string
		want render.Count
	}{
		{"empty", "", render.Count{Encoding: render.GSM7, Units: 0, Segments: 1}},
		{"160 GSM-7", strings.Repeat("a", 160), render.Count{Encoding: render.GSM7, Units: 160, Segments: 1}},
		{"161 GSM-7", strings.Repeat("a", 161), render.Count{Encoding: render.GSM7, Units: 161, Segments: 2}},
		{"306 GSM-7", strings.Repeat("a", 306), render.Count{Encoding: render.GSM7, Units: 306, Segments: 2}},
		{"307 GSM-7", strings.Repeat("a", 307), render.Count{Encoding: render.GSM7, Units: 307, Segments: 3}},
		{"umlauts are GSM-7", "äöüßÄÖÜ", render.Count{Encoding: render.GSM7, Units: 7, Segments: 1}},
		{"extension costs two", "€[]{}", render.Count{Encoding: render.GSM7, Units: 10, Segments: 1}},
		{"80 euro signs", strings.Repeat("€", 80), render.Count{Encoding: render.GSM7, Units: 160, Segments: 1}},
		// 152 plain septets then an escape pair: the pair may not straddle, so it opens part 2.
		{"escape pair not split", strings.Repeat("a", 152) + "€" + strings.Repeat("a", 10), render.Count{Encoding: render.GSM7, Units: 164, Segments: 2}},
		{"70 UCS-2", strings.Repeat("ã", 70), render.Count{Encoding: render.UCS2, Units: 70, Segments: 1}},
		{"71 UCS-2", strings.Repeat("ã", 71), render.Count{Encoding: render.UCS2, Units: 71, Segments: 2}},
		{"134 UCS-2", strings.Repeat("ç", 134), render.Count{Encoding: render.UCS2, Units: 134, Segments: 2}},
		{"135 UCS-2", strings.Repeat("ç", 135), render.Count{Encoding: render.UCS2, Units: 135, Segments: 3}},
		{"one non-GSM letter", strings.Repeat("a", 100) + "ã", render.Count{Encoding: render.UCS2, Units: 101, Segments: 2}},
		// 66 units then a surrogate pair: it may not be split, so it opens part 2.
		{"surrogate pair not split", strings.Repeat("x", 65) + "ã" + "😀" + strings.Repeat("x", 5), render.Count{Encoding: render.UCS2, Units: 73, Segments: 2}},
		{"emoji are two units", strings.Repeat("😀", 35), render.Count{Encoding: render.UCS2, Units: 70, Segments: 1}},
		{"grave accent is not GSM-7", "`", render.Count{Encoding: render.UCS2, Units: 1, Segments: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, render.Segments(tc.body)); diff != "" {
				t.Errorf("Segments (-want +got):\n%s", diff)
			}
		})
	}
}
