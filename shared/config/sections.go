package config

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The audit functions' variables (audit, audit-replay, digest) beyond the tables'.
const (
	// EnvAuditRetentionDays is how many days audit entries are kept (template parameter
	// AuditRetentionDays).
	EnvAuditRetentionDays = "AUDIT_RETENTION_DAYS"
	// EnvAuditDigestKMSKeyID names the KMS asymmetric key (ECC_NIST_P256, SIGN_VERIFY) that
	// signs digests in AWS.
	EnvAuditDigestKMSKeyID = "AUDIT_DIGEST_KMS_KEY_ID"
	// EnvAuditDigestLocalKey holds, in local runs, the PEM (PKCS #8) of the ECDSA P-256 key
	// used instead of KMS. A secret.
	EnvAuditDigestLocalKey = "AUDIT_DIGEST_LOCAL_KEY"
	// EnvAuditDigestPeriodMinutes is the length of a digest period in minutes.
	EnvAuditDigestPeriodMinutes = "AUDIT_DIGEST_PERIOD_MINUTES"
	// EnvAuditDigestGraceSeconds is how long after a period's end its digest waits.
	EnvAuditDigestGraceSeconds = "AUDIT_DIGEST_GRACE_SECONDS"
	// EnvAuditDigestLagBoundSeconds is how far the digest step may fall behind before a
	// digest not yet written counts as missing rather than late (verify), and the threshold of
	// the digest-lag alarm (template parameter AuditDigestLagBoundSeconds).
	EnvAuditDigestLagBoundSeconds = "AUDIT_DIGEST_LAG_BOUND_SECONDS"
	// EnvAuditHotDays is how many days audit entries stay in the audit table once written
	// (template parameter AuditHotDays): then TTL removes them, their period being archived.
	// Unset or 0: no hot window, entries stay the whole retention.
	EnvAuditHotDays = "AUDIT_HOT_DAYS"
	// EnvAuditArchiveBucket is the S3 bucket (Object Lock, compliance mode) that the digest
	// function archives closed periods into. Unset: no archive step.
	EnvAuditArchiveBucket = "AUDIT_ARCHIVE_BUCKET"
	// EnvAuditDigestPublicKey names a PEM file holding the digests' public key. No function
	// reads it: auditctl does, and the local stack prints it.
	EnvAuditDigestPublicKey = "AUDIT_DIGEST_PUBLIC_KEY"
)

// The receipts' variables (provider-events; reconcile reads RECEIPTS_TABLE too).
const (
	EnvReceiptsTable        = "RECEIPTS_TABLE"
	EnvReceiptRetentionDays = "RECEIPT_RETENTION_DAYS"
	// EnvSimulatorWebhookToken is the shared token of the simulator's webhook, for local runs.
	// Empty (and no EnvSimulatorWebhookTokenParam) disables the webhook. A secret.
	EnvSimulatorWebhookToken = "SIMULATOR_WEBHOOK_TOKEN"
	// EnvSimulatorWebhookTokenParam names the SSM SecureString that holds the token in AWS;
	// the wiring reads it once at cold start.
	EnvSimulatorWebhookTokenParam = "SIMULATOR_WEBHOOK_TOKEN_PARAM"
)

// EnvMetricsNamespace sets the CloudWatch namespace of every metric a function emits
// (Config.MetricsNamespace). template.yaml sets it to "resetnotify/<stack name>".
const EnvMetricsNamespace = "METRICS_NAMESPACE"

// The variables the Lambda runtime sets: the audit functions record them as the actor of the
// entries they write.
const (
	EnvLambdaFunctionName    = "AWS_LAMBDA_FUNCTION_NAME"
	EnvLambdaFunctionVersion = "AWS_LAMBDA_FUNCTION_VERSION"
)

// The audit and receipts defaults. Packages audit and receipts name the same values; their
// tests keep them in step.
const (
	DefaultAuditRetention   = 400 * 24 * time.Hour
	DefaultReceiptRetention = 7 * 24 * time.Hour
	DefaultDigestPeriod     = time.Hour
	// DefaultDigestGrace exceeds the audit function's 60-second timeout: an entry's
	// written_at is stamped during an invocation, so its put has completed by then.
	DefaultDigestGrace = 90 * time.Second
	// DefaultDigestLagBound is how far behind the digest step may be before a digest not yet
	// written is missing: a catch-up after a load peak or a failed run or two.
	DefaultDigestLagBound = 15 * time.Minute
	// DigestSchedule is how often the digest step runs (template.yaml, DigestFunction's
	// schedule: rate(1 minute)): a period is closed at most this long after its grace ends.
	DigestSchedule = time.Minute
)

// MinWebhookTokenLen is the shortest webhook token accepted (the simulator's, Sinch's
// callback token), in bytes.
const MinWebhookTokenLen = 16

// AuditRetention reads AUDIT_RETENTION_DAYS: a whole number of days from 1 to 36600; unset
// means DefaultAuditRetention.
func AuditRetention(getenv func(string) string) (time.Duration, error) {
	return days(trimmed(getenv)(EnvAuditRetentionDays), 100*366, DefaultAuditRetention, EnvAuditRetentionDays)
}

// DefaultAuditHotDays is the template's AuditHotDays: how long entries stay in the table.
const DefaultAuditHotDays = 35

// AuditHot reads AUDIT_HOT_DAYS: a whole number of days from 0 to 36600; unset or 0 means no
// hot window (0: entries stay in the table for the whole retention).
func AuditHot(getenv func(string) string) (time.Duration, error) {
	v := trimmed(getenv)(EnvAuditHotDays)
	if v == "" || v == "0" {
		return 0, nil
	}
	return days(v, 100*366, 0, EnvAuditHotDays)
}

// Digest is the digest step's period, grace and lag bound.
type Digest struct {
	Period, Grace, LagBound time.Duration
}

// LoadDigest reads AUDIT_DIGEST_PERIOD_MINUTES (1 to 1440, dividing a day, default 60),
// AUDIT_DIGEST_GRACE_SECONDS (1 to 3600, default 90) and AUDIT_DIGEST_LAG_BOUND_SECONDS (0 to
// 86400, default 900).
func LoadDigest(getenv func(string) string) (Digest, error) {
	get := trimmed(getenv)
	s := Digest{Period: DefaultDigestPeriod, Grace: DefaultDigestGrace, LagBound: DefaultDigestLagBound}
	var errs []error
	if v := get(EnvAuditDigestPeriodMinutes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1440 || 1440%n != 0 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of minutes that divides a day (1 to 1440)", EnvAuditDigestPeriodMinutes))
		}
		s.Period = time.Duration(n) * time.Minute
	}
	if v := get(EnvAuditDigestGraceSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3600 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of seconds from 1 to 3600", EnvAuditDigestGraceSeconds))
		}
		s.Grace = time.Duration(n) * time.Second
	}
	if v := get(EnvAuditDigestLagBoundSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 86400 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of seconds from 0 to 86400", EnvAuditDigestLagBoundSeconds))
		}
		s.LagBound = time.Duration(n) * time.Second
	}
	if err := errors.Join(errs...); err != nil {
		return Digest{}, err
	}
	return s, nil
}

// DigestKey is the digest signing key's configuration: exactly one of a KMS key (AWS) and a
// local PEM (local runs). LocalPEM is a secret; the wiring parses it.
type DigestKey struct {
	KMSKeyID string
	LocalPEM []byte
}

// LoadDigestKey reads AUDIT_DIGEST_KMS_KEY_ID and AUDIT_DIGEST_LOCAL_KEY and requires one.
func LoadDigestKey(getenv func(string) string) (DigestKey, error) {
	k := DigestKey{KMSKeyID: trimmed(getenv)(EnvAuditDigestKMSKeyID)}
	if v := getenv(EnvAuditDigestLocalKey); v != "" {
		k.LocalPEM = []byte(v)
	}
	switch {
	case k.KMSKeyID != "" && k.LocalPEM != nil:
		return DigestKey{}, fmt.Errorf("set only one of %s and %s", EnvAuditDigestKMSKeyID, EnvAuditDigestLocalKey)
	case k.KMSKeyID == "" && k.LocalPEM == nil:
		return DigestKey{}, fmt.Errorf("%s (in AWS) or %s (locally) is required", EnvAuditDigestKMSKeyID, EnvAuditDigestLocalKey)
	}
	return k, nil
}

// Receipts is the receipts' configuration. WebhookToken and SinchToken are secrets: String
// hides them.
type Receipts struct {
	Table     string
	Retention time.Duration
	// WebhookToken is the simulator webhook's token; WebhookTokenParam names the SSM
	// SecureString of the token, used when WebhookToken is empty.
	WebhookToken      []byte
	WebhookTokenParam string
	// SinchToken is the token of Sinch's delivery report callbacks (SINCH_CALLBACK_TOKEN);
	// SinchTokenParam names its SSM SecureString (SINCH_CALLBACK_TOKEN_PARAM), used when
	// SinchToken is empty. Neither disables the Sinch webhook.
	SinchToken      []byte
	SinchTokenParam string
}

// LoadReceipts reads the receipts' variables. RECEIPTS_TABLE is required only when
// needTable is true (provider-events needs it; a reconcile function may run without it).
func LoadReceipts(getenv func(string) string, needTable bool) (Receipts, error) {
	get := trimmed(getenv)
	c := Receipts{Table: get(EnvReceiptsTable)}
	var errs []error
	if c.Table == "" && needTable {
		errs = append(errs, fmt.Errorf("%s is required", EnvReceiptsTable))
	}
	var err error
	if c.Retention, err = days(get(EnvReceiptRetentionDays), 3650, DefaultReceiptRetention, EnvReceiptRetentionDays); err != nil {
		errs = append(errs, err)
	}
	if v := getenv(EnvSimulatorWebhookToken); v != "" {
		if len(v) < MinWebhookTokenLen {
			errs = append(errs, fmt.Errorf("%s must be at least %d bytes", EnvSimulatorWebhookToken, MinWebhookTokenLen))
		}
		c.WebhookToken = []byte(v)
	} else {
		c.WebhookTokenParam = get(EnvSimulatorWebhookTokenParam)
	}
	if v := getenv(EnvSinchCallbackToken); v != "" {
		if len(v) < MinWebhookTokenLen {
			errs = append(errs, fmt.Errorf("%s must be at least %d bytes", EnvSinchCallbackToken, MinWebhookTokenLen))
		}
		c.SinchToken = []byte(v)
	} else {
		c.SinchTokenParam = get(EnvSinchCallbackTokenParam)
	}
	if err := errors.Join(errs...); err != nil {
		return Receipts{}, fmt.Errorf("config.receipts: %w", err)
	}
	return c, nil
}

// String describes the configuration without the tokens.
func (c Receipts) String() string {
	return fmt.Sprintf("receipts_table=%s retention=%s simulator_webhook=%s sinch_webhook=%s", c.Table, c.Retention,
		webhookState(c.WebhookToken, c.WebhookTokenParam), webhookState(c.SinchToken, c.SinchTokenParam))
}

// webhookState says whether a webhook has its token, and where it comes from.
func webhookState(token []byte, param string) string {
	switch {
	case len(token) > 0:
		return "enabled"
	case param != "":
		return "token-from-ssm"
	}
	return "disabled"
}

// GoString keeps %#v from printing the token.
func (c Receipts) GoString() string { return "config.Receipts{" + c.String() + "}" }

// days parses a whole number of days from 1 to maxDays; the empty string gives def.
func days(s string, maxDays int, def time.Duration, name string) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxDays {
		return 0, fmt.Errorf("%s must be a whole number of days from 1 to %d", name, maxDays)
	}
	return time.Duration(n) * 24 * time.Hour, nil
}
