package sweeper_test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/sweeper"
)

// TestBuildRefusesIncompleteConfig checks that a cold start without configuration returns an
// error naming what is missing (main logs it and exits), instead of starting the runtime.
func TestBuildRefusesIncompleteConfig(t *testing.T) {
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvReconcileQueueURL, "SMS_PROVIDER"} {
		t.Setenv(name, "")
	}
	_, err := wire.Build(t.Context(), sweeper.Function, os.Getenv, io.Discard)
	if err == nil {
		t.Fatal("built without configuration")
	}
	for _, name := range []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvReconcileQueueURL} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}
