// Package gameday runs game days on the stack infra/emulator/emulator.sh deploys to MiniStack: each
// scenario puts a steady load on the API, injects a fault (platform faults through the fault
// proxy, infra/faultproxy; provider faults through the SMS simulators' control API), holds it for
// the alarms' evaluation windows, removes it, waits for recovery, and then checks the alarms its
// runbook names and the service's invariants. infra/gameday/cmd is its command; docs/operations.md
// ("Game days") says how to run it and what each scenario proves.
//
// The runner talks to MiniStack directly (AWS_ENDPOINT_URL), never through the fault proxy: the
// faults are for the functions, the checks must see the truth.
package gameday

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// Stack is the deployed stack under test, as infra/emulator/emulator.sh describes it in the environment.
type Stack struct {
	// Name is the CloudFormation stack; Namespace the metrics namespace its alarms read.
	Name, Namespace string
	API             string
	// Sims are the simulated providers of the chain, first to last.
	Sims []string
	// Endpoint is MiniStack's own endpoint (not the fault proxy's).
	Endpoint   string
	AuditTable string
	// DigestKey is the KMS key that signs the audit digests (the stack's DigestSigningKey).
	DigestKey string
	// Dashboard is the stack's CloudWatch dashboard (its Dashboard resource); empty without one.
	Dashboard string
	// FaultProxy is the fault proxy's control URL, empty when the stack was deployed without it.
	FaultProxy string
	Region     string
	AWS        aws.Config
	CW         *cloudwatch.Client
	Logs       *cloudwatchlogs.Client
	HTTP       *http.Client
	Auditctl   string
	RunID      string
	// margin is the stack's safety margin, added to each request's deadline (LearnMargin).
	margin time.Duration
}

// LearnMargin learns the stack's safety margin from a request already past its deadline: the
// API admits it as expired (and sends nothing) and reports the margin it applied.
func (s *Stack) LearnMargin(ctx context.Context) error {
	body, _ := json.Marshal(map[string]any{
		"event_id": "gd-" + s.RunID + "-margin", "channel": "sms", "purpose": "password_reset",
		"to": "+12122000000", "locale": "en", "params": map[string]string{"code": "000000"},
		"expires_at": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339),
	})
	r, err := s.Call(ctx, http.MethodPost, "/v1/notifications", body)
	if err != nil {
		return err
	}
	if r.Code != http.StatusAccepted && r.Code != http.StatusOK {
		return fmt.Errorf("margin probe: %d %s", r.Code, r.Body)
	}
	var st Status
	if err := json.Unmarshal(r.Body, &st); err != nil {
		return err
	}
	s.margin = time.Duration(st.SafetyMarginMS) * time.Millisecond
	return nil
}

// StackFromEnv reads the stack from the environment infra/emulator/emulator.sh gives its command, and
// builds auditctl into dir.
func StackFromEnv(ctx context.Context, name, dir string) (*Stack, error) {
	api := os.Getenv("RESETNOTIFY_E2E_API")
	sim := os.Getenv("RESETNOTIFY_E2E_SIM")
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	if api == "" || sim == "" || endpoint == "" {
		return nil, fmt.Errorf("RESETNOTIFY_E2E_API, RESETNOTIFY_E2E_SIM and AWS_ENDPOINT_URL must be set: run as the command of infra/emulator/emulator.sh")
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	// The stack's environment may point a service's endpoint at the fault proxy; the runner's
	// clients always talk to the emulator itself.
	cfg.BaseEndpoint = aws.String(endpoint)
	s := &Stack{
		Name: name, Namespace: "resetnotify/" + name, API: strings.TrimSuffix(api, "/"),
		Sims: []string{strings.TrimSuffix(sim, "/")}, Endpoint: endpoint,
		AuditTable: os.Getenv("AUDIT_TABLE"), FaultProxy: os.Getenv("RESETNOTIFY_FAULT_PROXY_URL"),
		Region: cfg.Region, AWS: cfg,
		CW: cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		Logs: cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) {
			o.BaseEndpoint = aws.String(endpoint)
		}),
		HTTP: &http.Client{Timeout: 30 * time.Second},
	}
	// Every provider of the chain, the Twilio simulator too: the invariants read them all.
	for _, env := range []string{"RESETNOTIFY_E2E_SIM2", "RESETNOTIFY_E2E_TWILIO_SIM"} {
		if base := os.Getenv(env); base != "" {
			s.Sims = append(s.Sims, strings.TrimSuffix(base, "/"))
		}
	}
	key, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(name), LogicalResourceId: aws.String("DigestSigningKey"),
	})
	if err != nil {
		return nil, fmt.Errorf("the stack's digest signing key: %w", err)
	}
	s.DigestKey = aws.ToString(key.StackResourceDetail.PhysicalResourceId)
	if dash, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(name), LogicalResourceId: aws.String("Dashboard"),
	}); err == nil {
		s.Dashboard = aws.ToString(dash.StackResourceDetail.PhysicalResourceId)
	}
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	s.RunID = hex.EncodeToString(id)
	s.Auditctl = filepath.Join(dir, "auditctl")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", s.Auditctl, "./auditor/auditctl").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build auditctl: %v\n%s", err, out)
	}
	return s, nil
}

// Response is one API answer.
type Response struct {
	Code int
	Body []byte
}

// Call sends a SigV4-signed request to the API, as an IAM caller does.
func (s *Stack) Call(ctx context.Context, method, path string, body []byte) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.API+path, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	creds, err := s.AWS.Credentials.Retrieve(ctx)
	if err != nil {
		return Response{}, err
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", s.Region, time.Now()); err != nil {
		return Response{}, err
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Response{Code: resp.StatusCode, Body: b}, err
}

// Status is the part of the status view the runner reads.
type Status struct {
	NotificationID   string `json:"notification_id"`
	State            string `json:"state"`
	Reason           string `json:"reason"`
	DispatchDeadline string `json:"dispatch_deadline"`
	SafetyMarginMS   int64  `json:"safety_margin_ms"`
	Provider         string `json:"provider"`
	ConvertedAt      string `json:"converted_at"`
}

// Get reads one notification's status.
func (s *Stack) Get(ctx context.Context, key string) (Status, error) {
	r, err := s.Call(ctx, http.MethodGet, "/v1/notifications/"+key, nil)
	if err != nil {
		return Status{}, err
	}
	if r.Code != http.StatusOK {
		return Status{}, fmt.Errorf("GET %s: %d", key, r.Code)
	}
	var st Status
	return st, json.Unmarshal(r.Body, &st)
}

// Sim calls the control API of the simulator at base.
func (s *Stack) Sim(ctx context.Context, base, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("simulator %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("simulator %s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// SimState is what every simulator of the chain accepted and was asked.
type SimState struct {
	// Accepted counts the accepted messages per destination, and AcceptedByNotification per
	// notification (by the client_ref of its attempts), summed over the chain.
	Accepted               map[string]int
	AcceptedByNotification map[string]int
	Requests               []simapi.RequestEntry
}

// NotificationOfRef returns the notification ID of an attempt's client_ref
// ("<notification ID>-a<attempt>").
func NotificationOfRef(ref string) string {
	if i := strings.LastIndex(ref, "-a"); i > 0 {
		return ref[:i]
	}
	return ref
}

// ReadSims reads the inbox and request log of every simulator.
func (s *Stack) ReadSims(ctx context.Context) (SimState, error) {
	st := SimState{Accepted: map[string]int{}, AcceptedByNotification: map[string]int{}}
	for _, base := range s.Sims {
		var inbox simapi.Inbox
		if err := s.Sim(ctx, base, http.MethodGet, "/inbox", nil, &inbox); err != nil {
			return st, err
		}
		for to, d := range inbox.Destinations {
			st.Accepted[to] += d.Count
			for _, m := range d.Messages {
				st.AcceptedByNotification[NotificationOfRef(m.ClientRef)]++
			}
		}
		var log simapi.RequestLog
		if err := s.Sim(ctx, base, http.MethodGet, "/requests", nil, &log); err != nil {
			return st, err
		}
		st.Requests = append(st.Requests, log.Requests...)
	}
	return st, nil
}

// auditctlStdout runs auditctl and returns its standard output alone.
func (s *Stack) auditctlStdout(ctx context.Context, args ...string) (string, error) {
	args = append(args, "--endpoint-url", s.Endpoint)
	cmd := exec.CommandContext(ctx, s.Auditctl, args...)
	cmd.Env = s.auditctlEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("auditctl %s: %v: %s", args[0], err, lastLines(errOut.String(), 3))
	}
	return out.String(), nil
}

// auditctlEnv is the environment without AWS_ENDPOINT_URL_<SERVICE>: every call of auditctl
// goes to the emulator itself, not to the fault proxy.
func (s *Stack) auditctlEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL_") {
			env = append(env, kv)
		}
	}
	return env
}

// auditctl runs the auditor's CLI against the stack's audit table, on the emulator itself.
func (s *Stack) auditctl(ctx context.Context, args ...string) (string, error) {
	args = append(args, "--endpoint-url", s.Endpoint)
	cmd := exec.CommandContext(ctx, s.Auditctl, args...)
	cmd.Env = s.auditctlEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
