package render

import (
	"fmt"
	"strings"
)

// The template names: purpose, and for password_reset the param it carries.
const (
	TemplatePasswordResetURL  = "password_reset/url"
	TemplatePasswordResetCode = "password_reset/code"
	TemplateOneTimeCode       = "one_time_code"
	TemplateMagicLink         = "magic_link"
)

// sources holds each locale's template text: fixed text around exactly one placeholder,
// {{.URL}}, {{.Code}} or {{.Link}}. The value is put in as it is, with no escaping, which is
// right for SMS; the params were validated at admission (https URLs, alphanumeric codes). Keep
// the fixed text in GSM-7 (a test checks it) and short enough that a MaxURLLen link still fits.
var sources = map[string]map[string]string{
	"en": {
		TemplatePasswordResetURL:  "Reset your password: {{.URL}} This link expires soon. If you did not ask for it, ignore this message.",
		TemplatePasswordResetCode: "Your password reset code is {{.Code}}. It expires soon. Do not share it with anyone.",
		TemplateOneTimeCode:       "Your verification code is {{.Code}}. Do not share it with anyone.",
		TemplateMagicLink:         "Sign in: {{.Link}} This link works once and expires soon.",
	},
	"de": {
		TemplatePasswordResetURL:  "Passwort zurücksetzen: {{.URL}} Der Link läuft bald ab. Nicht angefordert? Dann ignorieren Sie diese SMS.",
		TemplatePasswordResetCode: "Ihr Code zum Zurücksetzen des Passworts: {{.Code}}. Er läuft bald ab. Geben Sie ihn nicht weiter.",
		TemplateOneTimeCode:       "Ihr Bestätigungscode: {{.Code}}. Geben Sie ihn nicht weiter.",
		TemplateMagicLink:         "Anmelden: {{.Link}} Der Link gilt einmal und läuft bald ab.",
	},
	// Written without ã, ç, ê, ó and similar, which are outside GSM-7, as Brazilian SMS
	// commonly is: one such letter would switch the whole message to UCS-2.
	"pt-BR": {
		TemplatePasswordResetURL:  "Redefina sua senha: {{.URL}} O link expira em breve. Se nao foi voce, ignore esta mensagem.",
		TemplatePasswordResetCode: "Seu codigo para redefinir a senha é {{.Code}}. Ele expira em breve. Nao o compartilhe.",
		TemplateOneTimeCode:       "Seu codigo de verificacao é {{.Code}}. Nao o compartilhe com ninguém.",
		TemplateMagicLink:         "Entrar: {{.Link}} O link vale uma vez e expira em breve.",
	},
}

// languages maps a bare language to the supported locale used for it.
var languages = map[string]string{"en": "en", "de": "de", "pt": "pt-BR"}

// placeholders are the one value each template may hold, by its placeholder.
var placeholders = map[string]func(values) string{
	"{{.URL}}":  func(v values) string { return v.URL },
	"{{.Code}}": func(v values) string { return v.Code },
	"{{.Link}}": func(v values) string { return v.Link },
}

// template is a parsed source: the text before and after its placeholder, and the value that
// fills it. It is not text/template on purpose: that package calls reflect's MethodByName,
// which makes the linker keep every exported method of every type a function links (the AWS
// SDK's above all), and it doubled dispatch's bootstrap (see docs/benchmarks.md, "Cold
// start").
type template struct {
	before, after string
	value         func(values) string
}

// fill returns t filled with v.
func (t template) fill(v values) string {
	return t.before + t.value(v) + t.after
}

// parse splits src at its one placeholder.
func parse(src string) (template, error) {
	for ph, value := range placeholders {
		before, after, ok := strings.Cut(src, ph)
		if !ok {
			continue
		}
		if strings.Contains(after, "{{") || strings.Contains(before, "{{") {
			return template{}, fmt.Errorf("render.parse: more than one placeholder")
		}
		return template{before: before, after: after, value: value}, nil
	}
	return template{}, fmt.Errorf("render.parse: no placeholder")
}

// templates are the parsed sources. A template that does not parse is a programming error,
// caught by every test run.
var templates = func() map[string]map[string]template {
	out := make(map[string]map[string]template, len(sources))
	for loc, byName := range sources {
		out[loc] = make(map[string]template, len(byName))
		for name, src := range byName {
			t, err := parse(src)
			if err != nil {
				panic(fmt.Sprintf("render: template %s/%s: %v", loc, name, err))
			}
			out[loc][name] = t
		}
	}
	return out
}()
