// Package localapitest serves the real intake handler the way `make local` does, for the tests
// of its callers (the API contract, the client, resetctl): package intake's handler behind
// the local gateway, on the routes template.yaml declares.
package localapitest

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// IntakeFunction is the intake function's logical ID in template.yaml.
const IntakeFunction = "IntakeFunction"

// Handler returns in's HTTP API handler behind the local gateway, serving the routes that the
// template at templatePath gives the intake function. A nil log discards.
func Handler(t testing.TB, templatePath string, in *notify.Service, log *slog.Logger) http.Handler {
	t.Helper()
	routes, err := localapi.RoutesFromTemplate(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	return localapi.NewServer(routes, map[string]localapi.HandlerFunc{IntakeFunction: intake.New(in, log, nil).Handle})
}

// Server serves Handler on a loopback port until the test ends.
func Server(t testing.TB, templatePath string, in *notify.Service, log *slog.Logger) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(t, templatePath, in, log))
	t.Cleanup(srv.Close)
	return srv
}

// FakeIntake returns an Intake on store and queue with the notifytest sealer and hasher, the
// default policy, ULIDs, owned keys, and clock (the wall clock when nil).
func FakeIntake(store notify.Store, queue notify.Queue, clock notify.Clock) *notify.Service {
	if clock == nil {
		clock = notify.SystemClock{}
	}
	in := &notify.Service{
		Store: store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: notifytest.Sealer{}, Queue: queue,
		Clock: clock, Policy: notify.DefaultPolicy(), NewID: func() string { return ulid.Make().String() },
		// Callers own their keys, as deployed; the local gateway names the caller.
		Owners: notifytest.Sealer{},
	}
	if fake, ok := clock.(*notifytest.Clock); ok {
		// A duplicate waiting for a guarded admission's decision moves the fake clock instead.
		in.Sleep = notifytest.SleepOn(fake)
	}
	return in
}

// StoredKey returns the key under which in stores key for a request through the local gateway
// from its default caller: keys are scoped to their owner when in has Owners.
func StoredKey(in *notify.Service, key string) string {
	if in.Owners == nil {
		return key
	}
	principal, err := notify.CanonicalPrincipal(localapi.Caller(localapi.LocalCallerRole).IAM.UserARN)
	if err != nil {
		panic(err)
	}
	return notify.ScopedKey(in.Owners.OwnerFP(principal), key)
}
