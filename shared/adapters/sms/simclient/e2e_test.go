package simclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simclient"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// TestAgainstSimulator runs every fault mode of the real simulator through the client, then
// reconciles the attempt: the lookup finds exactly the attempts the simulator recorded.
func TestAgainstSimulator(t *testing.T) {
	tests := []struct {
		mode   smssim.Mode
		reason notify.Reason
		found  bool
	}{
		{smssim.ModeAccept, notify.ReasonProviderAccepted, true},
		{smssim.ModeLatency, notify.ReasonProviderAccepted, true},
		{smssim.ModeReject, notify.ReasonProviderRejected, false},
		{smssim.ModeThrottle, notify.ReasonProviderThrottled, false},
		{smssim.ModeUnavailable, notify.ReasonProviderUnavailable, false},
		{smssim.ModeTimeoutBeforeAccept, notify.ReasonProviderTimeout, false},
		{smssim.ModeAcceptThenTimeout, notify.ReasonProviderTimeout, true},
		{smssim.ModeAcceptThenDrop, notify.ReasonConnectionLost, true},
		{smssim.ModeErrorAfterAccept, notify.ReasonProviderAmbiguous, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			clock := notifytest.NewClock(t0)
			srv := smssim.New(smssim.Config{Clock: clock, Visibility: 10 * time.Second, Latency: 5 * time.Millisecond, Token: "tok"})
			base := startSim(t, srv)
			srv.SetFault(number, tc.mode)
			timeout := 10 * time.Second
			if tc.mode == smssim.ModeTimeoutBeforeAccept || tc.mode == smssim.ModeAcceptThenTimeout {
				timeout = 200 * time.Millisecond
			}
			c, err := simclient.New(simclient.Config{BaseURL: base, Token: "tok", Timeout: timeout, Visibility: 10 * time.Second, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			req := sendReq()
			out := c.Send(context.Background(), req)
			if out.Reason() != tc.reason {
				t.Fatalf("outcome %s (%v), want reason %s", out, out.Err, tc.reason)
			}
			lr := sms.LookupRequest{AttemptRef: req.AttemptRef, MessageID: out.MessageID, AttemptedAt: clock.Now()}
			res, err := c.Lookup(context.Background(), lr)
			if err != nil || res.Status != sms.LookupInconclusive {
				t.Errorf("lookup within the window: %+v, %v; want inconclusive", res, err)
			}
			clock.Advance(10 * time.Second)
			res, err = c.Lookup(context.Background(), lr)
			if err != nil {
				t.Fatalf("lookup: %v", err)
			}
			want := sms.LookupNotFound
			if tc.found {
				want = sms.LookupFound
			}
			if res.Status != want {
				t.Errorf("lookup after the window: %+v, want %s", res, want)
			}
			if got := len(srv.Accepted(number)); got != map[bool]int{true: 1}[tc.found] {
				t.Errorf("simulator accepted %d", got)
			}
		})
	}
}

func startSim(t *testing.T, srv *smssim.Server) string {
	t.Helper()
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return base
}
