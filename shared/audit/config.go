package audit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EnvRetentionDays is the environment variable, set by template.yaml from the
// AuditRetentionDays parameter, that holds how many days entries are kept.
const EnvRetentionDays = "AUDIT_RETENTION_DAYS"

// ParseRetention reads an AUDIT_RETENTION_DAYS value: a whole number of days, at least 1.
// The empty string means DefaultRetention.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultRetention, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 100*366 {
		return 0, fmt.Errorf("%s must be a whole number of days from 1 to 36600", EnvRetentionDays)
	}
	return time.Duration(n) * 24 * time.Hour, nil
}

// The digest step's environment variables, set by template.yaml (DigestFunction).
const (
	// EnvDigestKMSKeyID names the KMS asymmetric key (ECC_NIST_P256, SIGN_VERIFY) that signs
	// digests in AWS.
	EnvDigestKMSKeyID = "AUDIT_DIGEST_KMS_KEY_ID"
	// EnvDigestLocalKey holds, in local runs, the PEM (PKCS #8) of the ECDSA P-256 key used
	// instead of KMS.
	EnvDigestLocalKey = "AUDIT_DIGEST_LOCAL_KEY"
	// EnvDigestPeriodMinutes is the length of a digest period in minutes (template parameter
	// AuditDigestPeriodMinutes; a minute locally).
	EnvDigestPeriodMinutes = "AUDIT_DIGEST_PERIOD_MINUTES"
	// EnvDigestGraceSeconds is how long after a period's end its digest waits.
	EnvDigestGraceSeconds = "AUDIT_DIGEST_GRACE_SECONDS"
	// EnvDigestPublicKey names a PEM file holding the digests' public key, for auditctl; the
	// local stack prints it.
	EnvDigestPublicKey = "AUDIT_DIGEST_PUBLIC_KEY"
)

// Digest defaults.
const (
	DefaultDigestPeriod = time.Hour
	// DefaultDigestGrace exceeds the audit function's 60-second timeout: an entry's
	// written_at is stamped during an invocation, so its put has completed by then.
	DefaultDigestGrace = 90 * time.Second
)

// DigestSettings are the digest step's period and grace.
type DigestSettings struct {
	Period, Grace time.Duration
}

// ParseDigestSettings reads AUDIT_DIGEST_PERIOD_MINUTES (1 to 1440, dividing a day, default
// 60) and AUDIT_DIGEST_GRACE_SECONDS (1 to 3600, default 90) through getenv.
func ParseDigestSettings(getenv func(string) string) (DigestSettings, error) {
	s := DigestSettings{Period: DefaultDigestPeriod, Grace: DefaultDigestGrace}
	var errs []error
	if v := strings.TrimSpace(getenv(EnvDigestPeriodMinutes)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1440 || 1440%n != 0 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of minutes that divides a day (1 to 1440)", EnvDigestPeriodMinutes))
		}
		s.Period = time.Duration(n) * time.Minute
	}
	if v := strings.TrimSpace(getenv(EnvDigestGraceSeconds)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3600 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of seconds from 1 to 3600", EnvDigestGraceSeconds))
		}
		s.Grace = time.Duration(n) * time.Second
	}
	if err := errors.Join(errs...); err != nil {
		return DigestSettings{}, err
	}
	return s, nil
}
