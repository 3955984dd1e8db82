package main

import (
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/receipts"
)

func TestRunRefusesIncompleteConfig(t *testing.T) {
	t.Setenv(config.EnvNotificationsTable, "")
	t.Setenv(receipts.EnvTable, "")
	t.Setenv(receipts.EnvWebhookToken, "short")
	t.Setenv("AWS_REGION", "eu-west-1")
	err := run(t.Context())
	if err == nil {
		t.Fatal("run succeeded without configuration")
	}
	for _, name := range []string{config.EnvNotificationsTable, receipts.EnvTable, receipts.EnvWebhookToken} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "short") {
		t.Errorf("error %q quotes the token", err)
	}
}
