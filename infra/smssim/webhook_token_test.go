package smssim_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

func TestWebhookToken(t *testing.T) {
	tests := []struct {
		name, token string
	}{
		{"with a token", "hook-secret"},
		{"without a token", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				tokens []string
				seen   []bool
			)
			hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				_, ok := r.Header[http.CanonicalHeaderKey(simapi.WebhookTokenHeader)]
				tokens = append(tokens, r.Header.Get(simapi.WebhookTokenHeader))
				seen = append(seen, ok)
			}))
			defer hook.Close()
			_, base := smssimtest.Start(t, smssim.Config{WebhookURL: hook.URL, WebhookToken: tc.token})
			if r := sendWith(t, base, "", simapi.SendRequest{To: number, Body: body, ClientRef: "n-a1", ValiditySeconds: 60}, time.Second); r.status != http.StatusCreated {
				t.Fatalf("send: %d", r.status)
			}
			waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(tokens) == 1 })
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{tc.token}, tokens); diff != "" {
				t.Errorf("token header (-want +got):\n%s", diff)
			}
			if seen[0] != (tc.token != "") {
				t.Errorf("header present %v with token %q", seen[0], tc.token)
			}
		})
	}
}
