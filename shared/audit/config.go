package audit

import (
	"github.com/resetnotify/resetnotify/shared/config"
)

// The audit functions' variables are named and parsed by package config (config.AuditRetention,
// config.LoadDigest, config.LoadDigestKey). These aliases keep the names cmd/auditctl and
// cmd/bench use.
const (
	EnvRetentionDays       = config.EnvAuditRetentionDays
	EnvDigestKMSKeyID      = config.EnvAuditDigestKMSKeyID
	EnvDigestLocalKey      = config.EnvAuditDigestLocalKey
	EnvDigestPeriodMinutes = config.EnvAuditDigestPeriodMinutes
	EnvDigestGraceSeconds  = config.EnvAuditDigestGraceSeconds
	EnvDigestPublicKey     = config.EnvAuditDigestPublicKey
)

// Digest defaults (config's).
const (
	DefaultDigestPeriod = config.DefaultDigestPeriod
	DefaultDigestGrace  = config.DefaultDigestGrace
)

// DigestSettings are the digest step's period and grace.
type DigestSettings = config.Digest

// ParseDigestSettings reads AUDIT_DIGEST_PERIOD_MINUTES and AUDIT_DIGEST_GRACE_SECONDS through
// getenv (config.LoadDigest); auditctl checks digests with the same settings.
func ParseDigestSettings(getenv func(string) string) (DigestSettings, error) {
	return config.LoadDigest(getenv)
}
