package smssim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simclient"
)

// TestSendPortRefusesConnections: a simulator with a send port serves sends there; closed
// through the control API (on the other address, which keeps serving), the port refuses every
// connection, which the adapter classifies as not accepted / not written — proof that nothing
// was sent — while the simulator records nothing; opened again, the same URL accepts.
func TestSendPortRefusesConnections(t *testing.T) {
	sim := smssim.New(smssim.Config{})
	control, err := sim.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	sendURL, err := sim.StartSendPort("127.0.0.1:0")
	if err != nil || sendURL == control || sim.SendURL() != sendURL {
		t.Fatalf("StartSendPort = %q, %v (control %s)", sendURL, err, control)
	}
	client, err := simclient.New(simclient.Config{BaseURL: sendURL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sendOne := func(ref string) sms.Outcome {
		return client.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: time.Minute})
	}
	setRefusing := func(base string, refuse bool) int {
		b, _ := json.Marshal(simapi.Connections{Refuse: refuse})
		resp, err := http.Post(base+"/control/connections", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if out := sendOne("01JC0000000000000000000000-a1"); out.Class != sms.ClassAccepted {
		t.Fatalf("open port: %s (%v)", out, out.Err)
	}
	if code := setRefusing(control, true); code != http.StatusNoContent || !sim.Refusing() {
		t.Fatalf("closing the send port: %d, refusing %v", code, sim.Refusing())
	}
	for _, ref := range []string{"01JC0000000000000000000000-a2", "01JC0000000000000000000000-a3"} {
		out := sendOne(ref)
		if out.Class != sms.ClassNotAccepted || out.Detail != sms.DetailNotWritten || !sms.FailedBeforeWrite(out.Err) {
			t.Errorf("closed port: %s (%v), want not accepted / not written by a refused dial", out, out.Err)
		}
	}
	if got := len(sim.Messages()); got != 1 || len(sim.Requests()) != 1 {
		t.Errorf("the simulator recorded %d messages and %d requests, want 1 and 1", got, len(sim.Requests()))
	}
	if code := setRefusing(control, true); code != http.StatusNoContent {
		t.Errorf("closing a closed port: %d, want 204", code)
	}
	if code := setRefusing(control, false); code != http.StatusNoContent || sim.Refusing() {
		t.Fatalf("reopening the send port: %d", code)
	}
	if out := sendOne("01JC0000000000000000000000-a4"); out.Class != sms.ClassAccepted {
		t.Errorf("reopened port: %s (%v)", out, out.Err)
	}
	resp, err := http.Get(sendURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !resp.Close {
		t.Error("the send port kept the connection alive: a pooled connection could outlive a refusal")
	}

	plain := smssim.New(smssim.Config{})
	base, err := plain.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	if code := setRefusing(base, true); code != http.StatusConflict {
		t.Errorf("a simulator without a send port answered %d, want 409", code)
	}
	if err := plain.SetRefusing(true); !errors.Is(err, smssim.ErrNoSendPort) {
		t.Errorf("SetRefusing without a send port = %v", err)
	}
}
