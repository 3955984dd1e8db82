package samtemplate_test

import (
	"testing"

	"github.com/resetnotify/resetnotify/dev/samtemplate"
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
