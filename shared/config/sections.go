package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	// TwilioTokens are the Twilio auth tokens whose X-Twilio-Signature a status callback may
	// carry: the primary (TWILIO_AUTH_TOKEN, or the SSM SecureString TWILIO_AUTH_TOKEN_PARAM)
	// and, during a rotation, the secondary (TWILIO_SECONDARY_AUTH_TOKEN[_PARAM]).
	// TwilioTokenParams names the parameters still to read. TwilioCallbackURL
	// (TWILIO_CALLBACK_URL) is the route's public URL, which the signature covers.
	TwilioTokens      [][]byte
	TwilioTokenParams []string
	TwilioCallbackURL string
	// SinchPreviousToken is, during a rotation, the callback token being retired
	// (SINCH_CALLBACK_TOKEN_PREVIOUS), which the Sinch webhook accepts too;
	// SinchPreviousTokenParam names its SSM SecureString. Both empty outside a rotation.
	SinchPreviousToken      []byte
	SinchPreviousTokenParam string
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
	var webhookErr, sinchErr error
	c.WebhookToken, c.WebhookTokenParam, webhookErr = secretVars(getenv, EnvSimulatorWebhookToken, EnvSimulatorWebhookTokenParam, MinWebhookTokenLen)
	c.SinchToken, c.SinchTokenParam, sinchErr = secretVars(getenv, EnvSinchCallbackToken, EnvSinchCallbackTokenParam, MinWebhookTokenLen)
	var previousErr error
	c.SinchPreviousToken, c.SinchPreviousTokenParam, previousErr = secretVars(getenv, EnvSinchCallbackTokenPrevious, EnvSinchCallbackTokenPreviousParam, MinWebhookTokenLen)
	errs = append(errs, webhookErr, sinchErr, previousErr)
	errs = append(errs, c.loadTwilio(getenv))
	if err := errors.Join(errs...); err != nil {
		return Receipts{}, fmt.Errorf("config.receipts: %w", err)
	}
	return c, nil
}

// loadTwilio reads the Twilio status callbacks' tokens and URL: each token from its variable
// or, when that is empty, names its SSM parameter.
func (c *Receipts) loadTwilio(getenv func(string) string) error {
	get := trimmed(getenv)
	var errs []error
	for _, v := range [][2]string{{EnvTwilioAuthToken, EnvTwilioAuthTokenParam}, {EnvTwilioSecondaryAuthToken, EnvTwilioSecondaryAuthTokenParam}} {
		if tok := getenv(v[0]); tok != "" {
			if len(tok) < MinTwilioAuthTokenLen {
				errs = append(errs, fmt.Errorf("%s must be at least %d bytes", v[0], MinTwilioAuthTokenLen))
			}
			c.TwilioTokens = append(c.TwilioTokens, []byte(tok))
		} else if p := get(v[1]); p != "" {
			c.TwilioTokenParams = append(c.TwilioTokenParams, p)
		}
	}
	c.TwilioCallbackURL = get(EnvTwilioCallbackURL)
	return errors.Join(errs...)
}

// String describes the configuration without the tokens.
func (c Receipts) String() string {
	twilio := "off"
	if len(c.TwilioTokens)+len(c.TwilioTokenParams) > 0 {
		twilio = fmt.Sprintf("%d tokens (%d in ssm)", len(c.TwilioTokens)+len(c.TwilioTokenParams), len(c.TwilioTokenParams))
	}
	return fmt.Sprintf("receipts_table=%s retention=%s simulator_webhook=%s sinch_webhook=%s sinch_previous_token=%s twilio_callbacks=%s", c.Table, c.Retention,
		webhookState(c.WebhookToken, c.WebhookTokenParam), webhookState(c.SinchToken, c.SinchTokenParam),
		webhookState(c.SinchPreviousToken, c.SinchPreviousTokenParam), twilio)
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

// secretVars reads a secret given in one of two variables, the rule every secret of the
// functions follows: inlineEnv holds the secret itself (local runs; at least minLen bytes), or,
// when it is unset, paramEnv names the SSM SecureString that holds it (AWS). At most one of
// inline and param is set; the wiring turns them into the secret with secretparam.Resolve, the
// one resolver, once at cold start.
func secretVars(getenv func(string) string, inlineEnv, paramEnv string, minLen int) (inline []byte, param string, err error) {
	if v := getenv(inlineEnv); v != "" {
		if len(v) < minLen {
			err = fmt.Errorf("%s must be at least %d bytes", inlineEnv, minLen)
		}
		return []byte(v), "", err
	}
	return nil, strings.TrimSpace(getenv(paramEnv)), nil
}
