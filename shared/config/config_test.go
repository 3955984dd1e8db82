package config_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

const (
	localKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // "0123456789abcdef0123456789abcdef"
	pepper   = "pepper-0123456789-secret"
	fpKey    = "fingerprint-key-0123456789-abcdef-secret"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func intakeEnv() map[string]string {
	return map[string]string{
		config.EnvNotificationsTable: "notifications",
		config.EnvDispatchQueueURL:   "http://127.0.0.1:5000/000000000000/dispatch",
		config.EnvSealLocalKey:       localKey,
		config.EnvDestinationPepper:  pepper,
		config.EnvFingerprintKey:     fpKey,
		config.EnvGuardTable:         config.Off,
		config.EnvAllowedCountries:   config.Off,
		config.EnvConversionTable:    config.Off,
	}
}

func TestLoadDefaults(t *testing.T) {
	got, err := config.Load(env(intakeEnv()), config.NeedIntake)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Config{
		NotificationsTable: "notifications",
		DispatchQueueURL:   "http://127.0.0.1:5000/000000000000/dispatch",
		Policy:             notify.DefaultPolicy(),
		SealLocalKey:       []byte("0123456789abcdef0123456789abcdef"),
		DestinationPepper:  []byte(pepper),
		FingerprintKey:     []byte(fpKey),
		Guard:              notify.DefaultGuardLimits(),
		Conversion:         config.Conversion{Policy: notify.DefaultConversionPolicy()},
		GuardDecision:      notify.DefaultDecisionBound,
		AllowedNumberTypes: notify.DefaultNumberTypes,
		LogLevel:           slog.LevelInfo,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Load (-want +got):\n%s", d)
	}
}

func TestLoadEverything(t *testing.T) {
	e := map[string]string{
		config.EnvNotificationsTable:   "n",
		config.EnvAuditTable:           "a",
		config.EnvDispatchQueueURL:     "https://sqs.eu-west-1.amazonaws.com/1/q",
		config.EnvPolicyVersion:        "2026-11-01",
		config.EnvSafetyMarginSeconds:  "90",
		config.EnvStatusGraceHours:     "48",
		config.EnvMaxAheadHours:        "2",
		config.EnvSealKMSKeyID:         "alias/resetnotify",
		config.EnvSealKeysTable:        "s",
		config.EnvDestinationPepper:    pepper,
		config.EnvFingerprintKeyParam:  "/resetnotify/request-fingerprint-key",
		config.EnvLogLevel:             "DEBUG",
		config.EnvMetricsNamespace:     "resetnotify/prod-a",
		config.EnvGuardTable:           "g",
		config.EnvGuardPerHour:         "3",
		config.EnvGuardPerDay:          "0",
		config.EnvGuardPrefixDigits:    "7",
		config.EnvGuardPrefixPerMinute: "40",
		config.EnvGuardDecisionMS:      "250",
		config.EnvAllowedCountries:     " us, CA,gb ",
		config.EnvAllowedNumberTypes:   " mobile,FIXED_LINE ",
		config.EnvAuditRetentionDays:   "30",

		config.EnvConversionTable:             "c",
		config.EnvConversionWindowHours:       "48",
		config.EnvConversionMinSends:          "30",
		config.EnvConversionBlockBelowPercent: "0",
		config.EnvConversionBlockHours:        "6",
		config.EnvConversionRefreshSeconds:    "2",
	}
	got, err := config.Load(env(e), config.NeedIntake|config.NeedAuditTable)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	wantPolicy := notify.DefaultPolicy()
	wantPolicy.Version = "2026-11-01"
	wantPolicy.SafetyMargin = 90 * time.Second
	wantPolicy.StatusGrace = 48 * time.Hour
	wantPolicy.MaxAhead = 2 * time.Hour
	want := config.Config{
		NotificationsTable: "n", AuditTable: "a", AuditRetention: 30 * 24 * time.Hour, DispatchQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/q",
		Policy: wantPolicy, SealKMSKeyID: "alias/resetnotify", SealKeysTable: "s", DestinationPepper: []byte(pepper),
		FingerprintKeyParam: "/resetnotify/request-fingerprint-key",
		GuardTable:          "g", Guard: notify.GuardLimits{PerHour: 3, PerDay: 0, PrefixDigits: 7, PrefixPerMinute: 40},
		GuardDecision:      250 * time.Millisecond,
		AllowedCountries:   []string{"US", "CA", "GB"},
		AllowedNumberTypes: []notify.NumberType{notify.NumberMobile, notify.NumberFixedLine},
		Conversion: config.Conversion{Table: "c", Policy: notify.ConversionPolicy{
			Window: 48 * time.Hour, MinSends: 30, BlockBelow: 0, BlockFor: 6 * time.Hour, Refresh: 2 * time.Second}},
		LogLevel: slog.LevelDebug, MetricsNamespace: "resetnotify/prod-a",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Load (-want +got):\n%s", d)
	}
}

func TestLoadPepperParam(t *testing.T) {
	e := intakeEnv()
	delete(e, config.EnvDestinationPepper)
	e[config.EnvDestinationPepperParam] = "/resetnotify/pepper"
	c, err := config.Load(func(k string) string { return e[k] }, config.NeedIntake)
	if err != nil {
		t.Fatal(err)
	}
	if c.DestinationPepperParam != "/resetnotify/pepper" || c.DestinationPepper != nil {
		t.Errorf("param %q pepper %v", c.DestinationPepperParam, c.DestinationPepper)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(map[string]string)
		need   config.Need
		naming []string // variables the error must name
	}{
		{"missing table", func(e map[string]string) { delete(e, config.EnvNotificationsTable) }, config.NeedIntake, []string{config.EnvNotificationsTable}},
		{"missing queue", func(e map[string]string) { delete(e, config.EnvDispatchQueueURL) }, config.NeedIntake, []string{config.EnvDispatchQueueURL}},
		{"missing audit table", func(map[string]string) {}, config.NeedAuditTable, []string{config.EnvAuditTable}},
		{"blank counts as unset", func(e map[string]string) { e[config.EnvNotificationsTable] = "  " }, config.NeedIntake, []string{config.EnvNotificationsTable}},
		{"margin not a number", func(e map[string]string) { e[config.EnvSafetyMarginSeconds] = "1m" }, config.NeedIntake, []string{config.EnvSafetyMarginSeconds}},
		{"margin negative", func(e map[string]string) { e[config.EnvSafetyMarginSeconds] = "-5" }, config.NeedIntake, []string{config.EnvSafetyMarginSeconds}},
		{"grace not a number", func(e map[string]string) { e[config.EnvStatusGraceHours] = "1.5" }, config.NeedIntake, []string{config.EnvStatusGraceHours}},
		// A zero margin sends at the moment of expiry; a zero grace lets TTL purge an open record.
		{"margin zero", func(e map[string]string) { e[config.EnvSafetyMarginSeconds] = "0" }, config.NeedIntake, []string{config.EnvSafetyMarginSeconds}},
		{"grace zero", func(e map[string]string) { e[config.EnvStatusGraceHours] = "0" }, config.NeedIntake, []string{config.EnvStatusGraceHours}},
		{"margin zero in a worker", func(e map[string]string) { e[config.EnvSafetyMarginSeconds] = "0" }, config.NeedSweeper, []string{config.EnvSafetyMarginSeconds}},
		{"missing fingerprint key", func(e map[string]string) { delete(e, config.EnvFingerprintKey) }, config.NeedIntake, []string{config.EnvFingerprintKey, config.EnvFingerprintKeyParam}},
		{"short fingerprint key", func(e map[string]string) { e[config.EnvFingerprintKey] = "fingerprint-key-short" }, config.NeedIntake, []string{config.EnvFingerprintKey}},
		{"fingerprint key is the pepper", func(e map[string]string) {
			e[config.EnvFingerprintKey] = "the-same-secret-for-both-0123456789"
			e[config.EnvDestinationPepper] = "the-same-secret-for-both-0123456789"
		}, config.NeedIntake, []string{config.EnvFingerprintKey, config.EnvDestinationPepper}},
		{"fingerprint key is the sealing key", func(e map[string]string) { e[config.EnvFingerprintKey] = "0123456789abcdef0123456789abcdef" }, config.NeedIntake, []string{config.EnvFingerprintKey, config.EnvSealLocalKey}},
		{"fingerprint key is the sealing key's base64", func(e map[string]string) { e[config.EnvFingerprintKey] = localKey }, config.NeedIntake, []string{config.EnvFingerprintKey, config.EnvSealLocalKey}},
		{"fingerprint key parameter is the pepper's", func(e map[string]string) {
			delete(e, config.EnvFingerprintKey)
			delete(e, config.EnvDestinationPepper)
			e[config.EnvFingerprintKeyParam] = "/resetnotify/secret"
			e[config.EnvDestinationPepperParam] = "/resetnotify/secret"
		}, config.NeedIntake, []string{config.EnvFingerprintKeyParam, config.EnvDestinationPepperParam}},
		{"max ahead zero", func(e map[string]string) { e[config.EnvMaxAheadHours] = "0" }, config.NeedIntake, []string{config.EnvMaxAheadHours}},
		{"max ahead below margin", func(e map[string]string) {
			e[config.EnvMaxAheadHours] = "1"
			e[config.EnvSafetyMarginSeconds] = "7200"
		}, config.NeedIntake, []string{config.EnvMaxAheadHours, config.EnvSafetyMarginSeconds}},
		{"no sealing key", func(e map[string]string) { delete(e, config.EnvSealLocalKey) }, config.NeedIntake, []string{config.EnvSealKMSKeyID, config.EnvSealLocalKey}},
		{"both sealing keys", func(e map[string]string) { e[config.EnvSealKMSKeyID] = "alias/k" }, config.NeedIntake, []string{config.EnvSealKMSKeyID, config.EnvSealLocalKey}},
		{"KMS key without the seal-keys table", func(e map[string]string) {
			delete(e, config.EnvSealLocalKey)
			e[config.EnvSealKMSKeyID] = "alias/k"
		}, config.NeedIntake, []string{config.EnvSealKeysTable, config.EnvSealKMSKeyID}},
		{"local key not base64", func(e map[string]string) { e[config.EnvSealLocalKey] = "not base64!" }, config.NeedIntake, []string{config.EnvSealLocalKey}},
		{"local key too short", func(e map[string]string) { e[config.EnvSealLocalKey] = "c2hvcnQ=" }, config.NeedIntake, []string{config.EnvSealLocalKey}},
		{"missing pepper", func(e map[string]string) { delete(e, config.EnvDestinationPepper) }, config.NeedIntake, []string{config.EnvDestinationPepper}},
		{"short pepper", func(e map[string]string) { e[config.EnvDestinationPepper] = "short-secret" }, config.NeedIntake, []string{config.EnvDestinationPepper}},
		{"guard limit not a number", func(e map[string]string) { e[config.EnvGuardPerHour] = "five" }, config.NeedIntake, []string{config.EnvGuardPerHour}},
		{"hourly above daily", func(e map[string]string) {
			e[config.EnvGuardPerHour] = "20"
			e[config.EnvGuardPerDay] = "10"
		}, config.NeedIntake, []string{config.EnvGuardPerHour, config.EnvGuardPerDay}},
		{"prefix digits zero", func(e map[string]string) { e[config.EnvGuardPrefixDigits] = "0" }, config.NeedIntake, []string{config.EnvGuardPrefixDigits}},
		{"a calling code, not a country", func(e map[string]string) { e[config.EnvAllowedCountries] = "US,1" }, config.NeedIntake, []string{config.EnvAllowedCountries}},
		{"alpha-3, not alpha-2", func(e map[string]string) { e[config.EnvAllowedCountries] = "USA" }, config.NeedIntake, []string{config.EnvAllowedCountries}},
		{"a country twice", func(e map[string]string) { e[config.EnvAllowedCountries] = "US,CA,us" }, config.NeedIntake, []string{config.EnvAllowedCountries}},
		{"separators alone are not off", func(e map[string]string) { e[config.EnvAllowedCountries] = " , " }, config.NeedIntake, []string{config.EnvAllowedCountries}},
		{"not a number type", func(e map[string]string) { e[config.EnvAllowedNumberTypes] = "MOBILE,CELL" }, config.NeedIntake, []string{config.EnvAllowedNumberTypes}},
		{"UNKNOWN is no type", func(e map[string]string) { e[config.EnvAllowedNumberTypes] = "UNKNOWN" }, config.NeedIntake, []string{config.EnvAllowedNumberTypes}},
		{"a number type twice", func(e map[string]string) { e[config.EnvAllowedNumberTypes] = "MOBILE,mobile" }, config.NeedIntake, []string{config.EnvAllowedNumberTypes}},
		{"bad log level", func(e map[string]string) { e[config.EnvLogLevel] = "loud" }, config.NeedIntake, []string{config.EnvLogLevel}},
		{"conversion share over 100", func(e map[string]string) { e[config.EnvConversionBlockBelowPercent] = "120" }, config.NeedIntake, []string{config.EnvConversionBlockBelowPercent}},
		{"conversion min sends zero", func(e map[string]string) { e[config.EnvConversionMinSends] = "0" }, config.NeedIntake, []string{config.EnvConversionMinSends}},
		{"conversion block hours not a number", func(e map[string]string) { e[config.EnvConversionBlockHours] = "12h" }, config.NeedIntake, []string{config.EnvConversionBlockHours}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := intakeEnv()
			tc.edit(e)
			_, err := config.Load(env(e), tc.need)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			msg := err.Error()
			for _, name := range tc.naming {
				if !strings.Contains(msg, name) {
					t.Errorf("error %q does not name %s", msg, name)
				}
			}
			for name, v := range e {
				if name == config.EnvNotificationsTable || name == config.EnvSafetyMarginSeconds || name == config.EnvMaxAheadHours {
					continue // short, non-secret values that may appear by coincidence
				}
				if len(v) > 3 && strings.Contains(msg, v) {
					t.Errorf("error %q holds the value of %s", msg, name)
				}
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := config.Load(env(map[string]string{config.EnvLogLevel: "loud"}), config.NeedIntake)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvSealLocalKey, config.EnvDestinationPepper, config.EnvLogLevel} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	c, err := config.Load(env(intakeEnv()), config.NeedIntake)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "config", c)
	outs := []string{buf.String(), c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)}
	for _, out := range outs {
		for _, secret := range []string{pepper, localKey, "0123456789abcdef", fpKey} {
			if strings.Contains(out, secret) {
				t.Errorf("output holds a secret: %s", out)
			}
		}
	}
	if !strings.Contains(buf.String(), `"sealing":"local-key"`) {
		t.Errorf("log lacks the sealing mode: %s", buf.String())
	}
}

func workerEnv() map[string]string {
	return map[string]string{
		config.EnvNotificationsTable: "notifications",
		config.EnvDispatchQueueURL:   "http://127.0.0.1:5000/000000000000/dispatch",
		config.EnvReconcileQueueURL:  "http://127.0.0.1:5000/000000000000/reconcile",
	}
}

func TestLoadWorker(t *testing.T) {
	e := workerEnv()
	e[config.EnvMaxAttempts] = "4"
	e[config.EnvLeaseSeconds] = "40"
	e[config.EnvMinValiditySeconds] = "2"
	e[config.EnvMaxReconciles] = "6"
	e[config.EnvBackoffBaseMS] = "250"
	e[config.EnvBackoffMaxSeconds] = "120"
	e[config.EnvSMSMaxSegments] = "3"
	got, err := config.Load(env(e), config.NeedReconcile)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Worker{
		Lease: 40 * time.Second, MinValidity: 2 * time.Second, MaxReconciles: 6,
		BackoffBase: 250 * time.Millisecond, BackoffMax: 2 * time.Minute, MaxSegments: 3,
	}
	if d := cmp.Diff(want, got.Worker); d != "" {
		t.Errorf("Worker (-want +got):\n%s", d)
	}
	if got.Policy.MaxAttempts != 4 || got.ReconcileQueueURL != e[config.EnvReconcileQueueURL] {
		t.Errorf("max attempts %d, reconcile queue %q", got.Policy.MaxAttempts, got.ReconcileQueueURL)
	}

	// Unset means the worker defaults: every field stays zero.
	got, err = config.Load(env(workerEnv()), config.NeedSweeper)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got.Worker != (config.Worker{}) || got.Policy.MaxAttempts != notify.DefaultPolicy().MaxAttempts {
		t.Errorf("defaults: %+v, max attempts %d", got.Worker, got.Policy.MaxAttempts)
	}
}

func TestLoadWorkerProblems(t *testing.T) {
	e := map[string]string{
		config.EnvMaxAttempts:        "0",
		config.EnvLeaseSeconds:       "ten",
		config.EnvMinValiditySeconds: "0",
		config.EnvMaxReconciles:      "-1",
		config.EnvBackoffBaseMS:      "1.5",
		config.EnvBackoffMaxSeconds:  "0",
		config.EnvSMSMaxSegments:     "0",
	}
	_, err := config.Load(env(e), config.NeedDispatch)
	if err == nil {
		t.Fatal("Load accepted bad worker settings")
	}
	for _, name := range []string{
		config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvReconcileQueueURL,
		config.EnvMaxAttempts, config.EnvLeaseSeconds, config.EnvMinValiditySeconds, config.EnvMaxReconciles,
		config.EnvBackoffBaseMS, config.EnvBackoffMaxSeconds, config.EnvSMSMaxSegments,
		config.EnvSealKMSKeyID,
	} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "ten") || strings.Contains(err.Error(), "1.5") {
		t.Errorf("error echoes a value: %v", err)
	}
}

// TestLoadAuditRetentionOnlyWhereNeeded checks that AUDIT_RETENTION_DAYS is read by the
// functions of the audit table alone: a bad value stops them, and no other function.
func TestLoadAuditRetentionOnlyWhereNeeded(t *testing.T) {
	e := env(map[string]string{config.EnvAuditTable: "a", config.EnvNotificationsTable: "n", config.EnvAuditRetentionDays: "soon"})
	if _, err := config.Load(e, config.NeedAuditTable); err == nil || !strings.Contains(err.Error(), config.EnvAuditRetentionDays) {
		t.Errorf("audit Load = %v, want an error naming %s", err, config.EnvAuditRetentionDays)
	}
	if _, err := config.Load(e, config.NeedNotificationsTable); err != nil {
		t.Errorf("a function without the audit table refused AUDIT_RETENTION_DAYS: %v", err)
	}
	got, err := config.Load(env(map[string]string{config.EnvAuditTable: "a"}), config.NeedAuditTable)
	if err != nil || got.AuditRetention != config.DefaultAuditRetention {
		t.Errorf("unset AUDIT_RETENTION_DAYS: retention %v, err %v; want %v", got.AuditRetention, err, config.DefaultAuditRetention)
	}
}
