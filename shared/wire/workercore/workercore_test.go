package workercore_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

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

// TestDispatchCountsSendsAtTheStoresEndpoint: the conversion guard dispatch builds talks to
// the DynamoDB endpoint the wiring names (DynamoDBEndpoint), as the store does, not to the SDK
// configuration's own endpoint.
func TestDispatchCountsSendsAtTheStoresEndpoint(t *testing.T) {
	var wiringHits, configHits atomic.Int32
	recorder := func(n *atomic.Int32) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			http.Error(w, `{"__type":"com.amazon.coral.validate#ValidationException","message":"test"}`, http.StatusBadRequest)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	c := config.Config{Policy: notify.DefaultPolicy(), NotificationsTable: "n",
		DispatchQueueURL: "http://127.0.0.1:1/q/d", ReconcileQueueURL: "http://127.0.0.1:1/q/r", SealLocalKey: make([]byte, 32)}
	c.Conversion.Table, c.Conversion.Policy = "conversions", notify.DefaultConversionPolicy()
	w := workercore.Wiring{Config: c, SMS: config.SMS{Kind: config.SMSSimulator, SimulatorURL: "http://127.0.0.1:1",
		Timeout: 5 * time.Second, Visibility: time.Minute},
		AWS:              aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), BaseEndpoint: aws.String(recorder(&configHits))},
		DynamoDBEndpoint: recorder(&wiringHits)}
	d, err := dispatch.Build(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	if d.Conversions == nil {
		t.Fatal("no conversion guard with CONVERSION_TABLE set")
	}
	_, _, _ = d.Conversions.Sent(t.Context(), notify.Record{NotificationID: "n1", PrefixFP: "p", Country: "US", State: notify.StateSent})
	if wiringHits.Load() == 0 || configHits.Load() != 0 {
		t.Errorf("the conversion guard called the wiring's endpoint %d times and the configuration's %d", wiringHits.Load(), configHits.Load())
	}
}
