package samtemplate_test

import (
	"regexp"
	"testing"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
)

// TestEnv reads the environment template.yaml gives the intake and dispatch functions: the
// parameters' defaults, Globals included, an !Sub of parameters substituted, and nothing for
// what only a deploy creates.
func TestEnv(t *testing.T) {
	tpl := load(t)
	intake, err := tpl.Env("IntakeFunction")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"ALLOWED_COUNTRIES": "US,CA", "GUARD_PER_HOUR": "5", "GUARD_PREFIX_DIGITS": "6", "LOG_LEVEL": mustParam(t, tpl, "LogLevel"),
	} {
		if got, ok := intake[name]; !ok || got != want {
			t.Errorf("IntakeFunction %s = %q (set %v), want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"GUARD_TABLE", "NOTIFICATIONS_TABLE", "DISPATCH_QUEUE_URL", "METRICS_NAMESPACE"} {
		if v, ok := intake[name]; ok {
			t.Errorf("IntakeFunction %s = %q: only a deploy gives it a value", name, v)
		}
	}
	dispatch, err := tpl.Env("DispatchFunction")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dispatch["SMS_TIMEOUT"], mustParam(t, tpl, "SmsTimeoutSeconds")+"s"; got != want {
		t.Errorf("DispatchFunction SMS_TIMEOUT = %q, want %q", got, want)
	}
	if _, err := tpl.Env("NotificationsTable"); err == nil {
		t.Error("Env of a table: want an error")
	}
}

func mustParam(t *testing.T, tpl *samtemplate.Template, name string) string {
	t.Helper()
	v, err := tpl.Param(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCallbackBaseUrl: the callback URLs the functions are given (TWILIO_CALLBACK_URL, which
// dispatch gives Twilio and the Twilio webhook checks signatures against, and
// SINCH_CALLBACK_URL) are the API's execute-api URL by default and CallbackBaseUrl's routes
// when it is set, in every function that reads them, the Twilio webhook included; the
// parameter's pattern takes an https base (a custom domain) or a loopback http one (an
// emulator's API URL) and refuses plain http elsewhere, a trailing slash and a query.
func TestCallbackBaseUrl(t *testing.T) {
	const base = "http://127.0.0.1:4566/_aws/execute-api/0a1b2c3d/$default"
	for _, tc := range []struct {
		providers, variable, route string
		functions                  []string
	}{
		{"simulator,simulator2,twilio", "TWILIO_CALLBACK_URL", "/v1/provider-events/twilio", []string{"DispatchFunction", "ReconcileFunction", "SweeperFunction", "TwilioWebhookFunction"}},
		{"sinch", "SINCH_CALLBACK_URL", "/v1/provider-events/sinch", []string{"DispatchFunction"}},
	} {
		for _, fn := range tc.functions {
			tpl := load(t)
			tpl.Overrides = map[string]string{"SmsProviders": tc.providers}
			raw, ok := samtemplate.Lookup(tpl.Resources[fn].Properties, "Environment", "Variables", tc.variable)
			if !ok {
				t.Fatalf("%s sets no %s", fn, tc.variable)
			}
			byDefault, err := tpl.Resolve(raw)
			if err != nil {
				t.Fatal(err)
			}
			sub, _ := byDefault.(map[string]any)["Fn::Sub"].(string)
			if want := "https://${NotificationsApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}" + tc.route; sub != want {
				t.Errorf("%s %s by default = %v, want !Sub %s", fn, tc.variable, byDefault, want)
			}
			tpl.Overrides["CallbackBaseUrl"] = base
			env, err := tpl.Env(fn)
			if err != nil {
				t.Fatal(err)
			}
			if got := env[tc.variable]; got != base+tc.route {
				t.Errorf("%s %s with CallbackBaseUrl = %q, want %q", fn, tc.variable, got, base+tc.route)
			}
		}
	}
	pattern, _ := load(t).Parameters["CallbackBaseUrl"]["AllowedPattern"].(string)
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("CallbackBaseUrl's AllowedPattern %q: %v", pattern, err)
	}
	for url, want := range map[string]bool{
		"":                                    true,
		base:                                  true,
		"https://hooks.example.com":           true,
		"https://api.example.com/resetnotify": true,
		"http://host.docker.internal:4566/_aws/execute-api/x/$default": true,
		"http://hooks.example.com":                                     false,
		"https://hooks.example.com/":                                   false,
		"https://hooks.example.com?a=b":                                false,
	} {
		if got := re.MatchString(url); got != want {
			t.Errorf("CallbackBaseUrl %q allowed: %v, want %v", url, got, want)
		}
	}
}
