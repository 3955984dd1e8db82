// Package smssimtest starts the SMS simulator inside a test.
package smssimtest

import (
	"net/http/httptest"
	"testing"

	"github.com/resetnotify/resetnotify/infra/smssim"
)

// Start serves a simulator with cfg on a loopback httptest server and returns it with its
// base URL. Cleanup closes the simulator first, which ends hanging requests, and then the
// httptest server, which waits for every request to finish.
func Start(t testing.TB, cfg smssim.Config) (*smssim.Server, string) {
	t.Helper()
	srv := smssim.New(cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("smssim close: %v", err)
		}
		ts.Close()
	})
	return srv, ts.URL
}
