// Package config loads the functions' configuration from environment variables, once, at cold
// start. The variable names are fixed here and must match template.yaml. A problem is reported
// with the name of the variable and what it must hold, never with its value: some of them are
// secrets.
package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// The environment variables, as template.yaml sets them.
const (
	EnvNotificationsTable     = "NOTIFICATIONS_TABLE"
	EnvAuditTable             = "AUDIT_TABLE"
	EnvDispatchQueueURL       = "DISPATCH_QUEUE_URL"
	EnvPolicyVersion          = "POLICY_VERSION"
	EnvSafetyMarginSeconds    = "SAFETY_MARGIN_SECONDS"
	EnvStatusGraceHours       = "STATUS_GRACE_HOURS"
	EnvMaxAheadHours          = "MAX_AHEAD_HOURS"
	EnvSealKMSKeyID           = "SEAL_KMS_KEY_ID"
	EnvSealLocalKey           = "SEAL_LOCAL_KEY"
	EnvDestinationPepper      = "DESTINATION_PEPPER"
	EnvDestinationPepperParam = "DESTINATION_PEPPER_PARAM"
	// The request fingerprint's HMAC key: the value itself locally, the name of an SSM
	// SecureString in AWS.
	EnvFingerprintKey      = "REQUEST_FINGERPRINT_KEY"
	EnvFingerprintKeyParam = "REQUEST_FINGERPRINT_KEY_PARAM"
	EnvLogLevel            = "LOG_LEVEL"

	// The background workers' variables (dispatch, reconcile, sweeper). The SMS provider's
	// own variables (SMS_PROVIDER, SMS_TIMEOUT, SMS_VISIBILITY_SECONDS, ...) are read by
	// package sms/provider, which owns them.
	EnvReconcileQueueURL  = "RECONCILE_QUEUE_URL"
	EnvMaxAttempts        = "MAX_ATTEMPTS"
	EnvLeaseSeconds       = "LEASE_SECONDS"
	EnvMinValiditySeconds = "MIN_VALIDITY_SECONDS"
	EnvMaxReconciles      = "MAX_RECONCILES"
	EnvBackoffBaseMS      = "BACKOFF_BASE_MS"
	EnvBackoffMaxSeconds  = "BACKOFF_MAX_SECONDS"
	EnvSMSMaxSegments     = "SMS_MAX_SEGMENTS"

	// The intake's abuse guards. Without GUARD_TABLE no destination or prefix is counted;
	// without ALLOWED_CALLING_CODES every calling code is allowed.
	EnvGuardTable           = "GUARD_TABLE"
	EnvGuardPerHour         = "GUARD_PER_HOUR"
	EnvGuardPerDay          = "GUARD_PER_DAY"
	EnvGuardPrefixDigits    = "GUARD_PREFIX_DIGITS"
	EnvGuardPrefixPerMinute = "GUARD_PREFIX_PER_MINUTE"
	EnvAllowedCallingCodes  = "ALLOWED_CALLING_CODES"
)

// SealLocalKeyLen is the length in bytes of SEAL_LOCAL_KEY once base64-decoded (AES-256).
const SealLocalKeyLen = 32

// MinPepperLen is the shortest DESTINATION_PEPPER accepted, in bytes.
const MinPepperLen = 16

// MinFingerprintKeyLen is the shortest REQUEST_FINGERPRINT_KEY accepted, in bytes: the
// HMAC-SHA256 block of the fingerprint wants a key of at least its own 32-byte output.
const MinFingerprintKeyLen = 32

// Need names the settings a function cannot run without. Settings outside it are still
// parsed and checked when present.
type Need uint

// The settings a function may need.
const (
	NeedNotificationsTable Need = 1 << iota
	NeedAuditTable
	NeedDispatchQueue
	// NeedSealing wants one of SEAL_KMS_KEY_ID and SEAL_LOCAL_KEY.
	NeedSealing
	// NeedPepper wants DESTINATION_PEPPER.
	NeedPepper
	NeedReconcileQueue
	// NeedFingerprintKey wants REQUEST_FINGERPRINT_KEY or REQUEST_FINGERPRINT_KEY_PARAM.
	NeedFingerprintKey
)

// What each function needs.
const (
	NeedIntake    = NeedNotificationsTable | NeedDispatchQueue | NeedSealing | NeedPepper | NeedFingerprintKey
	NeedDispatch  = NeedNotificationsTable | NeedDispatchQueue | NeedReconcileQueue | NeedSealing
	NeedReconcile = NeedNotificationsTable | NeedDispatchQueue | NeedReconcileQueue
	NeedSweeper   = NeedNotificationsTable | NeedDispatchQueue | NeedReconcileQueue
)

// Worker is the configuration only the background workers read. A zero field means "not
// set": the worker package's default applies (worker.DefaultSettings), so defaults live in one
// place.
type Worker struct {
	// Lease is LEASE_SECONDS: how long a dispatch worker holds a record while calling the
	// provider. It must exceed the provider timeout (SMS_TIMEOUT) by a margin.
	Lease time.Duration
	// MinValidity is MIN_VALIDITY_SECONDS: the least time before the dispatch deadline worth
	// sending with.
	MinValidity time.Duration
	// MaxReconciles is MAX_RECONCILES: the inconclusive lookups allowed per attempt.
	MaxReconciles int
	// BackoffBase is BACKOFF_BASE_MS and BackoffMax is BACKOFF_MAX_SECONDS: the jittered
	// exponential backoff of retries and inconclusive lookups.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxSegments is SMS_MAX_SEGMENTS: the SMS segment budget of a rendered message.
	MaxSegments int
}

// Config is the loaded configuration. SealLocalKey, DestinationPepper and FingerprintKey are
// secrets: Config implements slog.LogValuer and fmt.Stringer so that logging it never shows
// them.
type Config struct {
	NotificationsTable string
	AuditTable         string
	DispatchQueueURL   string
	ReconcileQueueURL  string
	// Policy is notify.DefaultPolicy with POLICY_VERSION, SAFETY_MARGIN_SECONDS,
	// STATUS_GRACE_HOURS, MAX_AHEAD_HOURS and MAX_ATTEMPTS applied.
	Policy notify.Policy
	// SealKMSKeyID is the KMS key for envelope encryption in AWS; empty locally.
	SealKMSKeyID string
	// SealLocalKey is the AES-256 key used instead of KMS in local runs; nil in AWS.
	SealLocalKey []byte
	// DestinationPepper is the secret of the destination fingerprint HMAC.
	DestinationPepper []byte
	// DestinationPepperParam names the SSM SecureString that holds the pepper in AWS; it is
	// used only when DestinationPepper is empty.
	DestinationPepperParam string
	// FingerprintKey is the HMAC key of the request fingerprint (REQUEST_FINGERPRINT_KEY,
	// local runs). It is never the sealing key nor the pepper.
	FingerprintKey []byte
	// FingerprintKeyParam names the SSM SecureString that holds the fingerprint key in AWS;
	// it is used only when FingerprintKey is empty.
	FingerprintKeyParam string
	// GuardTable is GUARD_TABLE, the guard's counter table; empty turns the guard off.
	GuardTable string
	// Guard is notify.DefaultGuardLimits with GUARD_PER_HOUR, GUARD_PER_DAY,
	// GUARD_PREFIX_DIGITS and GUARD_PREFIX_PER_MINUTE applied (0 turns a limit off).
	Guard notify.GuardLimits
	// AllowedCallingCodes is ALLOWED_CALLING_CODES, comma-separated calling codes such as
	// "1,44", each checked by notify.NewCountries; empty allows every code.
	AllowedCallingCodes []string
	// Worker holds the background workers' settings.
	Worker   Worker
	LogLevel slog.Level
}

// FromEnv loads the configuration from the process environment.
func FromEnv(need Need) (Config, error) { return Load(os.Getenv, need) }

// Load reads the configuration through getenv, checks every setting and reports all problems
// at once. An empty variable counts as unset.
func Load(getenv func(string) string, need Need) (Config, error) {
	var errs []error
	problem := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s "+format, append([]any{name}, args...)...))
	}
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	required := func(n Need, name string) string {
		v := get(name)
		if v == "" && need&n != 0 {
			problem(name, "is required")
		}
		return v
	}

	c := Config{
		NotificationsTable: required(NeedNotificationsTable, EnvNotificationsTable),
		AuditTable:         required(NeedAuditTable, EnvAuditTable),
		DispatchQueueURL:   required(NeedDispatchQueue, EnvDispatchQueueURL),
		ReconcileQueueURL:  required(NeedReconcileQueue, EnvReconcileQueueURL),
		Policy:             notify.DefaultPolicy(),
		SealKMSKeyID:       get(EnvSealKMSKeyID),
	}

	if v := get(EnvPolicyVersion); v != "" {
		c.Policy.Version = v
	}
	// A margin of 0 makes the dispatch deadline the expiry itself: a message sent in the last
	// instant arrives after its token died. A grace of 0 lets TTL remove a record at expires_at
	// while a lease or a reconciliation of it may still be open (worker.Settings checks the
	// grace against those timings where they are known).
	if d, ok := duration(get(EnvSafetyMarginSeconds), time.Second); !ok || d == 0 {
		problem(EnvSafetyMarginSeconds, "must be a whole number of seconds, 1 or more (0 would let a send leave at the very moment the token expires)")
	} else if d > 0 {
		c.Policy.SafetyMargin = d
	}
	if d, ok := duration(get(EnvStatusGraceHours), time.Hour); !ok || d == 0 {
		problem(EnvStatusGraceHours, "must be a whole number of hours, 1 or more (0 would let TTL remove a record whose lease or reconciliation is still open)")
	} else if d > 0 {
		c.Policy.StatusGrace = d
	}
	if d, ok := duration(get(EnvMaxAheadHours), time.Hour); !ok || d == 0 {
		problem(EnvMaxAheadHours, "must be a whole number of hours, 1 or more")
	} else if d > 0 {
		c.Policy.MaxAhead = d
	}
	if n, ok := count(get(EnvMaxAttempts)); !ok || n == 0 {
		problem(EnvMaxAttempts, "must be a whole number, 1 or more")
	} else if n > 0 {
		c.Policy.MaxAttempts = n
	}
	if c.Policy.MaxAhead <= c.Policy.SafetyMargin {
		errs = append(errs, fmt.Errorf("%s must be longer than %s", EnvMaxAheadHours, EnvSafetyMarginSeconds))
	} else if err := c.Policy.Validate(); err != nil {
		errs = append(errs, err) // policy values are not secret
	}

	if v := get(EnvSealLocalKey); v != "" {
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) != SealLocalKeyLen {
			problem(EnvSealLocalKey, "must be %d bytes in standard base64", SealLocalKeyLen)
		}
		c.SealLocalKey = key
	}
	switch {
	case c.SealKMSKeyID != "" && c.SealLocalKey != nil:
		errs = append(errs, fmt.Errorf("set only one of %s and %s", EnvSealKMSKeyID, EnvSealLocalKey))
	case c.SealKMSKeyID == "" && c.SealLocalKey == nil && need&NeedSealing != 0:
		errs = append(errs, fmt.Errorf("%s (in AWS) or %s (locally) is required", EnvSealKMSKeyID, EnvSealLocalKey))
	}

	if v := getenv(EnvDestinationPepper); v != "" {
		if len(v) < MinPepperLen {
			problem(EnvDestinationPepper, "must be at least %d bytes", MinPepperLen)
		}
		c.DestinationPepper = []byte(v)
	} else if v := get(EnvDestinationPepperParam); v != "" {
		// In AWS the pepper is an SSM SecureString; the wiring reads it once at cold start.
		c.DestinationPepperParam = v
	} else if need&NeedPepper != 0 {
		problem(EnvDestinationPepper, "or "+EnvDestinationPepperParam+" is required")
	}

	c.FingerprintKey, c.FingerprintKeyParam = fingerprintKey(getenv, get, need, problem)
	if k := c.FingerprintKey; k != nil && (bytes.Equal(k, c.DestinationPepper) || bytes.Equal(k, c.SealLocalKey) || string(k) == get(EnvSealLocalKey)) {
		errs = append(errs, fmt.Errorf("%s must differ from %s and %s", EnvFingerprintKey, EnvDestinationPepper, EnvSealLocalKey))
	}
	if c.FingerprintKeyParam != "" && c.FingerprintKeyParam == c.DestinationPepperParam {
		errs = append(errs, fmt.Errorf("%s must name another parameter than %s", EnvFingerprintKeyParam, EnvDestinationPepperParam))
	}

	for _, d := range []struct {
		name string
		unit time.Duration
		out  *time.Duration
	}{
		{EnvLeaseSeconds, time.Second, &c.Worker.Lease},
		{EnvMinValiditySeconds, time.Second, &c.Worker.MinValidity},
		{EnvBackoffBaseMS, time.Millisecond, &c.Worker.BackoffBase},
		{EnvBackoffMaxSeconds, time.Second, &c.Worker.BackoffMax},
	} {
		v, ok := duration(get(d.name), d.unit)
		if !ok || v == 0 {
			problem(d.name, "must be a whole number, 1 or more")
		} else if v > 0 {
			*d.out = v
		}
	}
	for _, n := range []struct {
		name string
		out  *int
	}{
		{EnvMaxReconciles, &c.Worker.MaxReconciles},
		{EnvSMSMaxSegments, &c.Worker.MaxSegments},
	} {
		v, ok := count(get(n.name))
		if !ok || v == 0 {
			problem(n.name, "must be a whole number, 1 or more")
		} else if v > 0 {
			*n.out = v
		}
	}

	errs = append(errs, c.loadGuard(get)...)

	level, err := parseLevel(get(EnvLogLevel))
	if err != nil {
		problem(EnvLogLevel, "must be debug, info, warn or error")
	}
	c.LogLevel = level

	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// fingerprintKey reads REQUEST_FINGERPRINT_KEY (the key, local runs) or, when it is unset,
// REQUEST_FINGERPRINT_KEY_PARAM (an SSM SecureString name, AWS; the wiring reads it once).
func fingerprintKey(getenv, get func(string) string, need Need, problem func(name, format string, args ...any)) ([]byte, string) {
	if v := getenv(EnvFingerprintKey); v != "" {
		if len(v) < MinFingerprintKeyLen {
			problem(EnvFingerprintKey, "must be at least %d bytes", MinFingerprintKeyLen)
		}
		return []byte(v), ""
	}
	if v := get(EnvFingerprintKeyParam); v != "" {
		return nil, v
	}
	if need&NeedFingerprintKey != 0 {
		problem(EnvFingerprintKey, "or "+EnvFingerprintKeyParam+" is required")
	}
	return nil, ""
}

// loadGuard reads the abuse guards' settings into c and returns their problems.
func (c *Config) loadGuard(get func(string) string) []error {
	var errs []error
	c.GuardTable = get(EnvGuardTable)
	c.Guard = notify.DefaultGuardLimits()
	for _, n := range []struct {
		name string
		out  *int
	}{
		{EnvGuardPerHour, &c.Guard.PerHour},
		{EnvGuardPerDay, &c.Guard.PerDay},
		{EnvGuardPrefixDigits, &c.Guard.PrefixDigits},
		{EnvGuardPrefixPerMinute, &c.Guard.PrefixPerMinute},
	} {
		if v, ok := count(get(n.name)); !ok {
			errs = append(errs, fmt.Errorf("%s must be a whole number, 0 or more", n.name))
		} else if v >= 0 {
			*n.out = v
		}
	}
	if err := c.Guard.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s, %s, %s: %w", EnvGuardPerHour, EnvGuardPerDay, EnvGuardPrefixDigits, err))
	}
	var codes []string
	for _, code := range strings.Split(get(EnvAllowedCallingCodes), ",") {
		if code = strings.TrimSpace(code); code != "" {
			codes = append(codes, code)
		}
	}
	if _, err := notify.NewCountries(codes); err != nil {
		errs = append(errs, fmt.Errorf("%s must list country calling codes such as 1,44,49: %w", EnvAllowedCallingCodes, err))
	}
	c.AllowedCallingCodes = codes
	return errs
}

// parseLevel turns a LOG_LEVEL value (debug, info, warn or error, any case) into a level. The
// empty string means info.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, errors.New("want debug, info, warn or error")
}

// duration parses a whole, non-negative number of units. The empty string gives -1 and ok,
// meaning "keep the default".
func duration(s string, unit time.Duration) (time.Duration, bool) {
	if s == "" {
		return -1, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > int64(1<<62/unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// count parses a whole, non-negative number. The empty string gives -1 and ok, meaning "keep
// the default".
func count(s string) (int, bool) {
	if s == "" {
		return -1, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<20 {
		return 0, false
	}
	return n, true
}

// String describes the configuration with its secrets replaced.
func (c Config) String() string {
	return fmt.Sprintf("notifications_table=%s audit_table=%s dispatch_queue_url=%s reconcile_queue_url=%s policy_version=%s safety_margin=%s status_grace=%s max_ahead=%s sealing=%s pepper=%s fingerprint_key=%s log_level=%s",
		c.NotificationsTable, c.AuditTable, c.DispatchQueueURL, c.ReconcileQueueURL, c.Policy.Version, c.Policy.SafetyMargin,
		c.Policy.StatusGrace, c.Policy.MaxAhead, c.sealing(), set(c.DestinationPepper != nil), set(c.FingerprintKey != nil), c.LogLevel)
}

// LogValue describes the configuration with its secrets replaced.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("notifications_table", c.NotificationsTable),
		slog.String("audit_table", c.AuditTable),
		slog.String("dispatch_queue_url", c.DispatchQueueURL),
		slog.String("reconcile_queue_url", c.ReconcileQueueURL),
		slog.Int("max_attempts", c.Policy.MaxAttempts),
		slog.Group("worker",
			slog.Int64("lease_ms", c.Worker.Lease.Milliseconds()),
			slog.Int64("min_validity_ms", c.Worker.MinValidity.Milliseconds()),
			slog.Int("max_reconciles", c.Worker.MaxReconciles),
			slog.Int64("backoff_base_ms", c.Worker.BackoffBase.Milliseconds()),
			slog.Int64("backoff_max_ms", c.Worker.BackoffMax.Milliseconds()),
			slog.Int("max_segments", c.Worker.MaxSegments)),
		slog.String("policy_version", c.Policy.Version),
		slog.Int64("safety_margin_ms", c.Policy.SafetyMargin.Milliseconds()),
		slog.Int64("status_grace_ms", c.Policy.StatusGrace.Milliseconds()),
		slog.Int64("max_ahead_ms", c.Policy.MaxAhead.Milliseconds()),
		slog.String("sealing", c.sealing()),
		slog.String("destination_pepper", set(c.DestinationPepper != nil)),
		slog.String("fingerprint_key", set(c.FingerprintKey != nil)),
		slog.String("log_level", c.LogLevel.String()),
		slog.Group("guard",
			slog.String("table", c.GuardTable),
			slog.Int("per_hour", c.Guard.PerHour),
			slog.Int("per_day", c.Guard.PerDay),
			slog.Int("prefix_digits", c.Guard.PrefixDigits),
			slog.Int("prefix_per_minute", c.Guard.PrefixPerMinute),
			slog.Any("allowed_calling_codes", c.AllowedCallingCodes)),
	)
}

// GoString keeps %#v from printing the secrets too.
func (c Config) GoString() string { return "config.Config{" + c.String() + "}" }

func (c Config) sealing() string {
	switch {
	case c.SealKMSKeyID != "":
		return "kms"
	case c.SealLocalKey != nil:
		return "local-key"
	}
	return "unset"
}

func set(ok bool) string {
	if ok {
		return "set"
	}
	return "unset"
}
