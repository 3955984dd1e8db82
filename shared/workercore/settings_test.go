package workercore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/configdoc"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

func TestSettingsFromConfig(t *testing.T) {
	c := config.Config{Policy: notify.DefaultPolicy(), Worker: config.Worker{
		Lease: 45 * time.Second, MinValidity: 2 * time.Second, MaxReconciles: 7,
		BackoffBase: 250 * time.Millisecond, BackoffMax: time.Minute,
	}}
	c.Policy.MaxAttempts = 4
	got := workercore.SettingsFromConfig(c, provider.Config{Kind: provider.Simulator, Timeout: 3 * time.Second, Visibility: 20 * time.Second})
	want := workercore.DefaultSettings()
	want.MaxAttempts, want.Lease, want.MinValidity, want.MaxReconciles = 4, 45*time.Second, 2*time.Second, 7
	want.BackoffBase, want.BackoffMax, want.ProviderTimeout, want.Visibility = 250*time.Millisecond, time.Minute, 3*time.Second, 20*time.Second
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	// Nothing set: the defaults, with the provider's timeout and window.
	got = workercore.SettingsFromConfig(config.Config{}, provider.Config{Timeout: 5 * time.Second})
	want = workercore.DefaultSettings()
	want.ProviderTimeout, want.Visibility = 5*time.Second, 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestSettingsMinValidityCoversTheProvider: AWS End User Messaging SMS refuses a TimeToLive
// under 5 s without a call, so the workers must not lease with less than that left, whatever
// MIN_VALIDITY_SECONDS says.
func TestSettingsMinValidityCoversTheProvider(t *testing.T) {
	tests := []struct {
		name       string
		kind       string
		configured time.Duration
		want       time.Duration
	}{
		{"endusersms, nothing configured", provider.EndUserSMS, 0, 5 * time.Second},
		{"endusersms, configured below its minimum", provider.EndUserSMS, 2 * time.Second, 5 * time.Second},
		{"endusersms, configured above its minimum", provider.EndUserSMS, 8 * time.Second, 8 * time.Second},
		{"simulator, nothing configured", provider.Simulator, 0, time.Second},
		{"sinch, configured", provider.Sinch, 3 * time.Second, 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Config{Policy: notify.DefaultPolicy(), Worker: config.Worker{MinValidity: tc.configured}}
			got := workercore.SettingsFromConfig(c, provider.Config{Kind: tc.kind, Timeout: 5 * time.Second, Visibility: time.Minute})
			if got.MinValidity != tc.want {
				t.Errorf("MinValidity = %s, want %s", got.MinValidity, tc.want)
			}
			if got.MinValidity < provider.MinValidity(tc.kind) {
				t.Errorf("MinValidity %s is under the provider's minimum %s", got.MinValidity, provider.MinValidity(tc.kind))
			}
		})
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := workercore.DefaultSettings().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name   string
		change func(*workercore.Settings)
		want   string
	}{
		{"lease too short for the provider timeout", func(s *workercore.Settings) { s.Lease = s.ProviderTimeout + time.Second }, "lease"},
		{"no attempts", func(s *workercore.Settings) { s.MaxAttempts = 0 }, "max attempts"},
		{"validity under a second", func(s *workercore.Settings) { s.MinValidity = 500 * time.Millisecond }, "min validity"},
		{"backoff max under base", func(s *workercore.Settings) { s.BackoffMax = s.BackoffBase / 2 }, "backoff"},
		{"no reconciles", func(s *workercore.Settings) { s.MaxReconciles = 0 }, "max reconciles"},
		{"no parallelism", func(s *workercore.Settings) { s.Parallelism = 0 }, "parallelism"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := workercore.DefaultSettings()
			tc.change(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestCheckRetention(t *testing.T) {
	d := workercore.DefaultSettings()
	horizon := d.OpenAfterDeadline()
	tests := []struct {
		name    string
		margin  time.Duration
		grace   time.Duration
		change  func(*workercore.Settings)
		refused bool
	}{
		{"defaults", time.Minute, 24 * time.Hour, nil, false},
		{"margin and grace exactly the horizon", time.Minute, horizon - time.Minute, nil, false},
		{"one second short", time.Minute, horizon - time.Minute - time.Second, nil, true},
		{"no grace", time.Minute, 0, nil, true},
		{"an hour's grace and an hour's visibility window", time.Minute, time.Hour,
			func(s *workercore.Settings) { s.Visibility = time.Hour }, true},
		{"an hour's grace and a long lease", time.Minute, time.Hour,
			func(s *workercore.Settings) { s.Lease = 59 * time.Minute }, true},
		{"two hours' grace and an hour's visibility window", time.Minute, 2 * time.Hour,
			func(s *workercore.Settings) { s.Visibility = time.Hour }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := workercore.DefaultSettings()
			if tc.change != nil {
				tc.change(&s)
			}
			p := notify.DefaultPolicy()
			p.SafetyMargin, p.StatusGrace = tc.margin, tc.grace
			err := workercore.CheckRetention(p, s)
			if (err != nil) != tc.refused {
				t.Fatalf("CheckRetention = %v, want refused=%v", err, tc.refused)
			}
			if err != nil && !strings.Contains(err.Error(), config.EnvStatusGraceHours) {
				t.Errorf("error %q does not name %s", err, config.EnvStatusGraceHours)
			}
		})
	}
}

// TestConfigDocumentsTheDefaults checks the defaults configdoc.Vars (and so docs/configuration.md) gives the
// workers' variables against DefaultSettings and the renderer's budget.
func TestConfigDocumentsTheDefaults(t *testing.T) {
	s := workercore.DefaultSettings()
	want := map[string]string{
		config.EnvLeaseSeconds:       strconv.Itoa(int(s.Lease / time.Second)),
		config.EnvMinValiditySeconds: strconv.Itoa(int(s.MinValidity / time.Second)),
		config.EnvMaxReconciles:      strconv.Itoa(s.MaxReconciles),
		config.EnvBackoffBaseMS:      strconv.Itoa(int(s.BackoffBase / time.Millisecond)),
		config.EnvBackoffMaxSeconds:  strconv.Itoa(int(s.BackoffMax / time.Second)),
		config.EnvSMSMaxSegments:     strconv.Itoa(render.DefaultMaxSegments),
	}
	for _, v := range configdoc.Vars() {
		if w, ok := want[v.Name]; ok {
			if v.Default != w {
				t.Errorf("configdoc.Vars says %s defaults to %q, it is %q", v.Name, v.Default, w)
			}
			delete(want, v.Name)
		}
	}
	for name := range want {
		t.Errorf("configdoc.Vars does not list %s", name)
	}
}
