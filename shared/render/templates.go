package render

import (
	"errors"
	"strings"
)

// The template names: purpose, and for password_reset the param it carries.
const (
	TemplatePasswordResetURL  = "password_reset/url"
	TemplatePasswordResetCode = "password_reset/code"
	TemplateOneTimeCode       = "one_time_code"
	TemplateMagicLink         = "magic_link"
)

// source is one template: fixed text around exactly one placeholder, {{.URL}}, {{.Code}} or
// {{.Link}}, for a locale.
type source struct{ locale, name, text string }

// sources holds each locale's template text: fixed text around exactly one placeholder,
// {{.URL}}, {{.Code}} or {{.Link}}. The value is put in as it is, with no escaping, which is
// right for SMS; the params were validated at admission (https URLs, alphanumeric codes). Keep
// the fixed text in GSM-7 (a test checks it) and short enough that a MaxURLLen link still fits.
var sources = [...]source{
	{"en", TemplatePasswordResetURL, "Reset your password: {{.URL}} This link expires soon. If you did not ask for it, ignore this message."},
	{"en", TemplatePasswordResetCode, "Your password reset code is {{.Code}}. It expires soon. Do not share it with anyone."},
	{"en", TemplateOneTimeCode, "Your verification code is {{.Code}}. Do not share it with anyone."},
	{"en", TemplateMagicLink, "Sign in: {{.Link}} This link works once and expires soon."},
	{"de", TemplatePasswordResetURL, "Passwort zurücksetzen: {{.URL}} Der Link läuft bald ab. Nicht angefordert? Dann ignorieren Sie diese SMS."},
	{"de", TemplatePasswordResetCode, "Ihr Code zum Zurücksetzen des Passworts: {{.Code}}. Er läuft bald ab. Geben Sie ihn nicht weiter."},
	{"de", TemplateOneTimeCode, "Ihr Bestätigungscode: {{.Code}}. Geben Sie ihn nicht weiter."},
	{"de", TemplateMagicLink, "Anmelden: {{.Link}} Der Link gilt einmal und läuft bald ab."},
	// Written without ã, ç, ê, ó and similar, which are outside GSM-7, as Brazilian SMS
	// commonly is: one such letter would switch the whole message to UCS-2.
	{"pt-BR", TemplatePasswordResetURL, "Redefina sua senha: {{.URL}} O link expira em breve. Se nao foi voce, ignore esta mensagem."},
	{"pt-BR", TemplatePasswordResetCode, "Seu codigo para redefinir a senha é {{.Code}}. Ele expira em breve. Nao o compartilhe."},
	{"pt-BR", TemplateOneTimeCode, "Seu codigo de verificacao é {{.Code}}. Nao o compartilhe com ninguém."},
	{"pt-BR", TemplateMagicLink, "Entrar: {{.Link}} O link vale uma vez e expira em breve."},
}

// language returns the supported locale used for a bare language, "" if none.
func language(lang string) string {
	switch lang {
	case "en":
		return "en"
	case "de":
		return "de"
	case "pt":
		return "pt-BR"
	}
	return ""
}

// lookup returns the text of the template name in locale.
func lookup(locale, name string) (string, bool) {
	for _, s := range sources {
		if s.locale == locale && s.name == name {
			return s.text, true
		}
	}
	return "", false
}

// hasLocale reports whether locale has templates.
func hasLocale(locale string) bool {
	for _, s := range sources {
		if s.locale == locale {
			return true
		}
	}
	return false
}

// fill returns text with its one placeholder replaced by v's value. It is not text/template
// on purpose: that package calls reflect's MethodByName, which makes the linker keep every
// exported method of every type a function links (the AWS SDK's above all), and it doubled
// dispatch's bootstrap (docs/benchmarks.md, -mode coldstart). The sources are fixed and a
// test fills every one, so an error here is a broken source.
func fill(text string, v values) (string, error) {
	before, rest, ok := strings.Cut(text, "{{.")
	placeholder, after, closed := strings.Cut(rest, "}}")
	if !ok || !closed || strings.Contains(after, "{{") {
		return "", errors.New("render.fill: a template must hold exactly one placeholder")
	}
	var value string
	switch placeholder {
	case "URL":
		value = v.URL
	case "Code":
		value = v.Code
	case "Link":
		value = v.Link
	default:
		return "", errors.New("render.fill: unknown placeholder")
	}
	return before + value + after, nil
}
