package audit

import (
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
