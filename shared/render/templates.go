package render

import "text/template"

// The template names: purpose, and for password_reset the param it carries.
const (
	TemplatePasswordResetURL  = "password_reset/url"
	TemplatePasswordResetCode = "password_reset/code"
	TemplateOneTimeCode       = "one_time_code"
	TemplateMagicLink         = "magic_link"
)

// sources holds each locale's template text. text/template does no escaping, which is right
// for SMS; the params were validated at admission (https URLs, alphanumeric codes). Keep the
// fixed text in GSM-7 (a test checks it) and short enough that a MaxURLLen link still fits.
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

// templates are the parsed sources. A template that does not parse is a programming error,
// caught by every test run.
var templates = func() map[string]map[string]*template.Template {
	out := make(map[string]map[string]*template.Template, len(sources))
	for loc, byName := range sources {
		out[loc] = make(map[string]*template.Template, len(byName))
		for name, src := range byName {
			out[loc][name] = template.Must(template.New(loc + "/" + name).Option("missingkey=error").Parse(src))
		}
	}
	return out
}()
