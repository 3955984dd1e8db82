package wire_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/dispatch"
	"github.com/resetnotify/resetnotify/shared/wire/providerevents"
	"github.com/resetnotify/resetnotify/shared/wire/reconcile"
	"github.com/resetnotify/resetnotify/shared/wire/sweeper"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

// build adapts one function's wire.Build to the table below.
func build[H any](f wire.Function[H]) func(context.Context, func(string) string) error {
	return func(ctx context.Context, env func(string) string) error {
		_, err := wire.Build(ctx, f, env, io.Discard)
		return err
	}
}

// TestBuildRefusesIncompleteConfig checks that a cold start without its configuration returns
// an error naming every missing variable (main logs it and exits 1), instead of starting the
// runtime, and never quotes a secret it was given.
func TestBuildRefusesIncompleteConfig(t *testing.T) {
	queues := []string{config.EnvNotificationsTable, config.EnvDispatchQueueURL, config.EnvReconcileQueueURL}
	tests := []struct {
		name   string
		build  func(context.Context, func(string) string) error
		env    map[string]string
		named  []string
		secret string
	}{
		{"dispatch", build(dispatch.Function), nil, queues, ""},
		{"reconcile", build(reconcile.Function), nil, queues, ""},
		{"sweeper", build(sweeper.Function), nil, queues, ""},
		{"provider-events", build(providerevents.Function), map[string]string{config.EnvSimulatorWebhookToken: "short"},
			[]string{config.EnvNotificationsTable, config.EnvReceiptsTable, config.EnvSimulatorWebhookToken}, "short"},
		{"provider-events with a short Sinch callback token", build(providerevents.Function), map[string]string{config.EnvSinchCallbackToken: "sinch-short"},
			[]string{config.EnvNotificationsTable, config.EnvReceiptsTable, config.EnvSinchCallbackToken}, "sinch-short"},
	}
	t.Setenv("AWS_REGION", "eu-west-1")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(t.Context(), wiretest.Env(tc.env))
			if err == nil {
				t.Fatal("built without configuration")
			}
			for _, name := range tc.named {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("error %q quotes the secret", err)
			}
		})
	}
}
