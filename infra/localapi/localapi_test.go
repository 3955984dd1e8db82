package localapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/infra/testenv"
)

const template = `
Transform: AWS::Serverless-2016-10-31
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  IntakeFunction:
    Type: AWS::Serverless::Function
    Properties:
      Role: !GetAtt Role.Arn
      Events:
        Post:
          Type: HttpApi
          Properties:
            ApiId: !Ref Api
            Path: /v1/notifications
            Method: post
        Get:
          Type: HttpApi
          Properties:
            Path: /v1/notifications/{key}
            Method: GET
        Queue:
          Type: SQS
          Properties:
            Queue: !GetAtt Q.Arn
`

func writeTemplate(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(p, []byte(template), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoutesFromTemplate(t *testing.T) {
	routes, err := RoutesFromTemplate(writeTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{
		{Function: "IntakeFunction", Method: "GET", Path: "/v1/notifications/{key}"},
		{Function: "IntakeFunction", Method: "POST", Path: "/v1/notifications"},
	}
	if diff := cmp.Diff(want, routes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

func TestServerBuildsV2Events(t *testing.T) {
	routes, err := RoutesFromTemplate(writeTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []events.APIGatewayV2HTTPRequest
	srv := httptest.NewServer(NewServer(routes, map[string]HandlerFunc{
		"IntakeFunction": func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = append(got, ev)
			return events.APIGatewayV2HTTPResponse{StatusCode: 202, Headers: map[string]string{"Location": "/x"}, Body: "ok"}, nil
		},
	}))
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/notifications?x=1", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || string(b) != "ok" || resp.Header.Get("Location") != "/x" {
		t.Errorf("response %d %q %v", resp.StatusCode, b, resp.Header)
	}
	resp, err = http.Get(srv.URL + "/v1/notifications/evt-1%3Asms%3Apassword_reset")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for path, status := range map[string]int{"/v1/nope": 404, "/v1/notifications/a/b": 404} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, status)
		}
	}
	if len(got) != 2 {
		t.Fatalf("handler saw %d events, want 2", len(got))
	}
	post, get := got[0], got[1]
	if post.RouteKey != "POST /v1/notifications" || post.Body != `{"a":1}` || post.Headers["content-type"] != "application/json" ||
		post.RawQueryString != "x=1" || post.RequestContext.HTTP.Method != "POST" || post.RequestContext.RequestID == "" {
		t.Errorf("POST event: %+v", post)
	}
	if get.RouteKey != "GET /v1/notifications/{key}" || get.PathParameters["key"] != "evt-1:sms:password_reset" {
		t.Errorf("GET event: route %q params %v", get.RouteKey, get.PathParameters)
	}
}

func TestMissingHandlerIs501(t *testing.T) {
	srv := httptest.NewServer(NewServer([]Route{{Function: "F", Method: "GET", Path: "/x"}}, nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// TestRoutesSameInEveryForm checks that template.yaml's routes are the same in every form that
// serves them: as written (what infra/local and `sam local start-api` read), and after the SAM
// transform (what CloudFormation deploys to AWS or an emulator), with IAM on every route but
// the providers' webhooks and no route hidden in an OpenAPI Body. infra/emulator/emulator.sh compares
// the routes of the deployed stack too (infra/stackcheck).
func TestRoutesSameInEveryForm(t *testing.T) {
	const tpl = "../../template.yaml"
	want := []Route{
		{Function: "IntakeFunction", Method: "DELETE", Path: "/v1/notifications/{key}"},
		{Function: "IntakeFunction", Method: "GET", Path: "/v1/notifications/{key}"},
		{Function: "IntakeFunction", Method: "POST", Path: "/v1/notifications"},
		{Function: "IntakeFunction", Method: "POST", Path: "/v1/notifications/{key}/conversion"},
		{Function: "SimulatorWebhookFunction", Method: "POST", Path: "/v1/provider-events/simulator"},
		{Function: "SinchWebhookFunction", Method: "POST", Path: "/v1/provider-events/sinch"},
		{Function: "TwilioWebhookFunction", Method: "POST", Path: "/v1/provider-events/twilio"},
	}
	written, err := RoutesFromTemplate(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, written); diff != "" {
		t.Errorf("template.yaml routes (-want +got):\n%s", diff)
	}

	python := testenv.Tool(t, "venv/bin/python")
	out, err := exec.Command(python, "../../infra/expand-template.py", tpl).Output()
	if err != nil {
		t.Fatalf("expand-template.py: %v", err)
	}
	expanded := filepath.Join(t.TempDir(), "expanded.json")
	if err := os.WriteFile(expanded, out, 0o600); err != nil {
		t.Fatal(err)
	}
	deployed, err := RoutesFromTemplate(expanded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, deployed); diff != "" {
		t.Errorf("routes after the SAM transform (-want +got):\n%s", diff)
	}
	cfn, err := samtemplate.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range cfn.Of("AWS::ApiGatewayV2::Api") {
		if _, ok := cfn.Resources[id].Properties["Body"]; ok {
			t.Errorf("%s has an OpenAPI Body after the SAM transform: an emulator imports it with no routes", id)
		}
	}
	for _, id := range cfn.Of("AWS::ApiGatewayV2::Route") {
		props := cfn.Resources[id].Properties
		wantAuth := "AWS_IAM"
		if props["RouteKey"] == "POST /v1/provider-events/simulator" || props["RouteKey"] == "POST /v1/provider-events/sinch" ||
			props["RouteKey"] == "POST /v1/provider-events/twilio" {
			wantAuth = "NONE"
		}
		if props["AuthorizationType"] != wantAuth {
			t.Errorf("%s (%v): AuthorizationType %v, want %s", id, props["RouteKey"], props["AuthorizationType"], wantAuth)
		}
	}
}

// TestRoutesAsSAMLocalServesThem asks the SAM CLI's own API provider, the code behind
// `sam local start-api`, which routes it would serve for template.yaml: the same as infra/local's.
// It needs the SAM CLI's virtualenv (.tools/sam, installed by make emulator-e2e, which runs this
// test with RESETNOTIFY_E2E=required); without it the test skips, saying so.
func TestRoutesAsSAMLocalServesThem(t *testing.T) {
	python, err := filepath.Abs("../../.tools/sam/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("RESETNOTIFY_E2E") == "required" {
			t.Fatalf("the SAM CLI is not installed (.tools/sam): %v", err)
		}
		t.Skip("needs the SAM CLI in .tools/sam; `make emulator-e2e` installs it and runs this test")
	}
	cmd := exec.Command(python, "../../infra/sam-local-routes.py", "../../template.yaml")
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=us-east-1", "SAM_CLI_TELEMETRY=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sam-local-routes.py: %v", err)
	}
	routes, err := RoutesFromTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range routes {
		want = append(want, r.RouteKey()+" "+r.Function)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sam local start-api routes (-cmd/local +SAM CLI):\n%s", diff)
	}
}

// TestOversizedBodiesAnswerAsAPIGateway: a body over API Gateway's 10 MB, and one under it
// whose event is over Lambda's 6 MB invocation limit (also when base64 makes it so), get 413
// with API Gateway's message, and no handler runs; a large body within both limits reaches
// the handler.
func TestOversizedBodiesAnswerAsAPIGateway(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(NewServer([]Route{{Function: "F", Method: "POST", Path: "/x"}}, map[string]HandlerFunc{
		"F": func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			calls++
			return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
		},
	}))
	defer srv.Close()
	binary := func(n int) string { return strings.Repeat("\xff", n) } // not UTF-8: base64 in the event
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantBody   string
		wantCalled bool
	}{
		{"11 MB", strings.Repeat("a", 11<<20), 413, `{"message":"Request Entity Too Large"}`, false},
		{"7 MB, text", strings.Repeat("a", 7<<20), 413, `{"message":"Request Too Long"}`, false},
		{"6 MB, text", strings.Repeat("a", MaxInvokePayload), 413, `{"message":"Request Too Long"}`, false},
		{"5 MB binary, 6.7 MB as base64", binary(5 << 20), 413, `{"message":"Request Too Long"}`, false},
		{"5 MB, text", strings.Repeat("a", 5<<20), 200, "", true},
		{"4 MB binary", binary(4 << 20), 200, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			resp, err := http.Post(srv.URL+"/x", "application/octet-stream", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || (tc.wantBody != "" && string(b) != tc.wantBody) {
				t.Errorf("answer %d %s, want %d %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
			if (calls == 1) != tc.wantCalled {
				t.Errorf("handler called %d times", calls)
			}
		})
	}
}

// TestLocalCallers: every request comes from a session of LocalCallerRole, unless CallerHeader
// names another role; a header that is no role name is refused before the handler.
func TestLocalCallers(t *testing.T) {
	routes, err := RoutesFromTemplate(writeTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	var arns []string
	srv := httptest.NewServer(NewServer(routes, map[string]HandlerFunc{
		"IntakeFunction": func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			arns = append(arns, ev.RequestContext.Authorizer.IAM.UserARN)
			return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
		},
	}))
	defer srv.Close()
	for _, caller := range []string{"", "second-shop", "not a role/../x"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/notifications/k", nil)
		if caller != "" {
			req.Header.Set(CallerHeader, caller)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 403, false: 200}[strings.Contains(caller, " ")]; resp.StatusCode != want {
			t.Errorf("caller %q: %d, want %d", caller, resp.StatusCode, want)
		}
	}
	want := []string{
		"arn:aws:sts::000000000000:assumed-role/resetnotify-local-caller/local",
		"arn:aws:sts::000000000000:assumed-role/second-shop/local",
	}
	if d := cmp.Diff(want, arns); d != "" {
		t.Errorf("caller ARNs (-want +got):\n%s", d)
	}
}
