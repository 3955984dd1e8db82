package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/infra/testenv"
)

// TestTableEnablesIgnoredTTL deploys, in effect, the notifications table as an emulator that
// ignores TimeToLiveSpecification does (the table without TTL), and checks that stackcheck
// finds the stream and indexes as the template says, enables TTL once, says so, and leaves it
// alone on a second run.
func TestTableEnablesIgnoredTTL(t *testing.T) {
	db := testenv.DynamoDB(t)
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := testenv.UniqueName(t, "stackcheck")
	if _, err := db.CreateTable(ctx, tablesetup.Notifications(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})

	var out bytes.Buffer
	c := checker{db: db, tpl: tpl, out: &out}
	problems, err := c.table(ctx, "NotificationsTable", name)
	if err != nil || len(problems) != 0 {
		t.Fatalf("first check: %v, %v", problems, err)
	}
	if !strings.Contains(out.String(), `NotificationsTable: the emulator ignored TimeToLiveSpecification; enabling TTL on "ttl"`) {
		t.Errorf("first check said %q, want that it enabled TTL", out.String())
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != dbtypes.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "ttl" {
		t.Fatalf("TTL after the check: %+v", ttl.TimeToLiveDescription)
	}
	out.Reset()
	if problems, err := c.table(ctx, "NotificationsTable", name); err != nil || len(problems) != 0 || out.Len() != 0 {
		t.Errorf("second check: %v, %v, said %q; want nothing to do", problems, err, out.String())
	}
	// A table that differs from the template is a problem, never patched.
	if problems, err := c.table(ctx, "AuditTable", name); err != nil || len(problems) == 0 {
		t.Errorf("the notifications table checked as AuditTable: %v, %v; want differences", problems, err)
	}
}

// TestConditionalRoutes: a stack is expected to have every route of the template without a
// condition, whether or not it lists it, and a provider's webhook route only when its
// condition made the stack create it (a simulator stack has no Sinch route).
func TestConditionalRoutes(t *testing.T) {
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	simulatorStack := map[string]string{"SimulatorWebhookRoute": "r1", "SubmitRoute": "r2"}
	got := wantRoutes(tpl, simulatorStack)
	if _, ok := got["POST /v1/provider-events/sinch"]; ok {
		t.Error("a simulator stack is expected to have the Sinch webhook route")
	}
	if got["POST /v1/provider-events/simulator"] != "NONE" || got["GET /v1/notifications/{key}"] != "AWS_IAM" {
		t.Errorf("expected routes %v, want the simulator's webhook and every unconditional route (listed or not)", got)
	}
	sinchStack := map[string]string{"SinchWebhookRoute": "r3"}
	got = wantRoutes(tpl, sinchStack)
	if _, ok := got["POST /v1/provider-events/simulator"]; ok || got["POST /v1/provider-events/sinch"] != "NONE" {
		t.Errorf("a Sinch stack's expected routes %v, want its webhook and not the simulator's", got)
	}
}

// TestBucketGetsIgnoredObjectLock stands in for an emulator whose CloudFormation creates
// AuditArchiveBucket versioned but without the template's Object Lock (MiniStack): stackcheck
// applies compliance mode with AuditRetentionDays, says so, and leaves it alone on a second
// run; an object put afterwards is locked.
func TestBucketGetsIgnoredObjectLock(t *testing.T) {
	client := testenv.S3(t)
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := strings.Trim(strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "stackcheck"), "_", "-")), "-")
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		var out bytes.Buffer
		c := checker{s3: client, tpl: tpl, out: &out}
		if err := c.objectLock(ctx, "AuditArchiveBucket", name); err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(out.String(), "AuditArchiveBucket: the emulator ignored ObjectLockConfiguration; applying COMPLIANCE, 400 days")
		if said != (run == 0) {
			t.Errorf("run %d said %q", run, out.String())
		}
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("k"), Body: strings.NewReader("x"),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}); err != nil {
		t.Fatal(err)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String("k")})
	if err != nil || head.ObjectLockMode != s3types.ObjectLockModeCompliance {
		t.Errorf("an object put after the check: lock %q, %v; want COMPLIANCE", head.ObjectLockMode, err)
	}
}

// TestCallbackOutputsMustBeTheEmulatorsURLs: a stack deployed without CallbackBaseUrl gives
// Twilio the AWS execute-api URL, which no callback on an emulator reaches (and whose
// signature the webhook would check against the wrong URL): stackcheck fails it, naming the
// URL the route is served at. With CallbackBaseUrl set to the API's URL it passes, and a
// stack without the output (no Twilio in its chain) has nothing to check.
func TestCallbackOutputsMustBeTheEmulatorsURLs(t *testing.T) {
	api := "http://127.0.0.1:4566/_aws/execute-api/0a1b2c3d/$default"
	awsShape := map[string]string{"TwilioCallbackUrl": "https://0a1b2c3d.execute-api.us-east-1.amazonaws.com/v1/provider-events/twilio"}
	if p := callbackProblems(awsShape, api); len(p) != 1 || !strings.Contains(p[0], api+"/v1/provider-events/twilio") {
		t.Errorf("problems %q, want one naming %s/v1/provider-events/twilio", p, api)
	}
	overridden := map[string]string{"TwilioCallbackUrl": api + "/v1/provider-events/twilio", "SimulatorWebhookUrl": api + "/v1/provider-events/simulator", "ApiUrl": "https://elsewhere/"}
	if p := callbackProblems(overridden, api); len(p) != 0 {
		t.Errorf("problems %q for the emulator's URLs, want none", p)
	}
	if p := callbackProblems(map[string]string{}, api); len(p) != 0 {
		t.Errorf("problems %q for a stack without callback outputs, want none", p)
	}
}

// TestSecretRetriedPutFindsItCreated stands in for an emulator whose answer to the first
// PutParameter was lost, so that the SDK's retry finds the parameter that put created
// (ParameterAlreadyExists): the parameter exists, which is what secret ensures, so it succeeds
// instead of failing the run.
func TestSecretRetriedPutFindsItCreated(t *testing.T) {
	var puts int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		switch target := r.Header.Get("X-Amz-Target"); target {
		case "AmazonSSM.GetParameter":
			io.WriteString(w, `{"__type":"ParameterNotFound","message":"not found"}`)
		case "AmazonSSM.PutParameter":
			puts++
			io.WriteString(w, `{"__type":"ParameterAlreadyExists","message":"The parameter already exists."}`)
		default:
			t.Errorf("unexpected call %s", target)
		}
	}))
	defer srv.Close()
	client := ssm.New(ssm.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	var out bytes.Buffer
	if err := secret(context.Background(), client, "/resetnotify/twilio-auth-token", "v", &out); err != nil || puts != 1 {
		t.Errorf("secret: %v after %d puts, want nil after 1 (the parameter exists)", err, puts)
	}
}

// TestFunctionsDeployedWithTheirAliases: a deployed function without the alias its template
// wants, an integration that invokes such a function unqualified, or a CodeDeploy resource on
// the emulator is a problem; the template's shape is none.
func TestFunctionsDeployedWithTheirAliases(t *testing.T) {
	fn := "arn:aws:lambda:us-east-1:000000000000:function:resetnotify-e2e-IntakeFunction-x"
	uri := "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/" + fn
	want := map[string]string{"IntakeFunction": "live"}
	physical := map[string]string{"IntakeFunction": "resetnotify-e2e-IntakeFunction-x"}
	types := map[string]string{"IntakeFunction": "AWS::Lambda::Function", "IntakeFunctionAliaslive": "AWS::Lambda::Alias",
		"IntakeFunctionVersion0a1b2c": "AWS::Lambda::Version"}
	if p := aliasProblems(want, types, physical, []string{uri + ":live/invocations"}); len(p) != 0 {
		t.Errorf("problems %q for functions on their aliases, want none", p)
	}
	delete(types, "IntakeFunctionAliaslive")
	types["ServerlessDeploymentApplication"] = "AWS::CodeDeploy::Application"
	p := aliasProblems(want, types, physical, []string{uri + "/invocations"})
	wantProblems := []string{"IntakeFunction: no alias", "ServerlessDeploymentApplication: a AWS::CodeDeploy::Application", "invokes " + uri + "/invocations"}
	if len(p) != len(wantProblems) {
		t.Fatalf("problems %q, want %d", p, len(wantProblems))
	}
	for i, w := range wantProblems {
		if !strings.Contains(p[i], w) {
			t.Errorf("problem %q, want one saying %q", p[i], w)
		}
	}
	if p := aliasProblems(want, types, physical, []string{uri + ":other/invocations"}); len(p) != 3 {
		t.Errorf("an integration on another alias: problems %q, want it among 3", p)
	}
}

// TestAliasesAsTheTemplateSays: this checkout's template wants the alias live on every
// function; a release's template without AutoPublishAlias (the upgrade game day deploys one
// first) wants none, so its unqualified functions and integrations pass.
func TestAliasesAsTheTemplateSays(t *testing.T) {
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := wantAliases(tpl)
	if err != nil {
		t.Fatal(err)
	}
	fns := tpl.Of("AWS::Serverless::Function")
	if len(fns) == 0 || len(want) != len(fns) {
		t.Fatalf("aliases wanted %v, want one per function of %v", want, fns)
	}
	for id, alias := range want {
		if alias != "live" {
			t.Errorf("%s: alias %q, want live", id, alias)
		}
	}
	old, err := samtemplate.Parse([]byte("Resources:\n  IntakeFunction:\n    Type: AWS::Serverless::Function\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want, err := wantAliases(old); err != nil || len(want) != 0 {
		t.Fatalf("a template without AutoPublishAlias: %v, %v; want no alias", want, err)
	}
	uri := "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:000000000000:function:resetnotify-e2e-IntakeFunction-x/invocations"
	types := map[string]string{"IntakeFunction": "AWS::Lambda::Function"}
	physical := map[string]string{"IntakeFunction": "resetnotify-e2e-IntakeFunction-x"}
	if p := aliasProblems(map[string]string{}, types, physical, []string{uri}); len(p) != 0 {
		t.Errorf("a release without aliases: problems %q, want none", p)
	}
}
