package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// stack is the deployed stack under test.
type stack struct {
	api, sim string
	// sim2 is the second simulated provider of the chain, when the stack has one
	// (RESETNOTIFY_E2E_SIM2).
	sim2 string
	// twilio is the simulator in its Twilio mode, the chain's third provider, when the stack
	// has one (RESETNOTIFY_E2E_TWILIO_SIM).
	twilio      string
	creds       aws.CredentialsProvider
	region      string
	auditctlBin string
	http        *http.Client
	runID       string
}

var (
	theStack *stack
	setupErr error
)

func TestMain(m *testing.M) {
	api := os.Getenv("RESETNOTIFY_E2E_API")
	if api == "" {
		if os.Getenv("RESETNOTIFY_E2E") == "required" {
			fmt.Fprintln(os.Stderr, "e2e: RESETNOTIFY_E2E_API not set although RESETNOTIFY_E2E=required")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "e2e: skipped, RESETNOTIFY_E2E_API not set; run `make e2e` or `make emulator-e2e`")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "resetnotify-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	theStack, setupErr = newStack(api, os.Getenv("RESETNOTIFY_E2E_SIM"), dir)
	if theStack != nil {
		theStack.sim2 = strings.TrimSuffix(os.Getenv("RESETNOTIFY_E2E_SIM2"), "/")
		theStack.twilio = strings.TrimSuffix(os.Getenv("RESETNOTIFY_E2E_TWILIO_SIM"), "/")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newStack(api, sim, dir string) (*stack, error) {
	if sim == "" {
		return nil, fmt.Errorf("RESETNOTIFY_E2E_SIM not set")
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "auditctl")
	if out, err := exec.Command("go", "build", "-o", bin, "../../auditor/auditctl").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build auditctl: %v\n%s", err, out)
	}
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	return &stack{
		api: strings.TrimSuffix(api, "/"), sim: strings.TrimSuffix(sim, "/"),
		creds: cfg.Credentials, region: cfg.Region, auditctlBin: bin,
		http: &http.Client{Timeout: 30 * time.Second}, runID: hex.EncodeToString(id),
	}, nil
}

func getStack(t *testing.T) *stack {
	t.Helper()
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return theStack
}

// number returns a destination of its own for one test.
func number(t *testing.T) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(8_000_000))
	if err != nil {
		t.Fatal(err)
	}
	// New York (+1 212, exchanges 200-999): the stack admits only numbers of its allowed
	// countries (US,CA by default), and +1 555 is in no country.
	return fmt.Sprintf("+1212%07d", 2_000_000+n.Int64())
}

// status is the part of the status view the suite reads.
type status struct {
	IdempotencyKey   string `json:"idempotency_key"`
	NotificationID   string `json:"notification_id"`
	EventID          string `json:"event_id"`
	State            string `json:"state"`
	Reason           string `json:"reason"`
	Attempt          int    `json:"attempt"`
	DispatchDeadline string `json:"dispatch_deadline"`
	SafetyMarginMS   int64  `json:"safety_margin_ms"`
	Provider         string `json:"provider"`
	Attempts         []struct {
		Attempt  int    `json:"attempt"`
		Provider string `json:"provider"`
	} `json:"attempts"`
	// ProviderMessageID and ConvertedAt are set once sent and once converted.
	ProviderMessageID string `json:"provider_message_id"`
	ConvertedAt       string `json:"converted_at"`
}

// response is one API answer.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

func (r response) status(t *testing.T) status {
	t.Helper()
	var s status
	if err := json.Unmarshal(r.Body, &s); err != nil {
		t.Fatalf("status %d body %q: %v", r.Code, r.Body, err)
	}
	return s
}

// call sends a SigV4-signed request to the API, as an IAM caller does.
func (s *stack) call(t *testing.T, method, path string, header http.Header, body []byte) response {
	t.Helper()
	return s.callAs(t, caller{creds: s.creds}, method, path, header, body)
}

// caller is who signs a request: its credentials, and the headers that name it where the
// stack takes a header for a second caller (the local gateway only).
type caller struct {
	creds  aws.CredentialsProvider
	header http.Header
}

// callAs is call by c.
func (s *stack) callAs(t *testing.T, c caller, method, path string, header http.Header, body []byte) response {
	t.Helper()
	header = header.Clone()
	if header == nil {
		header = http.Header{}
	}
	for k, v := range c.header {
		header[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.api+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", s.region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Code: resp.StatusCode, Header: resp.Header, Body: b}
}

// notification is a request the suite submits.
type notification struct {
	EventID   string            `json:"event_id"`
	Channel   string            `json:"channel"`
	Purpose   string            `json:"purpose"`
	To        string            `json:"to"`
	Locale    string            `json:"locale"`
	Params    map[string]string `json:"params"`
	ExpiresAt string            `json:"expires_at"`
}

// newNotification returns a request to to whose dispatch deadline is deadlineIn from now.
func (s *stack) newNotification(t *testing.T, name, to string, deadlineIn time.Duration) notification {
	t.Helper()
	return notification{
		EventID: "e2e-" + s.runID + "-" + name, Channel: "sms", Purpose: "password_reset", To: to,
		Locale: "en", Params: map[string]string{"code": "731904"},
		ExpiresAt: time.Now().UTC().Add(deadlineIn + s.margin(t)).Format(time.RFC3339Nano),
	}
}

// key is the idempotency key the API derives for n.
func (n notification) key() string { return n.EventID + ":" + n.Channel + ":" + n.Purpose }

func (s *stack) submit(t *testing.T, n notification) response {
	t.Helper()
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return s.call(t, http.MethodPost, "/v1/notifications", nil, b)
}

func (s *stack) get(t *testing.T, key string) status {
	t.Helper()
	r := s.call(t, http.MethodGet, "/v1/notifications/"+key, nil, nil)
	if r.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", key, r.Code, r.Body)
	}
	return r.status(t)
}

var (
	marginOnce sync.Once
	margin     time.Duration
	marginErr  error
)

// margin learns the stack's safety margin from a request that is already past its deadline:
// the API admits it as expired (and sends nothing) and reports the margin it applied.
func (s *stack) margin(t *testing.T) time.Duration {
	t.Helper()
	marginOnce.Do(func() {
		n := notification{
			EventID: "e2e-" + s.runID + "-margin", Channel: "sms", Purpose: "password_reset", To: "+12122000000",
			Locale: "en", Params: map[string]string{"code": "000000"},
			ExpiresAt: time.Now().UTC().Add(-time.Minute).Format(time.RFC3339),
		}
		r := s.submit(t, n)
		if r.Code != http.StatusAccepted && r.Code != http.StatusOK {
			marginErr = fmt.Errorf("margin probe: %d %s", r.Code, r.Body)
			return
		}
		margin = time.Duration(r.status(t).SafetyMarginMS) * time.Millisecond
	})
	if marginErr != nil {
		t.Fatal(marginErr)
	}
	return margin
}

// waitState polls the status until its state is one of want, and returns it.
func (s *stack) waitState(t *testing.T, key string, within time.Duration, want ...string) status {
	t.Helper()
	deadline := time.Now().Add(within)
	var last status
	for time.Now().Before(deadline) {
		last = s.get(t, key)
		for _, w := range want {
			if last.State == w {
				return last
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: state %s/%s after %s, want one of %v", key, last.State, last.Reason, within, want)
	return last
}

// simDo calls the (first) simulator's control API.
func (s *stack) simDo(t *testing.T, method, path string, body any, out any) {
	t.Helper()
	s.simDoAt(t, s.sim, method, path, body, out)
}

// sims returns the base URL of every simulated provider of the stack's chain.
func (s *stack) sims() []string {
	out := []string{s.sim}
	if s.sim2 != "" {
		out = append(out, s.sim2)
	}
	if s.twilio != "" {
		out = append(out, s.twilio)
	}
	return out
}

// simOf returns the base URL of the simulated provider a status names ("simulator" is the
// first of the chain, "simulator2" the second). Which one sent a message is the chain's
// choice: after a run of "not accepted" answers the first is cooling down and the second
// sends, so a test that reads a message follows the status, not a fixed simulator.
func (s *stack) simOf(t *testing.T, provider string) string {
	t.Helper()
	switch {
	case provider == "simulator":
		return s.sim
	case provider == "simulator2" && s.sim2 != "":
		return s.sim2
	case provider == "twilio" && s.twilio != "":
		return s.twilio
	}
	t.Fatalf("the status names provider %q, which is no simulator of this stack", provider)
	return ""
}

// simDoAt calls the control API of the simulator at base.
func (s *stack) simDoAt(t *testing.T, base, method, path string, body any, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("simulator %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("simulator %s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("simulator %s %s: %v", method, path, err)
		}
	}
}

// fault scripts the modes of every provider of the chain for to (the last one stays in
// force): "the provider" of a scenario is the whole chain.
func (s *stack) fault(t *testing.T, to string, modes ...string) {
	t.Helper()
	for _, base := range s.sims() {
		s.simDoAt(t, base, http.MethodPost, "/control/faults", simapi.Fault{To: to, Modes: modes}, nil)
	}
}

// sent is the number of messages the providers of the chain really accepted for to.
func (s *stack) sent(t *testing.T, to string) int {
	t.Helper()
	n := 0
	for _, base := range s.sims() {
		n += s.sentAt(t, base, to)
	}
	return n
}

// sentAt is the number of messages the simulator at base accepted for to.
func (s *stack) sentAt(t *testing.T, base, to string) int {
	t.Helper()
	var inbox simapi.Inbox
	s.simDoAt(t, base, http.MethodGet, "/inbox", nil, &inbox)
	return inbox.Destinations[to].Count
}

// auditctl runs the auditor's CLI against the stack's audit table.
func (s *stack) auditctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(s.auditctlBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// audited waits until `auditctl verify` passes for the event and `auditctl evidence` tells a
// story that holds every one of want (reason codes, states), and returns the evidence. The
// audit trail is written from the table's stream, so it lags the status a little.
func (s *stack) audited(t *testing.T, eventID string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var evidence, verify string
	var verr error
	for time.Now().Before(deadline) {
		verify, verr = s.auditctl(t, "verify", "--event-id", eventID)
		evidence, _ = s.auditctl(t, "evidence", "--event-id", eventID)
		if verr == nil && containsAll(evidence, want) {
			return evidence
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("audit of %s: verify %v:\n%s\nevidence, want %v in it:\n%s", eventID, verr, verify, want, evidence)
	return ""
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
