package main

import (
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
)

// TestRunRefusesIncompleteConfig checks that a cold start without configuration returns an
// error naming what is missing (main logs it and exits), instead of starting the runtime.
func TestRunRefusesIncompleteConfig(t *testing.T) {
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvReconcileQueueURL, "SMS_PROVIDER"} {
		t.Setenv(name, "")
	}
	err := run(t.Context())
	if err == nil {
		t.Fatal("run succeeded without configuration")
	}
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvReconcileQueueURL} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}
