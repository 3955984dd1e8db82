package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/emulator"
)

// TestMakeLocal runs the local stack as `make local` does — every function's real bootstrap
// under the Lambda RIE — and drives it with HTTP as a developer would with curl: a POST is
// admitted (202), a replay answers 200, and the notification is dispatched to the simulator,
// sent and delivered; auditctl then shows its transitions, and CloudWatch (make local's
// MiniStack) the functions' metrics (checkMetrics); numbers of +1 outside the allowed
// countries are refused (checkCountries). SIGTERM stops everything started.
func TestMakeLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole local stack")
	}
	tools, err := emulator.FindToolsDir()
	if err == nil {
		_, err = os.Stat(filepath.Join(tools, "bin", "aws-lambda-rie"))
	}
	if err != nil {
		if os.Getenv(emulator.EnvEmulators) == emulator.EmulatorsRequired {
			t.Fatalf("the local stack's tools are not installed (make tools): %v", err)
		}
		t.Skip("integration test: .tools not installed; run `make test`, which installs them")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, fn := range []string{"intake", "dispatch", "reconcile", "sweeper", "audit", "provider-events", "digest", "audit-replay"} {
		build(t, root, filepath.Join(bin, fn, "bootstrap"), "./functions/"+fn, "-tags", "lambda.norpc")
	}
	local := filepath.Join(bin, "local")
	build(t, root, local, "./infra/local")
	auditctl := filepath.Join(bin, "auditctl")
	build(t, root, auditctl, "./auditor/auditctl")

	port := freePort(t)
	cmd := exec.Command(local)
	cmd.Dir = root
	// A Twilio API key of the test's own, so that the logs can be searched for its secret.
	const twilioKeySecret = "0123456789abcdeftwiliokeysecret0"
	cmd.Env = append(os.Environ(), "RESETNOTIFY_PORT="+port, "RESETNOTIFY_BIN_DIR="+bin, "TWILIO_API_KEY=SK0123456789abcdef0123456789abcdef:"+twilioKeySecret)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuilder
	cmd.Stderr = &stderr
	// If the test ends early, Kill stops local and, by Pdeathsig, the RIEs it started; the
	// pipe's copy is then given up after WaitDelay rather than waited on forever.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	exports, base := readUntilReady(t, stdout, &stderr)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	expires := time.Now().UTC().Add(15 * time.Minute).Format(time.RFC3339)
	body := `{"event_id":"evt-local","channel":"sms","purpose":"password_reset","to":"+12125550142","locale":"en","params":{"reset_url":"https://shop.example/reset/Zk3q"},"expires_at":"` + expires + `"}`
	if got := post(t, base+"/v1/notifications", body); got.StatusCode != http.StatusAccepted {
		t.Fatalf("POST = %d, want 202", got.StatusCode)
	}
	replay := post(t, base+"/v1/notifications", body)
	if replay.StatusCode != http.StatusOK || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %v, want 200 with Idempotent-Replayed", replay.StatusCode, replay.Header)
	}

	key := "evt-local:sms:password_reset"
	deadline := time.Now().Add(90 * time.Second)
	var state string
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/v1/notifications/" + key)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			State string `json:"state"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if state = v.State; state == "delivered" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if state != "delivered" {
		t.Fatalf("state %q after 90s, want delivered\n%s", state, tail(stderr.String()))
	}

	// The audit stream lags the table a little: poll for all four transitions.
	var timeline string
	for auditDeadline := time.Now().Add(30 * time.Second); time.Now().Before(auditDeadline); {
		ac := exec.Command(auditctl, "timeline", "--event-id", "evt-local")
		ac.Env = append(os.Environ(), exports...)
		out, err := ac.CombinedOutput()
		timeline = string(out)
		if err != nil && !strings.Contains(timeline, "no audit entries") {
			t.Fatalf("auditctl: %v\n%s", err, out)
		}
		if strings.Contains(timeline, "RECEIPT_DELIVERED") {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, want := range []string{"ADMITTED", "LEASE_ACQUIRED", "PROVIDER_ACCEPTED", "RECEIPT_DELIVERED"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("auditctl timeline lacks %s:\n%s", want, timeline)
		}
	}
	if strings.Contains(timeline, "+12125550142") || strings.Contains(timeline, "Zk3q") {
		t.Errorf("auditctl timeline shows a secret:\n%s", timeline)
	}

	// The abuse guard at its template defaults (5 per destination per hour): the sixth reset
	// for one number within the hour is refused with Retry-After; a replay is never refused.
	const guarded = "+12125550177"
	reset := func(i int) string {
		return `{"event_id":"evt-guard-` + strconv.Itoa(i) + `","channel":"sms","purpose":"password_reset","to":"` + guarded +
			`","params":{"code":"482913"},"expires_at":"` + expires + `"}`
	}
	for i := 1; i <= 5; i++ {
		if got := post(t, base+"/v1/notifications", reset(i)); got.StatusCode != http.StatusAccepted {
			t.Fatalf("reset %d for one number = %d, want 202", i, got.StatusCode)
		}
	}
	sixth, err := http.Post(base+"/v1/notifications", "application/json", strings.NewReader(reset(6)))
	if err != nil {
		t.Fatal(err)
	}
	refusal, _ := io.ReadAll(sixth.Body)
	sixth.Body.Close()
	if sixth.StatusCode != http.StatusTooManyRequests || sixth.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(refusal), "/problems/rate-limited") {
		t.Errorf("sixth reset within the hour = %d Retry-After %q %s, want 429 rate-limited with Retry-After",
			sixth.StatusCode, sixth.Header.Get("Retry-After"), refusal)
	}
	if strings.Contains(string(refusal), guarded) || strings.Contains(string(refusal), guarded[1:]) {
		t.Errorf("the refusal shows the number: %s", refusal)
	}
	if got := post(t, base+"/v1/notifications", reset(1)); got.StatusCode != http.StatusOK {
		t.Errorf("replay of an admitted reset after the limit = %d, want 200", got.StatusCode)
	}
	duplicatesGetOneAnswer(t, base, expires)

	checkCountries(t, base, expires)
	checkArchive(t, auditctl, exports, stderr.String)
	// The first reset and the five of the guard, at least, were admitted (202).
	checkMetrics(t, exports, 6, stderr.String)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		stopped = true
		if err != nil {
			t.Errorf("local exited with %v after SIGTERM\n%s", err, tail(stderr.String()))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("local did not stop within 30s of SIGTERM")
	}
	if strings.Contains(stderr.String(), "+12125550142") || strings.Contains(stderr.String(), "Zk3q") || strings.Contains(stderr.String(), guarded[1:]) ||
		strings.Contains(stderr.String(), twilioKeySecret) {
		t.Error("the local stack's logs show a submitted secret or the Twilio API key's")
	}
	for number := range notAllowed {
		if strings.Contains(stderr.String(), number[1:]) {
			t.Errorf("the local stack's logs show the refused number %s", number)
		}
	}
	// The refusal is logged and counted by country, never by number.
	if !strings.Contains(stderr.String(), `"country_code":"JM"`) {
		t.Errorf("no refusal logged with country_code JM\n%s", tail(stderr.String()))
	}
}

// checkArchive waits until auditctl archive status lists a period that the digest function
// archived into the local Object Lock bucket (moto's S3).
func checkArchive(t *testing.T, auditctl string, exports []string, logs func() string) {
	t.Helper()
	var status string
	for deadline := time.Now().Add(150 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		ac := exec.Command(auditctl, "archive", "status")
		ac.Env = append(os.Environ(), exports...)
		out, err := ac.CombinedOutput()
		if status = string(out); err != nil {
			t.Fatalf("auditctl archive status: %v\n%s", err, out)
		}
		if !strings.HasPrefix(status, "0 periods archived") && strings.Contains(status, "s3://resetnotify-audit-archive/audit/") {
			return
		}
	}
	t.Errorf("no period archived within 150 s:\n%s\n%s", status, tail(logs()))
}

// notAllowed are numbers of calling code 1 outside the template's AllowedCountries (US,CA),
// by country: the Caribbean shares +1 with the United States and Canada.
var notAllowed = map[string]string{"+18765550100": "JM", "+18095550100": "DO", "+12425550100": "BS"}

// checkCountries drives the country allow-list at the template's default: numbers of +1 in
// Jamaica, the Dominican Republic and the Bahamas get 422 destination-not-allowed, and
// nothing is stored for them; New York (the first reset) and Toronto are admitted.
func checkCountries(t *testing.T, base, expires string) {
	t.Helper()
	reset := func(event, to string) string {
		return `{"event_id":"` + event + `","channel":"sms","purpose":"password_reset","to":"` + to +
			`","params":{"code":"482913"},"expires_at":"` + expires + `"}`
	}
	for number, country := range notAllowed {
		resp, err := http.Post(base+"/v1/notifications", "application/json", strings.NewReader(reset("evt-country-"+country, number)))
		if err != nil {
			t.Fatal(err)
		}
		problem, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(problem), "/problems/destination-not-allowed") {
			t.Errorf("%s (%s) = %d %s, want 422 destination-not-allowed", number, country, resp.StatusCode, problem)
		}
		if strings.Contains(string(problem), number[1:]) {
			t.Errorf("the refusal shows the number: %s", problem)
		}
		status, err := http.Get(base + "/v1/notifications/evt-country-" + country + ":sms:password_reset")
		if err != nil {
			t.Fatal(err)
		}
		status.Body.Close()
		if status.StatusCode != http.StatusNotFound {
			t.Errorf("refused %s: status = %d, want 404 (nothing stored)", country, status.StatusCode)
		}
	}
	if got := post(t, base+"/v1/notifications", reset("evt-country-CA", "+14165550142")); got.StatusCode != http.StatusAccepted {
		t.Errorf("Toronto (+1 416) = %d, want 202", got.StatusCode)
	}
}

func build(t *testing.T, root, out, pkg string, flags ...string) {
	t.Helper()
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	c := exec.Command("go", args...)
	c.Dir = root
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// readUntilReady reads the stack's stdout up to its `ready:` line and returns the export
// lines as KEY=VALUE pairs and the base URL.
func readUntilReady(t *testing.T, r io.Reader, stderr *lockedBuilder) ([]string, string) {
	t.Helper()
	type result struct {
		exports []string
		base    string
	}
	done := make(chan result, 1)
	go func() {
		var res result
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "export "); ok {
				res.exports = append(res.exports, strings.Fields(rest)...)
			}
			if base, ok := strings.CutPrefix(line, "ready: "); ok {
				res.base = base
				break
			}
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res.base == "" {
			t.Fatalf("the local stack ended before ready\n%s", tail(stderr.String()))
		}
		return res.exports, res.base
	case <-time.After(3 * time.Minute):
		t.Fatalf("no ready line within 3 minutes\n%s", tail(stderr.String()))
	}
	return nil, ""
}

// duplicatesGetOneAnswer admits four resets for one number, then sends 64 identical requests
// with a new key at once: one 202 and 63 replays (200), no 429, whatever order the stack
// serves them in.
func duplicatesGetOneAnswer(t *testing.T, base, expires string) {
	t.Helper()
	const to = "+12125550178"
	reset := func(i int) string {
		return `{"event_id":"evt-dup-` + strconv.Itoa(i) + `","channel":"sms","purpose":"password_reset","to":"` + to +
			`","params":{"code":"482913"},"expires_at":"` + expires + `"}`
	}
	for i := 1; i <= 4; i++ {
		if got := post(t, base+"/v1/notifications", reset(i)); got.StatusCode != http.StatusAccepted {
			t.Fatalf("reset %d for one number = %d, want 202", i, got.StatusCode)
		}
	}
	statuses := make([]int, 64)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			resp, err := http.Post(base+"/v1/notifications", "application/json", strings.NewReader(reset(5)))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	tally := map[int]int{}
	for _, s := range statuses {
		tally[s]++
	}
	if tally[http.StatusAccepted] != 1 || tally[http.StatusOK] != 63 {
		t.Errorf("64 identical requests, the number one short of its hourly limit: %v, want 1×202 and 63×200", tally)
	}
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// lockedBuilder is the local stack's standard error: exec's copy goroutine writes it while the
// test reads it (a failure's tail, the checks of what was logged).
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
