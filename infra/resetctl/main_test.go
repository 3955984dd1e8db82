package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/localapi/localapitest"
	"github.com/resetnotify/resetnotify/shared/notify"
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
	return cliIn(t, env, "", args...)
}

// cliIn is cli with stdin.
func cliIn(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &stdout, &stderr)
	code := exitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// secretFile writes content to a new file and returns its path.
func secretFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendArgs sends a one_time_code to phone with code, both read from files.
func sendArgs(t *testing.T, endpoint string, extra ...string) []string {
	t.Helper()
	return append([]string{"send", "--endpoint", endpoint, "--event-id", "E", "--purpose", "one_time_code",
		"--to-file", secretFile(t, phone+"\n"), "--param-file", secretFile(t, "code="+code+"\n"), "--expires-in", "10m"}, extra...)
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
	status, out, errOut := cli(t, nil, sendArgs(t, api)...)
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
	_, out, _ = cli(t, nil, sendArgs(t, api, "--key", "again", "--output", "json")...)
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatal(err)
	}
	status, out, _ = cli(t, nil, "send", "--endpoint", api, "--key", "again", "--event-id", "E", "--to-file", secretFile(t, phone),
		"--purpose", "one_time_code", "--param-file", secretFile(t, "code="+code), "--expires-at", first.ExpiresAt, "--output", "json")
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
	if status, _, errOut := cli(t, nil, sendArgs(t, api, "--key", "order-1")...); status != 0 {
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
	args := []string{"send", "--endpoint", api, "--event-id", "E", "--to-file", secretFile(t, "555-"+code), "--purpose", "one_time_code",
		"--param-file", secretFile(t, "code="+code+"!"), "--expires-in", "10m"}
	for _, output := range []string{"text", "json"} {
		status, out, errOut := cli(t, nil, append(args, "--output", output)...)
		if status != 1 || !strings.Contains(errOut, "invalid-request") || !strings.Contains(errOut, "to must be an E.164") {
			t.Errorf("%s: exit %d\n%s%s", output, status, out, errOut)
		}
		assertNoSecret(t, out, errOut)
	}
	if status, _, errOut := cli(t, nil, sendArgs(t, api, "--key", "k1")...); status != 0 {
		t.Fatal(errOut)
	}
	status, out, errOut := cli(t, nil, sendArgs(t, api, "--key", "k1", "--param-file", secretFile(t, "code="+code+"\nextra="+code))...)
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
		{"no expiry", []string{"send", "--endpoint", "http://127.0.0.1:1", "--event-id", "E", "--purpose", "one_time_code",
			"--to-file", secretFile(t, phone), "--param-file", secretFile(t, "code="+code)}, "--expires-in"},
		{"a stray argument", sendArgs(t, "http://127.0.0.1:1", phone), "no arguments"},
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

// TestSendHelpSaysWhereSecretsComeFrom checks send's help names the files, their format,
// stdin and the refusal of --to and --param.
func TestSendHelpSaysWhereSecretsComeFrom(t *testing.T) {
	status, out, errOut := cli(t, nil, "send", "-h")
	if status != 0 {
		t.Fatalf("exit %d", status)
	}
	help := out + errOut
	for _, want := range []string{"--to-file FILE", "--param-file FILE", "name=value", `"-" as a file name is standard input`,
		"lines starting with # are", "--to and --param are refused", "ps and the shell history", "-to-file", "-param-file"} {
		if !strings.Contains(help, want) {
			t.Errorf("send -h lacks %q:\n%s", want, help)
		}
	}
	if _, out, _ := cli(t, nil, "help"); !strings.Contains(out, "never from the command line") {
		t.Errorf("resetctl help does not say where send reads secrets:\n%s", out)
	}
}

// TestSendReadsSecretsFromStdin sends with the params, then the number, read from stdin.
func TestSendReadsSecretsFromStdin(t *testing.T) {
	api := newAPI(t)
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"params", "\ufeff# the code\n\n  code = " + code + "\r\n", []string{"--to-file", secretFile(t, "  "+phone+"\n\n"), "--param-file", "-"}},
		{"number", phone + "\n", []string{"--to-file", "-", "--param-file", secretFile(t, "code="+code)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"send", "--endpoint", api, "--event-id", "stdin-" + tc.name, "--purpose", "one_time_code",
				"--expires-in", "10m", "--output", "json"}, tc.args...)
			status, out, errOut := cliIn(t, nil, tc.stdin, args...)
			var res struct{ State string }
			if err := json.Unmarshal([]byte(out), &res); err != nil || status != 0 || res.State != "accepted" {
				t.Fatalf("exit %d, %v\n%s%s", status, err, out, errOut)
			}
			assertNoSecret(t, out, errOut)
		})
	}
}

// TestSendRefusesSecretsOnTheCommandLine checks --to and --param are refused, in every
// spelling, with an error naming the new flags, without the value, and before any request.
func TestSendRefusesSecretsOnTheCommandLine(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadRequest) // not retried, should a refusal be missed

	}))
	t.Cleanup(srv.Close)
	for _, old := range [][]string{
		{"--to", phone}, {"-to", phone}, {"--to=" + phone}, {"--param", "code=" + code}, {"--param=code=" + code},
		{"--to", phone, "--param", "code=" + code},
	} {
		t.Run(strings.Join(old, " "), func(t *testing.T) {
			status, out, errOut := cli(t, nil, sendArgs(t, srv.URL, old...)...)
			if status != 2 || !strings.Contains(errOut, "--to and --param are refused") ||
				!strings.Contains(errOut, "--to-file") || !strings.Contains(errOut, "--param-file") {
				t.Errorf("exit %d, stderr %q; want 2 and the refusal naming --to-file and --param-file", status, errOut)
			}
			assertNoSecret(t, out, errOut)
		})
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d requests sent despite the refusal", n)
	}
}

// TestSendSecretFileErrors checks each bad secret file is a usage error that says what is
// wrong without printing what the file holds.
func TestSendSecretFileErrors(t *testing.T) {
	const api = "http://127.0.0.1:1"
	send := func(to, params string) []string {
		return []string{"send", "--endpoint", api, "--event-id", "E", "--purpose", "one_time_code", "--expires-in", "10m",
			"--to-file", to, "--param-file", params}
	}
	good := func() string { return secretFile(t, phone) }
	goodParams := func() string { return secretFile(t, "code="+code) }
	missing := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"no --to-file", []string{"send", "--endpoint", api, "--event-id", "E", "--purpose", "one_time_code", "--expires-in", "10m",
			"--param-file", goodParams()}, "", "--to-file and --param-file are required"},
		{"no --param-file", []string{"send", "--endpoint", api, "--event-id", "E", "--purpose", "one_time_code", "--expires-in", "10m",
			"--to-file", good()}, "", "--to-file and --param-file are required"},
		{"both from stdin", send("-", "-"), phone + "\ncode=" + code, "cannot both read stdin"},
		{"missing number file", send(missing, goodParams()), "", "--to-file: no such file"},
		{"missing param file", send(good(), missing), "", "--param-file: no such file"},
		{"empty number file", send(secretFile(t, " \n"), goodParams()), "", "--to-file must hold one number"},
		{"two numbers", send(secretFile(t, phone+"\n"+phone), goodParams()), "", "--to-file must hold one number"},
		{"number file too big", send(secretFile(t, phone+strings.Repeat(" ", maxSecretFile)), goodParams()), "", "--to-file holds more than 64 KiB"},
		{"param file too big", send(good(), "-"), "code=" + code + strings.Repeat("\n", maxSecretFile), "--param-file holds more than 64 KiB"},
		{"param line without =", send(good(), secretFile(t, "# c\n"+code)), "", "--param-file line 2: want name=value"},
		{"param line without a name", send(good(), secretFile(t, "="+code)), "", "--param-file line 1: want name=value"},
		{"param named twice", send(good(), secretFile(t, "code="+code+"\ncode="+code)), "", "--param-file line 2: names a param"},
		{"secret named like a param", send(good(), secretFile(t, code+"=1\n"+code+"=2")), "", "--param-file line 2: names a param"},
		{"no param", send(good(), secretFile(t, "# nothing\n\n")), "", "--param-file holds no name=value line"},
		{"empty stdin", send(good(), "-"), "", "--param-file holds no name=value line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out, errOut := cliIn(t, nil, tc.stdin, tc.args...)
			if status != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", status, errOut, tc.want)
			}
			assertNoSecret(t, out, errOut)
		})
	}
}

func TestParseParams(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"code=1=2", map[string]string{"code": "1=2"}},
		{"code=1\nlink=https://x.example/a?b=c", map[string]string{"code": "1", "link": "https://x.example/a?b=c"}},
		{"# comment\r\n\r\n  reset_url =  https://x.example/r  \r\n", map[string]string{"reset_url": "https://x.example/r"}},
		{"code=", map[string]string{"code": ""}},
	} {
		got, err := parseParams([]byte(tc.in))
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseParams(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestConvert(t *testing.T) {
	store := notifytest.NewStore()
	in := localapitest.FakeIntake(store, &notifytest.Queue{}, nil)
	api := localapitest.Server(t, "../../template.yaml", in, nil).URL
	if status, _, errOut := cli(t, nil, sendArgs(t, api, "--key", "order-1")...); status != 0 {
		t.Fatalf("send: exit %d: %s", status, errOut)
	}
	env := map[string]string{EnvEndpoint: api}
	status, out, errOut := cli(t, env, "convert", "order-1", "--output", "json")
	if status != 1 || !strings.Contains(errOut, "not-sent") || !strings.Contains(out, `"state": "accepted"`) {
		t.Fatalf("convert before the send: exit %d\n%s%s", status, out, errOut)
	}
	rec, err := store.Get(t.Context(), localapitest.StoredKey(in, "order-1"))
	if err != nil {
		t.Fatal(err)
	}
	now := rec.UpdatedAt
	leased, _ := rec.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseUntil: now.Add(time.Minute), LeaseToken: "lt"}, now)
	sent, _ := leased.Apply(notify.Change{To: notify.StateSent, Reason: notify.ReasonProviderAccepted, ProviderMessageID: "pm-1"}, now)
	if err := store.Transition(t.Context(), rec, leased); err != nil {
		t.Fatal(err)
	}
	if err := store.Transition(t.Context(), leased, sent); err != nil {
		t.Fatal(err)
	}
	status, out, errOut = cli(t, env, "convert", "order-1")
	if status != 0 || !strings.Contains(out, "sent (CONVERTED)") || !strings.Contains(out, "converted_at") || !strings.Contains(out, "replayed             false") {
		t.Fatalf("convert: exit %d\n%s%s", status, out, errOut)
	}
	status, out, errOut = cli(t, env, "convert", "--output", "json", "--key", "order-1")
	var conv struct {
		State    string
		Replayed bool
	}
	if err := json.Unmarshal([]byte(out), &conv); err != nil || status != 0 || conv.State != "sent" || !conv.Replayed {
		t.Fatalf("repeated convert: exit %d, %+v, %v\n%s", status, conv, err, errOut)
	}
	assertNoSecret(t, out)
	if status, _, errOut := cli(t, env, "convert", "nope"); status != 1 || !strings.Contains(errOut, "notification-not-found") {
		t.Errorf("convert of an unknown key: exit %d\n%s", status, errOut)
	}
}
