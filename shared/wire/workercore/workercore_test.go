package workercore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/wire/dispatch"
	"github.com/resetnotify/resetnotify/shared/wire/reconcile"
	"github.com/resetnotify/resetnotify/shared/wire/sweeper"
	"github.com/resetnotify/resetnotify/shared/wire/workercore"
)

// TestWorkersRefuseAShortGrace checks that every worker's cold start applies CheckRetention.
func TestWorkersRefuseAShortGrace(t *testing.T) {
	c := config.Config{Policy: notify.DefaultPolicy(), NotificationsTable: "n",
		DispatchQueueURL: "http://127.0.0.1:1/q/d", ReconcileQueueURL: "http://127.0.0.1:1/q/r", SealLocalKey: make([]byte, 32)}
	c.Policy.StatusGrace = time.Hour
	w := workercore.Wiring{Config: c, SMS: config.SMS{Kind: config.SMSSimulator, SimulatorURL: "http://127.0.0.1:1",
		Timeout: 5 * time.Second, Visibility: time.Hour}}
	build := map[string]func() error{
		"dispatch":  func() error { _, err := dispatch.Build(t.Context(), w); return err },
		"reconcile": func() error { _, err := reconcile.Build(t.Context(), w); return err },
		"sweeper":   func() error { _, err := sweeper.Build(w); return err },
	}
	for name, b := range build {
		t.Run(name, func(t *testing.T) {
			if err := b(); err == nil || !strings.Contains(err.Error(), config.EnvStatusGraceHours) {
				t.Errorf("built with a 1 h grace and a 1 h visibility window: %v", err)
			}
		})
	}
	w.SMS.Visibility = time.Minute
	if _, err := sweeper.Build(w); err != nil {
		t.Errorf("sweeper refused a 1 h grace with a 1 min window: %v", err)
	}
}
