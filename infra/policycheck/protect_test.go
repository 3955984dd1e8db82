package policycheck_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/policycheck"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

// allowedCountries returns the AllowedCountries parameter's default: the list intake admits
// on a stack deployed without overrides.
func allowedCountries(t *testing.T) []string {
	t.Helper()
	tpl, err := samtemplate.Load(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	def, _ := tpl.Parameters["AllowedCountries"]["Default"].(string)
	if def == "" {
		t.Fatal("template.yaml: AllowedCountries has no default")
	}
	return strings.Split(def, ",")
}

// TestSmsProtectBlocksEveryCountryButTheAllowList: End User Messaging allows a country its
// protect configuration does not name, so the configuration names every country the
// phone-number metadata knows: ALLOW exactly for AllowedCountries' default, BLOCK otherwise.
func TestSmsProtectBlocksEveryCountryButTheAllowList(t *testing.T) {
	allowed := allowedCountries(t)
	tpl := expand(t, variants["endusersms"]...)
	r, ok := tpl.Resources["SmsProtectConfiguration"]
	if !ok || r.Type != "AWS::SMSVOICE::ProtectConfiguration" || r.Condition != "UseEndUserSms" {
		t.Fatalf("SmsProtectConfiguration is %+v, want an AWS::SMSVOICE::ProtectConfiguration of endusersms stacks", r)
	}
	set, _ := r.Properties["CountryRuleSet"].(map[string]any)
	got := map[string]string{}
	for _, rule := range list(set["SMS"]) {
		m, _ := rule.(map[string]any)
		code, _ := m["CountryCode"].(string)
		status, _ := m["ProtectStatus"].(string)
		if _, dup := got[code]; dup {
			t.Errorf("%s has two rules", code)
		}
		got[code] = status
	}
	want := map[string]string{}
	for _, c := range phoneregion.All() {
		want[c] = "BLOCK"
	}
	for _, c := range allowed {
		if _, known := want[c]; !known {
			t.Errorf("AllowedCountries' default lists %s, which the metadata does not know", c)
		}
		want[c] = "ALLOW"
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SMS country rules (-want +got); run go run ./infra/smsprotect:\n%s", d)
	}
	intakeEnv := envOf(tpl, "IntakeFunction")
	if policycheck.Ref(intakeEnv[config.EnvAllowedCountries]) != "AllowedCountries" {
		t.Errorf("intake's %s is %v, want the AllowedCountries parameter", config.EnvAllowedCountries, intakeEnv[config.EnvAllowedCountries])
	}
}

// TestEverySendNamesTheProtectConfiguration: the function that sends names the stack's protect
// configuration on every send (its adapter sets ProtectConfigurationId from the variable),
// unless the template says SmsProtect=off, and its role may send through no other; the
// emulator and other providers get none.
func TestEverySendNamesTheProtectConfiguration(t *testing.T) {
	want := `{"Fn::If":["UseEndUserSms",{"Fn::If":["SmsProtectOff","off",{"Ref":"SmsProtectConfiguration"}]},""]}`
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for name, r := range tpl.Resources {
			if r.Type != "AWS::Lambda::Function" {
				continue
			}
			v, set := envOf(tpl, name)[config.EnvSMSProtectConfiguration]
			sends := roleSends(tpl, name)
			switch {
			case name == "DispatchFunction" || sends:
				if b, _ := json.Marshal(v); string(b) != want {
					t.Errorf("%s (sends %v) sets %s to %s, want %s", name, sends, config.EnvSMSProtectConfiguration, b, want)
				}
			case set:
				t.Errorf("%s sets %s but cannot send", name, config.EnvSMSProtectConfiguration)
			}
		}
	})
	tpl := expand(t, variants["endusersms"]...)
	if !roleSends(tpl, "DispatchFunction") {
		t.Fatal("the dispatch role cannot send in an endusersms stack")
	}
	for _, s := range policycheck.RolePolicies(tpl)["DispatchRole"] {
		if s.Effect == "Allow" && s.Allows("sms-voice:SendTextMessage") &&
			!slices.ContainsFunc(s.Resources, func(r any) bool { return policycheck.Ref(r) == "SmsProtectConfiguration" }) {
			t.Errorf("%s allows SendTextMessage without naming SmsProtectConfiguration: %v", s.Sid, s.Resources)
		}
	}
}

// envOf returns the environment variables of function name in tpl.
func envOf(tpl policycheck.Template, name string) map[string]any {
	env, _ := tpl.Resources[name].Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	return vars
}

// roleSends reports whether function name's role allows SendTextMessage.
func roleSends(tpl policycheck.Template, name string) bool {
	role := policycheck.Ref(tpl.Resources[name].Properties["Role"])
	return slices.ContainsFunc(policycheck.RolePolicies(tpl)[role], func(s policycheck.Statement) bool {
		return s.Effect == "Allow" && s.Allows("sms-voice:SendTextMessage")
	})
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}
