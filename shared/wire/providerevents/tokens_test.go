package providerevents

import (
	"context"
	"testing"

	"github.com/resetnotify/resetnotify/shared/adapters/secretparam/secretparamtest"
	"github.com/resetnotify/resetnotify/shared/config"
)

// TestReadTokens checks that each webhook's token is its inline value, else its parameter's,
// and that a webhook given neither stays off without an error.
func TestReadTokens(t *testing.T) {
	const inline, stored = "inline-webhook-token-0123", "stored-sinch-token-0123"
	f := &secretparamtest.SSM{ByName: map[string]string{"/sinch": stored, "/sim": "never-read-token-0123"}}
	rcfg := config.Receipts{WebhookToken: []byte(inline), WebhookTokenParam: "/sim", SinchTokenParam: "/sinch"}
	if err := readTokens(context.Background(), f, &rcfg); err != nil {
		t.Fatal(err)
	}
	if string(rcfg.WebhookToken) != inline || string(rcfg.SinchToken) != stored || len(f.Inputs) != 1 {
		t.Errorf("tokens %q, %q after %d reads; want the inline one and the stored one after 1", rcfg.WebhookToken, rcfg.SinchToken, len(f.Inputs))
	}
	off := config.Receipts{}
	if err := readTokens(context.Background(), f, &off); err != nil || off.WebhookToken != nil || off.SinchToken != nil {
		t.Errorf("neither given: %v, tokens %q %q", err, off.WebhookToken, off.SinchToken)
	}
	short := config.Receipts{SinchTokenParam: "/short"}
	f.ByName["/short"] = "short"
	if err := readTokens(context.Background(), f, &short); err == nil {
		t.Error("a stored token under the minimum length was taken")
	}
}
