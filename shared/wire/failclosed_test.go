package wire_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/wire/dispatch"
	"github.com/resetnotify/resetnotify/shared/wire/intake"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

// TestGuardsFailClosed: intake and dispatch started without one of their abuse guards'
// settings refuse to start, with a sentence naming the setting and the way to turn the guard
// off; the explicit "off" starts them (with the guard off, as the operator wrote).
func TestGuardsFailClosed(t *testing.T) {
	intakeEnv := map[string]string{
		config.EnvNotificationsTable: "n", config.EnvDispatchQueueURL: "http://127.0.0.1:1/q",
		config.EnvSealLocalKey:      "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		config.EnvDestinationPepper: "wiring-test-pepper-0123", config.EnvFingerprintKey: "wiring-test-fingerprint-key-0123456789",
		config.EnvGuardTable: "guard", config.EnvAllowedCountries: "US,CA", config.EnvConversionTable: "conversions",
	}
	dispatchEnv := map[string]string{
		config.EnvNotificationsTable: "n", config.EnvDispatchQueueURL: "http://127.0.0.1:1/q", config.EnvReconcileQueueURL: "http://127.0.0.1:1/r",
		config.EnvSealLocalKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", config.EnvGuardTable: "guard",
		config.EnvSMSProviders: config.SMSEndUserSMS, config.EnvSMSOriginationIdentity: "arn:aws:sms-voice:eu-west-1:000000000000:phone-number/p",
		config.EnvSMSProtectConfiguration: "protect-configuration-id",
		config.EnvAllowedCountries:        "US,CA", config.EnvConversionTable: "conversions",
	}
	tests := []struct {
		name    string
		build   func(context.Context, func(string) string) error
		env     map[string]string
		without string
	}{
		{"intake without its guard table", build(intake.Function), intakeEnv, config.EnvGuardTable},
		{"intake without its allowed countries", build(intake.Function), intakeEnv, config.EnvAllowedCountries},
		{"intake without its conversion table", build(intake.Function), intakeEnv, config.EnvConversionTable},
		{"dispatch without its guard table", build(dispatch.Function), dispatchEnv, config.EnvGuardTable},
		{"dispatch without its allowed countries", build(dispatch.Function), dispatchEnv, config.EnvAllowedCountries},
		{"dispatch without its conversion table", build(dispatch.Function), dispatchEnv, config.EnvConversionTable},
		{"dispatch through End User Messaging without its protect configuration", build(dispatch.Function), dispatchEnv, config.EnvSMSProtectConfiguration},
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(tc.env)
			if err := tc.build(t.Context(), wiretest.Env(env)); err != nil {
				t.Fatalf("with every setting: %v", err)
			}
			delete(env, tc.without)
			err := tc.build(t.Context(), wiretest.Env(env))
			if err == nil || !strings.Contains(err.Error(), tc.without+" is required") || !strings.Contains(err.Error(), `"off"`) {
				t.Fatalf("without %s: %v; want a refusal naming it and the explicit off", tc.without, err)
			}
			env[tc.without] = config.Off
			if err := tc.build(t.Context(), wiretest.Env(env)); err != nil {
				t.Errorf("with %s=off: %v, want a start with that guard off", tc.without, err)
			}
		})
	}
}

// TestBootstrapRefusesToStartWithoutItsGuard runs intake's real bootstrap, as Lambda starts it,
// with every setting but GUARD_TABLE: it exits 1 at its cold start, and its log names the
// setting and the explicit off.
func TestBootstrapRefusesToStartWithoutItsGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the intake bootstrap")
	}
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, "../../functions/intake")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bootstrap)
	cmd.Env = []string{"AWS_REGION=eu-west-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "PATH=" + os.Getenv("PATH"),
		config.EnvNotificationsTable + "=n", config.EnvDispatchQueueURL + "=http://127.0.0.1:1/q",
		config.EnvSealLocalKey + "=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		config.EnvDestinationPepper + "=wiring-test-pepper-0123", config.EnvFingerprintKey + "=wiring-test-fingerprint-key-0123456789",
		config.EnvAllowedCountries + "=US,CA"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("bootstrap without %s: %v, want exit status 1", config.EnvGuardTable, err)
	}
	if log := stderr.String(); !strings.Contains(log, config.EnvGuardTable+" is required") || !strings.Contains(log, "cold start failed") {
		t.Errorf("its log does not say why:\n%s", log)
	}
}
