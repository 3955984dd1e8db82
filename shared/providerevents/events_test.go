package providerevents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// eventsDir holds the sample events (sam local invoke -e events/provider-events-....json).
const eventsDir = "../../events"

// sampleToken is the webhook token in events/provider-events-simulator.json, sampleSinchToken
// the callback token in events/provider-events-sinch.json.
const (
	sampleToken      = "example-webhook-token-not-a-secret"
	sampleSinchToken = "example-sinch-callback-token-not-a-secret"
)

// readSample returns a sample event, checking that it decodes strictly into its event type.
func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var into any = &events.SNSEvent{}
	if strings.Contains(name, "simulator") || strings.Contains(name, "sinch") {
		into = &events.APIGatewayV2HTTPRequest{}
	}
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s does not decode as %T: %v", name, into, err)
	}
	return b
}

// TestSampleEvents runs every events/provider-events-*.json through Handle, in order, against
// one record that was sent as attempt 1 of notification 01JC5ZQ7W3M9N4P2R8T6V0X1Y2.
func TestSampleEvents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Sent through End User Messaging as the samples' message; the simulator's and Sinch's
	// samples name the same attempt from another provider, a neighbour's receipt that is never
	// applied.
	f.admit(t, "order-4711-reset-1", id, lease, notify.Change{
		To: notify.StateSent, Reason: notify.ReasonProviderAccepted, Provider: "endusersms",
		ProviderMessageID: "9539975a-e71f-45f3-b496-8d98dc098a77",
	})
	h := &providerevents.Handler{Recorder: f.rec, WebhookToken: []byte(sampleToken), SinchToken: []byte(sampleSinchToken)}

	tests := []struct {
		file string
		// wantHTTP is the webhook's answer; 0 for SNS events (which answer null).
		wantHTTP  int
		wantLog   providerevents.Outcome
		wantState notify.State
	}{
		{"provider-events-sns-successful.json", 0, providerevents.OutcomeRecorded, notify.StateSent},
		{"provider-events-sns-delivered.json", 0, providerevents.OutcomeTransitioned, notify.StateDelivered},
		{"provider-events-sns-blocked.json", 0, providerevents.OutcomeOrphan, notify.StateDelivered},
		{"provider-events-simulator.json", 200, providerevents.OutcomeMismatch, notify.StateDelivered},
		{"provider-events-sinch.json", 200, providerevents.OutcomeMismatch, notify.StateDelivered},
	}
	matches, err := filepath.Glob(filepath.Join(eventsDir, "provider-events-*.json"))
	if err != nil || len(matches) != len(tests) {
		t.Fatalf("events/provider-events-*.json: %d files (%v), the test knows %d", len(matches), err, len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			f.out.Reset()
			out, err := h.Handle(ctx, readSample(t, tc.file))
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if tc.wantHTTP != 0 {
				resp, ok := out.(events.APIGatewayV2HTTPResponse)
				if !ok || resp.StatusCode != tc.wantHTTP {
					t.Errorf("answer %+v, want %d", out, tc.wantHTTP)
				}
			} else if out != nil {
				t.Errorf("SNS answer %v, want nil", out)
			}
			if want := fmt.Sprintf(`"Outcome":%q`, tc.wantLog); !strings.Contains(f.out.String(), want) {
				t.Errorf("output lacks %s:\n%s", want, f.out.String())
			}
			if got, _ := f.store.Get(ctx, "order-4711-reset-1"); got.State != tc.wantState {
				t.Errorf("state %s, want %s", got.State, tc.wantState)
			}
			for _, secret := range []string{destination, origination, sampleToken, sampleSinchToken} {
				if strings.Contains(f.out.String(), secret) {
					t.Errorf("logs hold %s:\n%s", secret, f.out.String())
				}
			}
		})
	}
	for ref, rc := range f.receipts.byID {
		if s := fmt.Sprintf("%+v", rc); strings.Contains(s, destination) || strings.Contains(s, origination) {
			t.Errorf("receipt %s holds a phone number: %s", ref, s)
		}
	}
}
