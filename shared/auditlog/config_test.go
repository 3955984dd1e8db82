package auditlog

import (
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
)

// TestDefaultsMatchConfig keeps the retention package config documents and applies equal to
// the one the entries fall back to.
func TestDefaultsMatchConfig(t *testing.T) {
	if DefaultRetention != config.DefaultAuditRetention {
		t.Errorf("audit.DefaultRetention %s, config.DefaultAuditRetention %s", DefaultRetention, config.DefaultAuditRetention)
	}
}
