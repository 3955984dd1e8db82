package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The documented examples, run as a reader runs them: every example of README.md, docs/ and
// openapi.yaml that calls the API, against the stack under test, checked against what its
// text says it answers. A shell example runs in bash as written, with shims for what only a
// reader's machine has: `make local` (the stack is already up), `aws cloudformation` (it
// prints the stack's URL), `go run ./infra/resetctl` (a resetctl built from this tree); the
// endpoint http://127.0.0.1:3000 becomes the stack's, in resetctl's arguments and in
// RESETNOTIFY_ENDPOINT. Each curl the example runs is recorded
// as bash expanded it and then sent by curl itself, so that "the same request again" is the
// same request. A Go example is compiled into a program and run. openapi.yaml's request
// examples are posted with a fresh expires_at (theirs is a fixed date, long past).
//
// They run against `make local` only (RESETNOTIFY_E2E_EXAMPLES, set by infra/local/local-e2e.sh):
// the README's curl is unsigned, which only the local stack accepts, and the documented keys
// and numbers need a stack of their own (a fresh one per `make e2e`).

// docEndpoint is the endpoint the examples name: make local's.
const docEndpoint = "http://127.0.0.1:3000"

// exampleEnv skips unless the examples may run against this stack, and returns it.
func exampleEnv(t *testing.T) *stack {
	t.Helper()
	if os.Getenv("RESETNOTIFY_E2E_EXAMPLES") == "" {
		t.Skip("the documented examples run against make local's stack only: make e2e sets RESETNOTIFY_E2E_EXAMPLES")
	}
	return getStack(t)
}

// fence finds a fenced code block of language lang.
func fences(text, lang string) []string {
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// readDoc reads a file at the module's root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// block returns the one fenced block of lang in doc that contains marker.
func block(t *testing.T, doc, lang, marker string) string {
	t.Helper()
	var found []string
	for _, b := range fences(readDoc(t, doc), lang) {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d %s blocks hold %q, want 1: the example moved or changed", doc, len(found), lang, marker)
	}
	return found[0]
}

// shellRun is one run of a shell example: the curls it made, as bash expanded them, and the
// resetctl calls with their answers.
type shellRun struct {
	dir   string
	curls [][]string
	ctl   []ctlCall
}

// ctlCall is one resetctl call of an example.
type ctlCall struct {
	args           string
	code           int
	stdout, stderr string
}

// shellPrelude stands in for what a reader's machine has (see the top of this file). Every
// call is numbered in the file n, since a function in a pipeline runs in a subshell.
const shellPrelude = `
next() { local c=0; [ -f "$EX_DIR/n" ] && c=$(cat "$EX_DIR/n"); c=$((c+1)); echo $c >"$EX_DIR/n"; echo $c; }
make() { :; }
aws() { printf '%s\n' "$EX_API"; }
curl() { local i; i=$(next); printf '%s\0' "$@" >"$EX_DIR/$i.curl"; }
go() {
  if [ "$1" != run ] || [ "$2" != ./infra/resetctl ]; then echo "example shim: unexpected go $*" >&2; return 99; fi
  shift 2
  local i a args=()
  i=$(next)
  for a in "$@"; do args+=("${a//http:\/\/127.0.0.1:3000/$EX_API}"); done
  printf '%s ' "$@" >"$EX_DIR/$i.args"
  RESETNOTIFY_ENDPOINT="${RESETNOTIFY_ENDPOINT//http:\/\/127.0.0.1:3000/$EX_API}" \
    "$EX_RESETCTL" "${args[@]}" >"$EX_DIR/$i.out" 2>"$EX_DIR/$i.err"
  echo $? >"$EX_DIR/$i.rc"
}
`

// runShell runs script in bash in a directory of its own (files holds files to put there
// first) and returns what it did.
func runShell(t *testing.T, s *stack, script string, files map[string]string, env ...string) shellRun {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-c", shellPrelude+script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "EX_DIR="+dir, "EX_API="+s.api, "EX_RESETCTL="+resetctl(t)), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	run := shellRun{dir: dir}
	for i := 1; ; i++ {
		base := filepath.Join(dir, strconv.Itoa(i))
		if b, err := os.ReadFile(base + ".curl"); err == nil {
			run.curls = append(run.curls, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"))
			continue
		}
		rc, err := os.ReadFile(base + ".rc")
		if err != nil {
			return run
		}
		code, _ := strconv.Atoi(strings.TrimSpace(string(rc)))
		args, _ := os.ReadFile(base + ".args")
		out, _ := os.ReadFile(base + ".out")
		errOut, _ := os.ReadFile(base + ".err")
		run.ctl = append(run.ctl, ctlCall{args: string(args), code: code, stdout: string(out), stderr: string(errOut)})
	}
}

// resetctlBin is built once per run.
var resetctlBin string

// resetctl builds infra/resetctl from this tree, once.
func resetctl(t *testing.T) string {
	t.Helper()
	if resetctlBin != "" {
		return resetctlBin
	}
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("resetctl-e2e-%d", os.Getpid()))
	if out, err := exec.Command("go", "build", "-o", bin, "../../infra/resetctl").CombinedOutput(); err != nil {
		t.Fatalf("build resetctl: %v\n%s", err, out)
	}
	resetctlBin = bin
	return bin
}

// curlAnswer is what a recorded curl got.
type curlAnswer struct {
	code   int
	header http.Header
	body   string
}

// curl sends a recorded curl again with the curl binary, the documented endpoint replaced by
// the stack's, each of swap's old values replaced by its new one, and returns the answer.
func curl(t *testing.T, s *stack, args []string, swap ...string) curlAnswer {
	t.Helper()
	dir := t.TempDir()
	headers, body := filepath.Join(dir, "h"), filepath.Join(dir, "b")
	argv := []string{"-sS", "-D", headers, "-o", body}
	r := strings.NewReplacer(append([]string{docEndpoint, s.api}, swap...)...)
	for _, a := range args {
		argv = append(argv, r.Replace(a))
	}
	if out, err := exec.Command("curl", argv...).CombinedOutput(); err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(headers)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(body)
	ans := curlAnswer{header: http.Header{}, body: string(b)}
	for _, line := range strings.Split(string(raw), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "HTTP/"); ok {
			// A later status line (after a 100 Continue) replaces the earlier one.
			ans.header = http.Header{}
			if f := strings.Fields(rest); len(f) > 1 {
				ans.code, _ = strconv.Atoi(f[1])
			}
		} else if k, v, ok := strings.Cut(line, ":"); ok {
			ans.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return ans
}

// want fails t unless a answers code.
func (a curlAnswer) want(t *testing.T, what string, code int) {
	t.Helper()
	if a.code != code {
		t.Fatalf("%s: %d, the text says %d: %s", what, a.code, code, a.body)
	}
}

// awayFromTheHour waits, when the clock hour ends within d, until it has turned: the README's
// rate limit counts per clock hour.
func awayFromTheHour(t *testing.T, d time.Duration) {
	left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour))
	if left < d {
		t.Logf("waiting %s for the clock hour to turn", left.Round(time.Second))
		time.Sleep(left + time.Second)
	}
}

// TestREADMETryIt runs the README's "Try it" as written and checks each answer its comments
// give: 202 with the Location, the same request 200 and replayed, a sixth new key for the
// number within the clock hour 429 with Retry-After and recorded as refused, then the status
// and the cancel.
func TestREADMETryIt(t *testing.T) {
	s := exampleEnv(t)
	b := block(t, "README.md", "sh", "curl -i -X POST "+docEndpoint+"/v1/notifications")
	for _, claim := range []string{
		"# 202 Accepted, Location: /v1/notifications/order-7781-reset",
		"# the same request again: 200 OK, Idempotent-Replayed: true",
		"# a sixth new key for the same number within the clock hour: 429 rate-limited + Retry-After",
		"repeating that key answers the same 429",
	} {
		if !strings.Contains(b, claim) {
			t.Fatalf("README's Try it no longer says %q: say what the example answers, and check it here", claim)
		}
	}
	awayFromTheHour(t, 2*time.Minute)
	run := runShell(t, s, b, nil)
	if len(run.curls) != 3 {
		t.Fatalf("Try it ran %d curls, want the POST, the GET and the DELETE", len(run.curls))
	}
	post := run.curls[0]
	first := curl(t, s, post)
	first.want(t, "the POST", http.StatusAccepted)
	if loc := first.header.Get("Location"); loc != "/v1/notifications/order-7781-reset" {
		t.Errorf("Location %q", loc)
	}
	again := curl(t, s, post)
	again.want(t, "the same request again", http.StatusOK)
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same request again: Idempotent-Replayed %q", again.header.Get("Idempotent-Replayed"))
	}
	for k := 2; k <= 5; k++ {
		curl(t, s, post, "order-7781-reset", fmt.Sprintf("order-7781-reset-%d", k)).want(t, fmt.Sprintf("new key %d", k), http.StatusAccepted)
	}
	for _, what := range []string{"a sixth new key", "that key again"} {
		sixth := curl(t, s, post, "order-7781-reset", "order-7781-reset-6")
		sixth.want(t, what, http.StatusTooManyRequests)
		if sixth.header.Get("Retry-After") == "" || !strings.Contains(sixth.body, "rate-limited") {
			t.Errorf("%s: Retry-After %q, body %s", what, sixth.header.Get("Retry-After"), sixth.body)
		}
	}
	if st := s.get(t, "order-7781-reset-6"); st.State != "refused" {
		t.Errorf("the sixth key's state %q, want refused", st.State)
	}
	status := curl(t, s, run.curls[1])
	status.want(t, "the GET", http.StatusOK)
	if !strings.Contains(status.body, `"idempotency_key":"order-7781-reset"`) {
		t.Errorf("the GET: %s", status.body)
	}
	// The text says no more of the cancel: the route's answers are 200, or 409 once sent.
	if c := curl(t, s, run.curls[2]); c.code != http.StatusOK && c.code != http.StatusConflict {
		t.Errorf("the DELETE: %d %s", c.code, c.body)
	}
}

// TestREADMECLILine runs the README's one-line resetctl send: a first admission.
func TestREADMECLILine(t *testing.T) {
	s := exampleEnv(t)
	m := regexp.MustCompile("`(echo [^`]*go run ./infra/resetctl send[^`]*)`").FindStringSubmatch(readDoc(t, "README.md"))
	if m == nil {
		t.Fatal("README.md: the resetctl line moved")
	}
	run := runShell(t, s, strings.ReplaceAll(m[1], "\n", " "), nil)
	if len(run.ctl) != 1 || run.ctl[0].code != 0 || !regexp.MustCompile(`state\s+accepted`).MatchString(run.ctl[0].stdout) ||
		!regexp.MustCompile(`replayed\s+false`).MatchString(run.ctl[0].stdout) {
		t.Fatalf("resetctl: %+v", run.ctl)
	}
}

// TestAPIDocCLI runs docs/api.md's resetctl block with to.txt holding the number resetctl's
// own help gives as its example: the send is a first admission, the status answers, and of
// the cancel and the convert at most one succeeds (a cancelled code was never sent; a sent one
// cannot be cancelled), each failing only as the text says.
func TestAPIDocCLI(t *testing.T) {
	s := exampleEnv(t)
	help, _ := exec.Command(resetctl(t), "send", "-h").CombinedOutput()
	number := regexp.MustCompile(`e\.g\. (\+[0-9]+)`).FindStringSubmatch(string(help))
	if number == nil {
		t.Fatalf("resetctl send -h gives no example number:\n%s", help)
	}
	b := block(t, "docs/api.md", "sh", "go run ./infra/resetctl send")
	run := runShell(t, s, b, map[string]string{"to.txt": number[1] + "\n"}, "CODE=482913")
	if len(run.ctl) != 4 {
		t.Fatalf("the block made %d resetctl calls, want send, status, cancel and convert: %+v", len(run.ctl), run.ctl)
	}
	send, status, cancel, convert := run.ctl[0], run.ctl[1], run.ctl[2], run.ctl[3]
	if send.code != 0 || !regexp.MustCompile(`state\s+accepted`).MatchString(send.stdout) {
		t.Fatalf("send: %+v", send)
	}
	if status.code != 0 || !strings.Contains(status.stdout, `"idempotency_key": "E:sms:one_time_code"`) {
		t.Errorf("status --output json: %+v", status)
	}
	if cancel.code == 0 && convert.code == 0 {
		t.Errorf("both the cancel and the convert succeeded: %+v %+v", cancel, convert)
	}
	if cancel.code != 0 && (cancel.code != 1 || !strings.Contains(cancel.stderr, "not-cancellable")) {
		t.Errorf("cancel: %+v", cancel)
	}
	if convert.code != 0 && (convert.code != 1 || !strings.Contains(convert.stderr, "not-sent")) {
		t.Errorf("convert: %+v", convert)
	}
}

// TestAPIDocSignedCurl runs docs/api.md's signed curl (aws cloudformation answers the stack's
// URL, the credentials are the suite's): a first admission, then its status.
func TestAPIDocSignedCurl(t *testing.T) {
	s := exampleEnv(t)
	b := block(t, "docs/api.md", "sh", "--aws-sigv4")
	run := runShell(t, s, b, nil)
	if len(run.curls) != 2 {
		t.Fatalf("the block ran %d curls, want the POST and the GET", len(run.curls))
	}
	curl(t, s, run.curls[0]).want(t, "the signed POST", http.StatusAccepted)
	get := curl(t, s, run.curls[1])
	get.want(t, "the signed GET", http.StatusOK)
	if !strings.Contains(get.body, `"state":"accepted"`) && !strings.Contains(get.body, `"state":"sent"`) && !strings.Contains(get.body, `"state":"dispatching"`) {
		t.Errorf("the signed GET: %s", get.body)
	}
}

// TestAPIDocGoClient compiles docs/api.md's Go client example into a program (an overlay:
// nothing is written to the tree), with a line after each of its statements that records the
// error, and runs it: the Send is a first admission, the Status answers, and the Cancel and the
// Convert fail, if at all, only as the comments say.
func TestAPIDocGoClient(t *testing.T) {
	s := exampleEnv(t)
	prog := goClientProgram(t, block(t, "docs/api.md", "go", "client.NewFromConfig"))
	dir := t.TempDir()
	src, overlay := filepath.Join(dir, "main.go"), filepath.Join(dir, "overlay.json")
	target, err := filepath.Abs("docexample/main.go")
	if err != nil {
		t.Fatal(err)
	}
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{target: src}})
	if err := os.WriteFile(src, []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "-overlay", overlay, "./docexample")
	cmd.Env = append(os.Environ(), "EX_API="+s.api)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Go example: %v\n%s\n%s", err, out, prog)
	}
	var got struct {
		Steps []struct {
			Statement, Err          string
			NotCancellable, NotSent bool
		}
		State    string
		Replayed bool
		ID       string
	}
	if err := json.Unmarshal(bytes.TrimSpace(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]), &got); err != nil {
		t.Fatalf("the Go example's report: %v\n%s", err, out)
	}
	if got.ID == "" || got.Replayed || got.State != "accepted" {
		t.Errorf("Send: %+v", got)
	}
	for _, st := range got.Steps {
		switch {
		case st.Err == "":
		case strings.Contains(st.Statement, "c.Cancel(") && st.NotCancellable:
		case strings.Contains(st.Statement, "c.Convert(") && st.NotSent:
		default:
			t.Errorf("%s: %s", st.Statement, st.Err)
		}
	}
	// LoadDefaultConfig, NewFromConfig, Send, Status, Cancel and Convert.
	if len(got.Steps) != 6 {
		t.Errorf("%d statements ran, want 6: %+v", len(got.Steps), got.Steps)
	}
}

// goClientProgram wraps the Go example in a program: after each top-level statement that sets
// err, a line records it; at the end the program prints the record and the Send's result.
func goClientProgram(t *testing.T, example string) string {
	var body strings.Builder
	depth, start := 0, ""
	for _, line := range strings.Split(strings.TrimRight(example, "\n"), "\n") {
		if depth == 0 {
			start = line
		}
		depth += strings.Count(line, "{") + strings.Count(line, "(") - strings.Count(line, "}") - strings.Count(line, ")")
		body.WriteString(line + "\n")
		if depth == 0 && regexp.MustCompile(`\berr :?= `).MatchString(start) {
			fmt.Fprintf(&body, "record(%q, err)\n", strings.TrimSpace(start))
		}
	}
	if !strings.Contains(body.String(), "record(") {
		t.Fatal("the Go example sets no err")
	}
	return `package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/client"
)

type step struct {
	Statement, Err          string
	NotCancellable, NotSent bool
}

var steps []step

func record(statement string, err error) {
	s := step{Statement: statement}
	if err != nil {
		s.Err, s.NotCancellable, s.NotSent = err.Error(), errors.Is(err, client.ErrNotCancellable), errors.Is(err, client.ErrNotSent)
	}
	steps = append(steps, s)
}

func main() {
	ctx := context.Background()
	apiURL := os.Getenv("EX_API")
	var _ = time.Now
` + body.String() + `
	_, _ = st, conv
	if res == nil {
		res = &client.Result{}
	}
	out, _ := json.Marshal(map[string]any{"Steps": steps, "State": res.State, "Replayed": res.Replayed, "ID": res.NotificationID})
	fmt.Println(string(out))
}
`
}

// TestOpenAPIExamples posts each request example of POST /v1/notifications in openapi.yaml,
// under a key of its own and with a fresh expires_at: a first admission (202).
func TestOpenAPIExamples(t *testing.T) {
	s := exampleEnv(t)
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal([]byte(readDoc(t, "docs/openapi.yaml")), &doc); err != nil {
		t.Fatal(err)
	}
	var post struct {
		RequestBody struct {
			Content map[string]struct {
				Examples map[string]struct {
					Value map[string]any `yaml:"value"`
				} `yaml:"examples"`
			} `yaml:"content"`
		} `yaml:"requestBody"`
	}
	node := doc.Paths["/v1/notifications"]["post"]
	if err := node.Decode(&post); err != nil {
		t.Fatal(err)
	}
	examples := post.RequestBody.Content["application/json"].Examples
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range examples {
			if !yield(n) {
				return
			}
		}
	})
	if len(names) < 2 {
		t.Fatalf("openapi.yaml: %d request examples of POST /v1/notifications", len(names))
	}
	for _, name := range names {
		v := examples[name].Value
		v["expires_at"] = time.Now().UTC().Add(10 * time.Minute).Format(time.RFC3339)
		body, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"openapi-example-" + name}}
		if r := s.call(t, http.MethodPost, "/v1/notifications", h, body); r.Code != http.StatusAccepted {
			t.Errorf("openapi.yaml example %s: %d %s", name, r.Code, r.Body)
		}
	}
}
