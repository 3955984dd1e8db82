package providerevents_test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/providerevents"
)

func TestBuildRefusesIncompleteConfig(t *testing.T) {
	t.Setenv(config.EnvNotificationsTable, "")
	t.Setenv(config.EnvReceiptsTable, "")
	t.Setenv(config.EnvSimulatorWebhookToken, "short")
	t.Setenv("AWS_REGION", "eu-west-1")
	_, err := wire.Build(t.Context(), providerevents.Function, os.Getenv, io.Discard)
	if err == nil {
		t.Fatal("built without configuration")
	}
	for _, name := range []string{config.EnvNotificationsTable, config.EnvReceiptsTable, config.EnvSimulatorWebhookToken} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "short") {
		t.Errorf("error %q quotes the token", err)
	}
}
