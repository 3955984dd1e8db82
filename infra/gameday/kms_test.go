package gameday

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
)

// killTally is a proxy whose rules are a real faultproxy's and whose kill tally the test sets:
// the kills a stack's processes would meet.
type killTally struct {
	p     *faultproxy.Proxy
	mu    sync.Mutex
	kills map[string]int64 // by function name
}

func (k *killTally) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != faultproxy.ControlPrefix+"counts" {
		k.p.ServeHTTP(w, r)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var c faultproxy.Counts
	for fn, n := range k.kills {
		c.Faults = append(c.Faults, faultproxy.FaultCount{Service: "dynamodb", Operation: "UpdateItem", Kind: faultproxy.KindKill, Function: fn, Count: n})
	}
	_ = json.NewEncoder(w).Encode(c)
}

func (k *killTally) kill(fn string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kills[fn]++
}

// TestKMSOutageKillsDispatchBeforeIntakeFailsClosed: the outage begins with dispatch (its kill
// and its KMS rule) alone; intake's kill and KMS rule, which leave dispatch without work, come
// only once the proxy's tally shows dispatch killed, and the digest's and any caller's KMS
// rules once intake was killed too. Without the wait, dispatch would never be killed.
func TestKMSOutageKillsDispatchBeforeIntakeFailsClosed(t *testing.T) {
	p, err := faultproxy.New("http://127.0.0.1:1", faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tally := &killTally{p: p, kills: map[string]int64{"resetnotify-gd-IntakeFunction-OLD": 1}}
	srv := httptest.NewServer(tally)
	defer srv.Close()
	defer func(w, p time.Duration) { killWait, killPoll = w, p }(killWait, killPoll)
	killWait, killPoll = time.Minute, 10*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc := KMSOutage()
	x := &Exec{Run: &Run{Proxy: faultproxy.NewClient(srv.URL), Logf: t.Logf}, Scenario: sc, simFaults: map[string]int64{}, hold: time.Minute}
	rules := func() []string {
		rs, err := x.Proxy.Rules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.Service+" "+string(r.Kind)+" "+r.Function)
		}
		return out
	}
	// waitRules waits until n rules are in force, then a few polls longer, and returns them.
	waitRules := func(n int) []string {
		for len(rules()) < n && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * killPoll)
		return rules()
	}
	done := make(chan error, 1)
	go func() { done <- sc.Inject(ctx, x) }()

	want := []string{"dynamodb kill DispatchFunction", "kms error500 DispatchFunction"}
	if got := waitRules(2); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("before dispatch was killed: rules %q, want %q", got, want)
	}
	tally.kill("resetnotify-gd-DispatchFunction-A1")
	want = append(want, "dynamodb kill IntakeFunction", "kms error500 IntakeFunction")
	if got := waitRules(4); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("after dispatch was killed: rules %q, want %q (intake's old kill does not count)", got, want)
	}
	tally.kill("resetnotify-gd-IntakeFunction-B2")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := sc.Check(ctx, x); len(v) != 0 {
		t.Errorf("both functions killed: check says %q", v)
	}
	want = append(want, "kms error500 DigestFunction", "kms error500 ")
	if got := rules(); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("after both kills: rules %q, want %q", got, want)
	}
	for _, r := range must(x.Proxy.Rules(ctx)) {
		if r.Kind == faultproxy.KindKill && (r.Limit != 1 || !r.After || r.All != (r.Function == "IntakeFunction")) {
			t.Errorf("kill rule %+v: want one kill, after the call, of every process for intake (a warm one seals through the outage)", r)
		}
	}
}

// TestKMSOutageWaitIsBounded: a kill that never comes holds the outage back killWait at most
// (the kill count then makes the scenario vacuous); under faults-off nothing is waited for.
func TestKMSOutageWaitIsBounded(t *testing.T) {
	p, err := faultproxy.New("http://127.0.0.1:1", faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&killTally{p: p, kills: map[string]int64{}})
	defer srv.Close()
	defer func(w, p time.Duration) { killWait, killPoll = w, p }(killWait, killPoll)
	killWait, killPoll = 200*time.Millisecond, 10*time.Millisecond
	for _, sabotage := range []string{"", SabotageFaultsOff} {
		var logged []string
		logf := func(format string, args ...any) { logged = append(logged, format) }
		x := &Exec{Run: &Run{Proxy: faultproxy.NewClient(srv.URL), Logf: logf, Sabotage: sabotage}, Scenario: KMSOutage(), simFaults: map[string]int64{}, hold: time.Minute}
		began := time.Now()
		if err := x.Scenario.Inject(context.Background(), x); err != nil {
			t.Fatal(err)
		}
		took := time.Since(began)
		switch {
		case sabotage == "" && (took < 2*killWait || took > 20*killWait):
			t.Errorf("no kill: Inject took %s, want about two waits of %s", took, killWait)
		case sabotage == "" && !strings.Contains(strings.Join(logged, "\n"), "not killed within"):
			t.Errorf("no kill: logged %q, want the missed kill named", logged)
		case sabotage != "" && took > killWait:
			t.Errorf("faults-off: Inject took %s, waiting for kills no rule asked for", took)
		case sabotage != "" && len(must(x.Proxy.Rules(context.Background()))) > 0:
			t.Errorf("faults-off: rules %+v put in force", must(x.Proxy.Rules(context.Background())))
		}
		// Neither function killed: the check names both, whatever the total kill count.
		if v := x.Scenario.Check(context.Background(), x); len(v) != 2 {
			t.Errorf("no kill: check says %q, want both functions named", v)
		}
		if err := x.Proxy.Clear(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestKMSOutageCheckNamesTheFunctionNotKilled: three intake processes killed make "kill" 3, over
// its least 2, yet dispatch, never killed, fails the scenario.
func TestKMSOutageCheckNamesTheFunctionNotKilled(t *testing.T) {
	x := &Exec{Run: &Run{}, Scenario: KMSOutage(), killed: map[string]int64{"IntakeFunction": 3}}
	if v := x.Scenario.Check(context.Background(), x); len(v) != 1 || !strings.Contains(v[0], "DispatchFunction") {
		t.Errorf("check says %q, want dispatch named alone", v)
	}
}
