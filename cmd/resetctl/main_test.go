package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/resetnotify/resetnotify/dev/localapi/localapitest"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

const (
	// Not the numbers of the usage text's example, which may be printed.
	phone = "+15555550177"
	code  = "739201"
)

// newAPI serves the real intake handler, wired to fakes, on a loopback port.
func newAPI(t *testing.T) string {
	t.Helper()
	in := localapitest.FakeIntake(notifytest.NewStore(), &notifytest.Queue{}, nil)
	return localapitest.Server(t, "../../template.yaml", in, nil).URL
}

// cli runs resetctl with args and env, and returns its exit status, stdout and stderr.
func cli(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

func sendArgs(endpoint string, extra ...string) []string {
	return append([]string{"send", "--endpoint", endpoint, "--event-id", "E", "--to", phone, "--purpose", "one_time_code",
		"--param", "code=" + code, "--expires-in", "10m"}, extra...)
}

// assertNoSecret fails when any output holds the number or the code.
func assertNoSecret(t *testing.T, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		for _, s := range []string{phone, code} {
			if strings.Contains(out, s) {
				t.Errorf("output holds a secret: %q", out)
			}
		}
	}
}

func TestSendPrintsIDAndState(t *testing.T) {
	api := newAPI(t)
	status, out, errOut := cli(t, nil, sendArgs(api)...)
	if status != 0 {
		t.Fatalf("exit %d: %s", status, errOut)
	}
	for _, want := range []string{"notification_id", "state", "accepted (ADMITTED)", "idempotency_key", "E:sms:one_time_code", "replayed", "false"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	assertNoSecret(t, out, errOut)

	// The same request again: --expires-at repeats the expiry the first run printed.
	var first struct {
		ExpiresAt string `json:"expires_at"`
	}
	_, out, _ = cli(t, nil, sendArgs(api, "--key", "again", "--output", "json")...)
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	status, out, _ = cli(t, nil, "send", "--endpoint", api, "--key", "again", "--event-id", "E", "--to", phone,
		"--purpose", "one_time_code", "--param", "code="+code, "--expires-at", first.ExpiresAt, "--output", "json")
	var res struct {
		NotificationID string `json:"notification_id"`
		State          string `json:"state"`
		Replayed       bool   `json:"replayed"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || status != 0 {
		t.Fatalf("exit %d, JSON %q: %v", status, out, err)
	}
	if res.NotificationID == "" || res.State != "accepted" || !res.Replayed {
		t.Errorf("replay = %+v, want the accepted notification, replayed", res)
	}
	assertNoSecret(t, out)
}

func TestStatusAndCancel(t *testing.T) {
	api := newAPI(t)
	if status, _, errOut := cli(t, nil, sendArgs(api, "--key", "order-1")...); status != 0 {
		t.Fatalf("send: exit %d: %s", status, errOut)
	}
	env := map[string]string{EnvEndpoint: api}
	status, out, errOut := cli(t, env, "status", "order-1")
	if status != 0 || !strings.Contains(out, "accepted (ADMITTED)") {
		t.Fatalf("status: exit %d\n%s%s", status, out, errOut)
	}
	status, out, errOut = cli(t, env, "cancel", "--output", "json", "--key", "order-1")
	var st struct{ State, Reason string }
	if err := json.Unmarshal([]byte(out), &st); err != nil || status != 0 || st.State != "cancelled" || st.Reason != "CANCELLED" {
		t.Fatalf("cancel: exit %d, %+v, %v\n%s", status, st, err, errOut)
	}
	if status, out, _ := cli(t, env, "cancel", "order-1"); status != 0 || !strings.Contains(out, "cancelled (CANCELLED)") {
		t.Errorf("a second cancel: exit %d\n%s", status, out)
	}
	status, out, errOut = cli(t, env, "status", "nope", "--output", "json")
	if status != 1 || !strings.Contains(errOut, "notification-not-found") || !strings.Contains(out, `"status": 404`) {
		t.Errorf("status of an unknown key: exit %d\n%s%s", status, out, errOut)
	}
}

// TestErrorsShowNoSecret checks the API's refusals reach the operator as the field errors,
// never with the number or the params, in both output forms.
func TestErrorsShowNoSecret(t *testing.T) {
	api := newAPI(t)
	args := []string{"send", "--endpoint", api, "--event-id", "E", "--to", "555-" + code, "--purpose", "one_time_code",
		"--param", "code=" + code + "!", "--expires-in", "10m"}
	for _, output := range []string{"text", "json"} {
		status, out, errOut := cli(t, nil, append(args, "--output", output)...)
		if status != 1 || !strings.Contains(errOut, "invalid-request") || !strings.Contains(errOut, "to must be an E.164") {
			t.Errorf("%s: exit %d\n%s%s", output, status, out, errOut)
		}
		assertNoSecret(t, out, errOut)
	}
	if status, _, errOut := cli(t, nil, sendArgs(api, "--key", "k1")...); status != 0 {
		t.Fatal(errOut)
	}
	status, out, errOut := cli(t, nil, append(sendArgs(api, "--key", "k1"), "--param", "extra="+code)...)
	if status != 1 || !strings.Contains(errOut, "invalid-request") {
		t.Errorf("exit %d\n%s%s", status, out, errOut)
	}
	assertNoSecret(t, out, errOut)
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage"},
		{"unknown command", []string{"post"}, "unknown command"},
		{"no endpoint", []string{"status", "k"}, "--endpoint"},
		{"no expiry", []string{"send", "--endpoint", "http://127.0.0.1:1", "--event-id", "E", "--to", phone, "--purpose", "one_time_code", "--param", "code=" + code}, "--expires-in"},
		{"param without value", sendArgs("http://127.0.0.1:1", "--param", code), "wants name=value"},
		{"a stray argument", sendArgs("http://127.0.0.1:1", phone), "no arguments"},
		{"status without key", []string{"status", "--endpoint", "http://127.0.0.1:1"}, "needs a key"},
		{"bad output", []string{"status", "--endpoint", "http://127.0.0.1:1", "--output", "yaml", "k"}, "--output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errOut := cli(t, nil, tc.args...)
			if status != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", status, errOut, tc.want)
			}
			assertNoSecret(t, out, errOut)
		})
	}
}

// TestSignsWithTheCredentialChain checks --sign signs with the credentials of the standard
// chain (here the environment), and that a loopback endpoint is otherwise unsigned.
func TestSignsWithTheCredentialChain(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"type":"https://resetnotify.dev/problems/notification-not-found","title":"t","status":404,"detail":"d","instance":"urn:resetnotify:request:1"}`))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCHAIN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "chain-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "eu-central-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := map[string]string{EnvEndpoint: srv.URL}
	cli(t, env, "status", "k1")
	cli(t, env, "status", "--sign", "k1")
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 2 {
		t.Fatalf("%d requests, want 2", len(auths))
	}
	if auths[0] != "" {
		t.Errorf("loopback without --sign was signed: %q", auths[0])
	}
	if !strings.HasPrefix(auths[1], "AWS4-HMAC-SHA256 Credential=AKIDCHAIN/") || !strings.Contains(auths[1], "/eu-central-1/execute-api/aws4_request") {
		t.Errorf("--sign: Authorization = %q", auths[1])
	}
}

func TestParamsFlag(t *testing.T) {
	for _, tc := range []struct {
		sets    []string
		want    map[string]string
		problem bool
	}{
		{[]string{"code=1=2"}, map[string]string{"code": "1=2"}, false},
		{[]string{"code=1", "link=https://x.example/a"}, map[string]string{"code": "1", "link": "https://x.example/a"}, false},
		{[]string{"code=1", "code=" + code}, nil, true},
		{[]string{"=" + code}, nil, true},
		{[]string{code}, nil, true},
	} {
		p := &params{values: map[string]string{}}
		for _, s := range tc.sets {
			if err := p.Set(s); err != nil {
				t.Errorf("Set(%q) = %v: the flag package would quote the value", s, err)
			}
		}
		err := p.check()
		if (err != nil) != tc.problem {
			t.Errorf("%v: check = %v, want problem %v", tc.sets, err, tc.problem)
		}
		if err != nil && strings.Contains(err.Error(), code) {
			t.Errorf("check error quotes the value: %v", err)
		}
		if !tc.problem && !maps.Equal(p.values, tc.want) {
			t.Errorf("%v: values = %v", tc.sets, p.values)
		}
	}
}
