// Package config names every environment variable the functions read and parses them, once,
// at cold start, one group of settings at a time: Load (the tables, queues, policy, keys,
// workers' timings and abuse guards), LoadSMS (the SMS provider), LoadReceipts,
// AuditRetention, LoadDigest and LoadDigestKey. Vars lists them all, for the table of
// docs/configuration.md and template.yaml's checks. A problem is reported with the name of the variable and what it
// must hold, never with its value: some of them are secrets. Config holds plain values only,
// so that a function that parses a group (the sweeper and SMS_TIMEOUT) links nothing of the
// code that uses it.
package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
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
	EnvSealKeysTable          = "SEAL_KEYS_TABLE" // the KMS data keys' table (with SEAL_KMS_KEY_ID)
	EnvDestinationPepper      = "DESTINATION_PEPPER"
	EnvDestinationPepperParam = "DESTINATION_PEPPER_PARAM"
	// The request fingerprint's HMAC key: the value itself locally, the name of an SSM
	// SecureString in AWS.
	EnvFingerprintKey      = "REQUEST_FINGERPRINT_KEY"
	EnvFingerprintKeyParam = "REQUEST_FINGERPRINT_KEY_PARAM"
	EnvLogLevel            = "LOG_LEVEL"

	// The background workers' variables (dispatch, reconcile, sweeper). The SMS provider's
	// own variables (SMS_PROVIDER, SMS_TIMEOUT, SMS_VISIBILITY_SECONDS, ...) are in sms.go.
	EnvReconcileQueueURL  = "RECONCILE_QUEUE_URL"
	EnvMaxAttempts        = "MAX_ATTEMPTS"
	EnvLeaseSeconds       = "LEASE_SECONDS"
	EnvMinValiditySeconds = "MIN_VALIDITY_SECONDS"
	EnvMaxReconciles      = "MAX_RECONCILES"
	EnvBackoffBaseMS      = "BACKOFF_BASE_MS"
	EnvBackoffMaxSeconds  = "BACKOFF_MAX_SECONDS"
	EnvSMSMaxSegments     = "SMS_MAX_SEGMENTS"

	// The intake's abuse guards. Without GUARD_TABLE no destination or prefix is counted;
	// without ALLOWED_COUNTRIES every country is allowed.
	EnvGuardTable           = "GUARD_TABLE"
	EnvGuardPerHour         = "GUARD_PER_HOUR"
	EnvGuardPerDay          = "GUARD_PER_DAY"
	EnvGuardPrefixDigits    = "GUARD_PREFIX_DIGITS"
	EnvGuardPrefixPerMinute = "GUARD_PREFIX_PER_MINUTE"
	EnvGuardDecisionMS      = "GUARD_DECISION_MS"
	EnvAllowedCountries     = "ALLOWED_COUNTRIES"
	// EnvAllowedNumberTypes lists the number types intake admits (notify.NumberTypes'
	// names); unset, notify.DefaultNumberTypes.
	EnvAllowedNumberTypes = "ALLOWED_NUMBER_TYPES"
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
	// NeedGuardTable wants GUARD_TABLE: the abuse guard's counter table, or Off.
	NeedGuardTable
	// NeedCountries wants ALLOWED_COUNTRIES: the allowed countries, or Off.
	NeedCountries
	// NeedConversionTable wants CONVERSION_TABLE: the conversion guard's table, or Off.
	NeedConversionTable
)

// Off is the value that turns an abuse guard off, explicitly: GUARD_TABLE=off (no counters),
// ALLOWED_COUNTRIES=off (every country), SMS_PROTECT_CONFIGURATION_ID=off (End User
// Messaging sends under no protect configuration). A guard's setting left empty is an error
// in a function that needs it, so a stack never starts without a guard by omission.
const Off = "off"

// What each function needs.
const (
	NeedIntake = NeedNotificationsTable | NeedDispatchQueue | NeedSealing | NeedPepper | NeedFingerprintKey |
		NeedGuardTable | NeedCountries | NeedConversionTable
	// Dispatch counts a record that reaches it undecided (its creator failed) before sending,
	// and re-checks every sealed number against the allow-list.
	NeedDispatch  = NeedNotificationsTable | NeedDispatchQueue | NeedReconcileQueue | NeedSealing | NeedGuardTable | NeedCountries | NeedConversionTable
	NeedReconcile = NeedNotificationsTable | NeedDispatchQueue | NeedReconcileQueue
	NeedSweeper   = NeedNotificationsTable | NeedDispatchQueue | NeedReconcileQueue
)

// Worker is the configuration only the background workers read. A zero field means "not
// set": package workercore's default applies (workercore.DefaultSettings), so defaults live in one
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
	// AuditRetention is AUDIT_RETENTION_DAYS, read only by the functions that need the audit
	// table (NeedAuditTable): how long an audit entry is kept.
	AuditRetention    time.Duration
	DispatchQueueURL  string
	ReconcileQueueURL string
	// Policy is notify.DefaultPolicy with POLICY_VERSION, SAFETY_MARGIN_SECONDS,
	// STATUS_GRACE_HOURS, MAX_AHEAD_HOURS and MAX_ATTEMPTS applied.
	Policy notify.Policy
	// SealKMSKeyID is the KMS key for envelope encryption in AWS; empty locally.
	SealKMSKeyID string
	// SealKeysTable is the seal-keys table the KMS data keys are kept in; required with
	// SealKMSKeyID, empty locally.
	SealKeysTable string
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
	// GuardTable is GUARD_TABLE, the guard's counter table; empty when GUARD_TABLE is Off
	// (or unset in a function that does not need it): the counters are off.
	GuardTable string
	// Guard is notify.DefaultGuardLimits with GUARD_PER_HOUR, GUARD_PER_DAY,
	// GUARD_PREFIX_DIGITS and GUARD_PREFIX_PER_MINUTE applied (0 turns a limit off).
	Guard notify.GuardLimits
	// GuardDecision is GUARD_DECISION_MS: how long after admission the request that created a
	// record may still refuse it, and so how long its duplicates wait at most for the decision
	// (notify.Service.DecisionBound).
	GuardDecision time.Duration
	// AllowedCountries is ALLOWED_COUNTRIES, comma-separated ISO 3166-1 alpha-2 countries such
	// as "US,CA", upper-cased; empty when ALLOWED_COUNTRIES is Off: every country is allowed. Load checks their shape only: the
	// intake function checks each against its phone-number metadata when it starts
	// (notify.NewCountries), so that no other function links that metadata.
	AllowedCountries []string
	// AllowedNumberTypes is ALLOWED_NUMBER_TYPES, comma-separated number types such as
	// "MOBILE,FIXED_LINE_OR_MOBILE" (notify.NumberTypes), upper-cased; unset,
	// notify.DefaultNumberTypes.
	AllowedNumberTypes []notify.NumberType
	// Conversion holds the conversion guard's settings (intake and dispatch).
	Conversion Conversion
	// OperatorPrincipal is OPERATOR_PRINCIPAL_ARN in canonical form: the principal that may
	// read every notification (notify.Service.Operator); empty for none.
	OperatorPrincipal string
	// Worker holds the background workers' settings.
	Worker   Worker
	LogLevel slog.Level
	// MetricsNamespace is METRICS_NAMESPACE, the CloudWatch namespace of every metric the
	// function emits; empty means obs.Namespace. template.yaml sets it to
	// "resetnotify/<stack name>", so that two stacks in one account never mix their metrics.
	MetricsNamespace string
}

// Load reads the configuration through getenv, checks every setting and reports all problems
// at once. An empty variable counts as unset.
func Load(getenv func(string) string, need Need) (Config, error) {
	r := &reader{getenv: getenv, get: trimmed(getenv), need: need}
	c := Config{
		NotificationsTable: r.required(NeedNotificationsTable, EnvNotificationsTable),
		AuditTable:         r.required(NeedAuditTable, EnvAuditTable),
		DispatchQueueURL:   r.required(NeedDispatchQueue, EnvDispatchQueueURL),
		ReconcileQueueURL:  r.required(NeedReconcileQueue, EnvReconcileQueueURL),
		Policy:             r.policy(),
		SealKMSKeyID:       r.get(EnvSealKMSKeyID),
		SealKeysTable:      r.get(EnvSealKeysTable),
	}
	c.SealLocalKey = r.sealing(c.SealKMSKeyID, c.SealKeysTable)
	c.DestinationPepper, c.DestinationPepperParam = r.pepper()
	c.FingerprintKey, c.FingerprintKeyParam = r.fingerprintKey()
	r.keysDiffer(c)
	c.Worker = r.worker()
	c.GuardTable, c.Guard, c.AllowedCountries = r.guard()
	c.AllowedNumberTypes = r.numberTypes()
	c.Conversion = r.conversion()
	c.OperatorPrincipal = r.operator()
	c.GuardDecision = notify.DefaultDecisionBound
	r.positiveDuration(EnvGuardDecisionMS, time.Millisecond, &c.GuardDecision, "must be a whole number of milliseconds, 1 or more")
	c.LogLevel = r.logLevel()
	c.MetricsNamespace = r.get(EnvMetricsNamespace)
	if need&NeedAuditTable != 0 {
		c.AuditRetention = r.auditRetention()
	}
	if err := errors.Join(r.errs...); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// auditRetention is AuditRetention, its problem collected with the others.
func (r *reader) auditRetention() time.Duration {
	d, err := AuditRetention(r.getenv)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	return d
}

// reader reads one function's variables and collects their problems, so that a cold start
// reports all of them at once.
type reader struct {
	getenv, get func(string) string
	need        Need
	errs        []error
}

// problem records that the variable name is wrong; format says what it must hold.
func (r *reader) problem(name, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s "+format, append([]any{name}, args...)...))
}

// required returns the variable name, a problem when it is unset and n is needed.
func (r *reader) required(n Need, name string) string {
	v := r.get(name)
	if v == "" && r.need&n != 0 {
		r.problem(name, "is required")
	}
	return v
}

// policy returns notify.DefaultPolicy with POLICY_VERSION, SAFETY_MARGIN_SECONDS,
// STATUS_GRACE_HOURS, MAX_AHEAD_HOURS and MAX_ATTEMPTS applied.
func (r *reader) policy() notify.Policy {
	p := notify.DefaultPolicy()
	if v := r.get(EnvPolicyVersion); v != "" {
		p.Version = v
	}
	// A margin of 0 makes the dispatch deadline the expiry itself: a message sent in the last
	// instant arrives after its token died. A grace of 0 lets TTL remove a record at expires_at
	// while a lease or a reconciliation of it may still be open (workercore.Settings checks the
	// grace against those timings where they are known).
	r.positiveDuration(EnvSafetyMarginSeconds, time.Second, &p.SafetyMargin,
		"must be a whole number of seconds, 1 or more (0 would let a send leave at the very moment the token expires)")
	r.positiveDuration(EnvStatusGraceHours, time.Hour, &p.StatusGrace,
		"must be a whole number of hours, 1 or more (0 would let TTL remove a record whose lease or reconciliation is still open)")
	r.positiveDuration(EnvMaxAheadHours, time.Hour, &p.MaxAhead, "must be a whole number of hours, 1 or more")
	r.positiveCount(EnvMaxAttempts, &p.MaxAttempts)
	if p.MaxAhead <= p.SafetyMargin {
		r.errs = append(r.errs, fmt.Errorf("%s must be longer than %s", EnvMaxAheadHours, EnvSafetyMarginSeconds))
	} else if err := p.Validate(); err != nil {
		r.errs = append(r.errs, err) // policy values are not secret
	}
	return p
}

// positiveDuration sets *out from the variable name, a whole number of units of 1 or more,
// when it is set; else it records the problem must.
func (r *reader) positiveDuration(name string, unit time.Duration, out *time.Duration, must string) {
	if d, ok := duration(r.get(name), unit); !ok || d == 0 {
		r.problem(name, must)
	} else if d > 0 {
		*out = d
	}
}

// positiveCount sets *out from the variable name, a whole number of 1 or more, when it is set.
func (r *reader) positiveCount(name string, out *int) {
	if n, ok := count(r.get(name)); !ok || n == 0 {
		r.problem(name, "must be a whole number, 1 or more")
	} else if n > 0 {
		*out = n
	}
}

// sealing reads SEAL_LOCAL_KEY and checks that exactly one of it and kmsKeyID is set when
// sealing is needed, and SEAL_KEYS_TABLE (keysTable) with kmsKeyID.
func (r *reader) sealing(kmsKeyID, keysTable string) []byte {
	var key []byte
	if v := r.get(EnvSealLocalKey); v != "" {
		var err error
		key, err = base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) != SealLocalKeyLen {
			r.problem(EnvSealLocalKey, "must be %d bytes in standard base64", SealLocalKeyLen)
		}
	}
	switch {
	case kmsKeyID != "" && key != nil:
		r.errs = append(r.errs, fmt.Errorf("set only one of %s and %s", EnvSealKMSKeyID, EnvSealLocalKey))
	case kmsKeyID == "" && key == nil && r.need&NeedSealing != 0:
		r.errs = append(r.errs, fmt.Errorf("%s (in AWS) or %s (locally) is required", EnvSealKMSKeyID, EnvSealLocalKey))
	case kmsKeyID != "" && keysTable == "" && r.need&NeedSealing != 0:
		r.errs = append(r.errs, fmt.Errorf("%s is required with %s: the data keys are kept there, not in every record", EnvSealKeysTable, EnvSealKMSKeyID))
	}
	return key
}

// pepper reads DESTINATION_PEPPER (the pepper, local runs) or, when it is unset,
// DESTINATION_PEPPER_PARAM (an SSM SecureString name, AWS; the wiring reads it once).
func (r *reader) pepper() ([]byte, string) {
	return r.secret(NeedPepper, EnvDestinationPepper, EnvDestinationPepperParam, MinPepperLen)
}

// fingerprintKey reads REQUEST_FINGERPRINT_KEY (the key, local runs) or, when it is unset,
// REQUEST_FINGERPRINT_KEY_PARAM (an SSM SecureString name, AWS; the wiring reads it once).
func (r *reader) fingerprintKey() ([]byte, string) {
	return r.secret(NeedFingerprintKey, EnvFingerprintKey, EnvFingerprintKeyParam, MinFingerprintKeyLen)
}

// secret reads a secret's two variables with secretVars, and records a problem when neither
// is set and n is needed.
func (r *reader) secret(n Need, inlineEnv, paramEnv string, minLen int) ([]byte, string) {
	inline, param, err := secretVars(r.getenv, inlineEnv, paramEnv, minLen)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	if inline == nil && param == "" && r.need&n != 0 {
		r.problem(inlineEnv, "or "+paramEnv+" is required")
	}
	return inline, param
}

// keysDiffer refuses a request fingerprint key that is the pepper or the sealing key.
func (r *reader) keysDiffer(c Config) {
	if k := c.FingerprintKey; k != nil && (bytes.Equal(k, c.DestinationPepper) || bytes.Equal(k, c.SealLocalKey) || string(k) == r.get(EnvSealLocalKey)) {
		r.errs = append(r.errs, fmt.Errorf("%s must differ from %s and %s", EnvFingerprintKey, EnvDestinationPepper, EnvSealLocalKey))
	}
	if c.FingerprintKeyParam != "" && c.FingerprintKeyParam == c.DestinationPepperParam {
		r.errs = append(r.errs, fmt.Errorf("%s must name another parameter than %s", EnvFingerprintKeyParam, EnvDestinationPepperParam))
	}
}

// worker reads the background workers' settings.
func (r *reader) worker() Worker {
	var w Worker
	must := "must be a whole number, 1 or more"
	r.positiveDuration(EnvLeaseSeconds, time.Second, &w.Lease, must)
	r.positiveDuration(EnvMinValiditySeconds, time.Second, &w.MinValidity, must)
	r.positiveDuration(EnvBackoffBaseMS, time.Millisecond, &w.BackoffBase, must)
	r.positiveDuration(EnvBackoffMaxSeconds, time.Second, &w.BackoffMax, must)
	r.positiveCount(EnvMaxReconciles, &w.MaxReconciles)
	r.positiveCount(EnvSMSMaxSegments, &w.MaxSegments)
	return w
}

// guard reads the abuse guards' settings: the counter table, the limits and the allowed
// calling codes.
func (r *reader) guard() (string, notify.GuardLimits, []string) {
	limits := notify.DefaultGuardLimits()
	for _, n := range []struct {
		name string
		out  *int
	}{
		{EnvGuardPerHour, &limits.PerHour},
		{EnvGuardPerDay, &limits.PerDay},
		{EnvGuardPrefixDigits, &limits.PrefixDigits},
		{EnvGuardPrefixPerMinute, &limits.PrefixPerMinute},
	} {
		if v, ok := count(r.get(n.name)); !ok {
			r.problem(n.name, "must be a whole number, 0 or more")
		} else if v >= 0 {
			*n.out = v
		}
	}
	if err := limits.Validate(); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s, %s, %s: %w", EnvGuardPerHour, EnvGuardPerDay, EnvGuardPrefixDigits, err))
	}
	return r.guardTable(), limits, r.countries()
}

// guardTable reads GUARD_TABLE: a table name, or Off ("").
func (r *reader) guardTable() string {
	switch v := r.get(EnvGuardTable); {
	case strings.EqualFold(v, Off):
		return ""
	case v == "" && r.need&NeedGuardTable != 0:
		r.problem(EnvGuardTable, "is required: it names the abuse guard's counter table (template: GuardTable); "+
			"set it to %q, explicitly, to run without the per-destination and per-prefix limits (docs/abuse-guards.md)", Off)
		return ""
	default:
		return v
	}
}

// countryCode is the shape of an ISO 3166-1 alpha-2 country.
var countryCode = regexp.MustCompile(`^[A-Z]{2}$`)

// countries reads ALLOWED_COUNTRIES: comma-separated alpha-2 codes, any case, each once; or
// Off (nil: every country).
func (r *reader) countries() []string {
	v := r.get(EnvAllowedCountries)
	switch {
	case strings.EqualFold(v, Off):
		return nil
	case v == "" && r.need&NeedCountries != 0:
		r.problem(EnvAllowedCountries, "is required: it lists the countries intake sends to, such as US,CA (template: AllowedCountries); "+
			"set it to %q, explicitly, to allow every country (docs/abuse-guards.md)", Off)
		return nil
	}
	var out []string
	for _, c := range strings.Split(v, ",") {
		if c = strings.ToUpper(strings.TrimSpace(c)); c == "" {
			continue
		}
		if !countryCode.MatchString(c) || slices.Contains(out, c) {
			r.problem(EnvAllowedCountries, "must list ISO 3166-1 alpha-2 countries, each once, such as US,CA")
			return nil
		}
		out = append(out, c)
	}
	if len(out) == 0 && v != "" {
		// Separators alone (",") name no country: that is not Off, and must not read as it.
		r.problem(EnvAllowedCountries, "lists no country; set it to %q, explicitly, to allow every country", Off)
	}
	return out
}

// numberTypes reads ALLOWED_NUMBER_TYPES: comma-separated number types, any case, each once;
// unset gives notify.DefaultNumberTypes.
func (r *reader) numberTypes() []notify.NumberType {
	var out []notify.NumberType
	for _, t := range strings.Split(r.get(EnvAllowedNumberTypes), ",") {
		kind := notify.NumberType(strings.ToUpper(strings.TrimSpace(t)))
		if kind == "" {
			continue
		}
		if !slices.Contains(notify.NumberTypes, kind) || slices.Contains(out, kind) {
			r.problem(EnvAllowedNumberTypes, "must list number types, each once, such as MOBILE,FIXED_LINE_OR_MOBILE")
			return nil
		}
		out = append(out, kind)
	}
	if len(out) == 0 {
		return slices.Clone(notify.DefaultNumberTypes)
	}
	return out
}

// logLevel reads LOG_LEVEL.
func (r *reader) logLevel() slog.Level {
	level, err := parseLevel(r.get(EnvLogLevel))
	if err != nil {
		r.problem(EnvLogLevel, "must be debug, info, warn or error")
	}
	return level
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
			slog.Int64("decision_ms", c.GuardDecision.Milliseconds()),
			slog.Any("allowed_countries", c.AllowedCountries)),
		slog.Group("conversion",
			slog.String("table", c.Conversion.Table),
			slog.Int64("window_ms", c.Conversion.Policy.Window.Milliseconds()),
			slog.Int("min_sends", c.Conversion.Policy.MinSends),
			slog.Float64("block_below", c.Conversion.Policy.BlockBelow),
			slog.Int64("block_for_ms", c.Conversion.Policy.BlockFor.Milliseconds()),
			slog.Int64("refresh_ms", c.Conversion.Policy.Refresh.Milliseconds())),
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
