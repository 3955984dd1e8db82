// Command stackcheck prepares and verifies a deployment of template.yaml to a
// LocalStack-compatible emulator (infra/emulator/emulator.sh). The AWS endpoint, region and credentials
// come from the standard AWS environment variables.
//
//	stackcheck secret -name /resetnotify/destination-pepper [-value V]
//	    creates a SecureString (CloudFormation cannot) with value V, or 32 random bytes in
//	    base64, unless it exists: the destination pepper, the request fingerprint key, the
//	    simulator's webhook token.
//	stackcheck check -stack S -template template.yaml -env FILE
//	    compares every deployed table (stream, indexes, TTL) and the HTTP API's routes with the
//	    template, and checks that every function has the alias the template gives it (none in a
//	    release from before AutoPublishAlias), which every API integration
//	    invokes, and that no CodeDeploy resource was deployed. An emulator's table provisioner may ignore TimeToLiveSpecification: where the
//	    deployed table has no TTL, stackcheck enables it as the template says and says so;
//	    any other difference fails, and so does a provider callback output (TwilioCallbackUrl,
//	    SinchCallbackUrl, SimulatorWebhookUrl) that is not the route's URL on the emulator.
//	    FILE receives the `export` lines of the stack's endpoints for the black-box suite
//	    (RESETNOTIFY_E2E_*, AUDIT_TABLE ...).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/apigatewayv2"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/s3client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stackcheck:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: stackcheck secret|check [flags]")
	}
	fs := flag.NewFlagSet("stackcheck "+args[0], flag.ContinueOnError)
	name := fs.String("name", "", "secret: SSM parameter `name`")
	value := fs.String("value", "", "secret: the `value` (default: 32 random bytes, base64)")
	stack := fs.String("stack", "resetnotify-e2e", "check: stack `name`")
	template := fs.String("template", "template.yaml", "check: the SAM template `path`")
	envFile := fs.String("env", "", "check: write the suite's environment to `file`")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	switch args[0] {
	case "secret":
		if *name == "" {
			return errors.New("secret: -name is required")
		}
		return secret(ctx, ssm.NewFromConfig(cfg), *name, *value, out)
	case "check":
		tpl, err := samtemplate.Load(*template)
		if err != nil {
			return err
		}
		c := checker{
			cfn: cloudformation.NewFromConfig(cfg), db: awsclient.DynamoDB(cfg, ""),
			api: apigatewayv2.NewFromConfig(cfg), s3: s3client.New(cfg, ""), tpl: tpl, out: out,
		}
		env, err := c.check(ctx, *stack)
		if err != nil {
			return err
		}
		if *envFile != "" {
			return os.WriteFile(*envFile, []byte(env), 0o600)
		}
		_, err = io.WriteString(out, env)
		return err
	}
	return fmt.Errorf("unknown command %q: want secret or check", args[0])
}

// secret creates the SecureString name with value, or a random one, unless it exists.
func secret(ctx context.Context, client *ssm.Client, name, value string, out io.Writer) error {
	if _, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)}); err == nil {
		return nil
	}
	if value == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		value = base64.StdEncoding.EncodeToString(b)
	}
	_, err := client.PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(name), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String(value),
	})
	// The SDK retries a put whose answer it could not read (a connection reset by the
	// emulator): the retry finds the parameter the first attempt created. It exists, which is
	// all this asks; an existing parameter is never overwritten.
	var exists *ssmtypes.ParameterAlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("put parameter %s: %w", name, err)
	}
	fmt.Fprintf(out, "stackcheck: created SecureString %s\n", name)
	return nil
}

type checker struct {
	cfn *cloudformation.Client
	db  *dynamodb.Client
	api *apigatewayv2.Client
	s3  *s3.Client
	tpl *samtemplate.Template
	out io.Writer
}

// check verifies the deployed stack and returns the suite's environment.
func (c checker) check(ctx context.Context, stack string) (string, error) {
	physical, types, err := c.resources(ctx, stack)
	if err != nil {
		return "", err
	}
	var problems []string
	for _, id := range c.tpl.Of("AWS::DynamoDB::Table") {
		p, err := c.table(ctx, id, physical[id])
		if err != nil {
			return "", err
		}
		problems = append(problems, p...)
	}
	for _, id := range c.tpl.Of("AWS::S3::Bucket") {
		if err := c.objectLock(ctx, id, physical[id]); err != nil {
			return "", err
		}
	}
	apiID := physical["NotificationsApi"]
	p, err := c.routes(ctx, apiID, physical)
	if err != nil {
		return "", err
	}
	problems = append(problems, p...)
	uris, err := c.integrationURIs(ctx, apiID)
	if err != nil {
		return "", err
	}
	want, err := wantAliases(c.tpl)
	if err != nil {
		return "", err
	}
	problems = append(problems, aliasProblems(want, types, physical, uris)...)
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	// The emulator's path form of an execute-api URL; the $default stage is in the path.
	api := endpoint + "/_aws/execute-api/" + apiID + "/$default"
	outputs, err := c.outputs(ctx, stack)
	if err != nil {
		return "", err
	}
	problems = append(problems, callbackProblems(outputs, api)...)
	if len(problems) > 0 {
		return "", fmt.Errorf("the deployed stack differs from the template:\n  %s", strings.Join(problems, "\n  "))
	}
	env := map[string]string{
		"RESETNOTIFY_E2E_API":                 api,
		"RESETNOTIFY_E2E_NOTIFICATIONS_TABLE": physical["NotificationsTable"],
		"AUDIT_TABLE":                         physical["AuditTable"],
		// The digests' signing key, for auditctl public-key --key-id (e2e's upgrade test).
		"AUDIT_DIGEST_KEY_ID":                physical["DigestSigningKey"],
		"RESETNOTIFY_E2E_DISPATCH_QUEUE_URL": physical["DispatchQueue"],
		"AWS_ENDPOINT_URL_DYNAMODB":          endpoint,
		"AWS_ENDPOINT_URL_SQS":               endpoint,
	}
	if u := outputs["TwilioCallbackUrl"]; u != "" {
		// The suite stands in for Twilio (and a forger) at the URL dispatch gives Twilio.
		env["RESETNOTIFY_E2E_TWILIO_WEBHOOK"] = u
	}
	return exports(env), nil
}

// resources returns the stack's resources' physical IDs and types, by logical ID.
func (c checker) resources(ctx context.Context, stack string) (physical, types map[string]string, err error) {
	res, err := c.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	physical, types = map[string]string{}, map[string]string{}
	for _, r := range res.StackResources {
		physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
		types[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.ResourceType)
	}
	return physical, types, nil
}

// exports renders env as sorted shell `export` lines.
func exports(env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s='%s'\n", k, env[k])
	}
	return b.String()
}

// outputs returns the stack's outputs by key.
func (c checker) outputs(ctx context.Context, stack string) (map[string]string, error) {
	res, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	out := map[string]string{}
	for _, st := range res.Stacks {
		for _, o := range st.Outputs {
			out[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
	}
	return out, nil
}

// callbackOutputs are the outputs naming a provider callback route, each the URL the stack's
// functions give that provider (from CallbackBaseUrl, else the AWS execute-api URL).
var callbackOutputs = map[string]string{
	"TwilioCallbackUrl":   "/v1/provider-events/twilio",
	"SinchCallbackUrl":    "/v1/provider-events/sinch",
	"SimulatorWebhookUrl": "/v1/provider-events/simulator",
}

// callbackProblems checks that every callback URL among outputs is the route on api, the URL
// at which the emulator serves the deployed API: a callback sent anywhere else never arrives,
// and Twilio's signature covers the URL, so it must be the one the webhook is reached at.
// An emulator's URLs differ from AWS's execute-api shape: the deploy passes CallbackBaseUrl
// (infra/emulator/emulator.sh pins the API's id to know it in advance).
func callbackProblems(outputs map[string]string, api string) []string {
	var problems []string
	keys := make([]string, 0, len(callbackOutputs))
	for k := range callbackOutputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		got, ok := outputs[k]
		if want := api + callbackOutputs[k]; ok && got != want {
			problems = append(problems, fmt.Sprintf("output %s is %s, but the API serves that route at %s (CallbackBaseUrl must be the API's URL on this emulator)", k, got, want))
		}
	}
	return problems
}

// objectLock applies the template's Object Lock configuration to the bucket id (physical name
// name) when the emulator's CloudFormation left it out (MiniStack creates the bucket without
// it; its S3 itself has Object Lock), and says so. A bucket whose template asks for none, or
// that has one, is left alone.
func (c checker) objectLock(ctx context.Context, id, name string) error {
	props := c.tpl.Resources[id].Properties
	mode, _ := samtemplate.Lookup(props, "ObjectLockConfiguration", "Rule", "DefaultRetention", "Mode")
	rawDays, _ := samtemplate.Lookup(props, "ObjectLockConfiguration", "Rule", "DefaultRetention", "Days")
	if mode == nil || name == "" {
		return nil
	}
	if got, err := c.s3.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(name)}); err == nil &&
		got.ObjectLockConfiguration != nil && got.ObjectLockConfiguration.Rule != nil {
		return nil
	}
	days, err := c.tpl.Int(rawDays)
	if err != nil {
		return fmt.Errorf("%s: ObjectLockConfiguration days: %w", id, err)
	}
	_, err = c.s3.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String(name),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{
				Mode: s3types.ObjectLockRetentionMode(fmt.Sprint(mode)), Days: aws.Int32(int32(days))}}}})
	if err != nil {
		return fmt.Errorf("%s (%s): put object lock configuration: %w", id, name, err)
	}
	fmt.Fprintf(c.out, "stackcheck: %s: the emulator ignored ObjectLockConfiguration; applying %s, %d days, as the template says\n", id, mode, days)
	return nil
}

// table compares one deployed table with its template resource, enabling TTL where the
// emulator left it out.
func (c checker) table(ctx context.Context, id, name string) ([]string, error) {
	if name == "" {
		return []string{id + ": not in the stack"}, nil
	}
	props := c.tpl.Resources[id].Properties
	desc, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", id, name, err)
	}
	var problems []string
	if want, _ := samtemplate.Lookup(props, "StreamSpecification", "StreamViewType"); want != nil {
		got := ""
		if s := desc.Table.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
			got = string(s.StreamViewType)
		}
		if got != want {
			problems = append(problems, fmt.Sprintf("%s: stream %q, template %q", id, got, want))
		}
	}
	wantIdx := map[string]bool{}
	if gsis, ok := props["GlobalSecondaryIndexes"].([]any); ok {
		for _, g := range gsis {
			n, _ := samtemplate.Lookup(g.(map[string]any), "IndexName")
			wantIdx[fmt.Sprint(n)] = true
		}
	}
	gotIdx := map[string]bool{}
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		gotIdx[aws.ToString(g.IndexName)] = true
	}
	if fmt.Sprint(wantIdx) != fmt.Sprint(gotIdx) {
		problems = append(problems, fmt.Sprintf("%s: indexes %v, template %v", id, gotIdx, wantIdx))
	}
	p, err := c.ttl(ctx, id, name, props)
	return append(problems, p...), err
}

func (c checker) ttl(ctx context.Context, id, name string, props map[string]any) ([]string, error) {
	attr, _ := samtemplate.Lookup(props, "TimeToLiveSpecification", "AttributeName")
	enabled, _ := samtemplate.Lookup(props, "TimeToLiveSpecification", "Enabled")
	if attr == nil || enabled != true {
		return nil, nil
	}
	got, err := c.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("%s: describe TTL: %w", id, err)
	}
	d := got.TimeToLiveDescription
	if d != nil && (d.TimeToLiveStatus == dbtypes.TimeToLiveStatusEnabled || d.TimeToLiveStatus == dbtypes.TimeToLiveStatusEnabling) {
		if aws.ToString(d.AttributeName) != attr {
			return []string{fmt.Sprintf("%s: TTL on %q, template %q", id, aws.ToString(d.AttributeName), attr)}, nil
		}
		return nil, nil
	}
	fmt.Fprintf(c.out, "stackcheck: %s: the emulator ignored TimeToLiveSpecification; enabling TTL on %q as the template says\n", id, attr)
	_, err = c.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &dbtypes.TimeToLiveSpecification{AttributeName: aws.String(fmt.Sprint(attr)), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: update TTL: %w", id, err)
	}
	return nil, nil
}

// routes compares the deployed API's routes (key and authorization) with the template's
// (wantRoutes: physical holds the stack's resources by logical ID).
func (c checker) routes(ctx context.Context, apiID string, physical map[string]string) ([]string, error) {
	if apiID == "" {
		return []string{"NotificationsApi: not in the stack"}, nil
	}
	want := wantRoutes(c.tpl, physical)
	out, err := c.api.GetRoutes(ctx, &apigatewayv2.GetRoutesInput{ApiId: aws.String(apiID)})
	if err != nil {
		return nil, fmt.Errorf("routes of %s: %w", apiID, err)
	}
	got := map[string]string{}
	for _, r := range out.Items {
		got[aws.ToString(r.RouteKey)] = string(r.AuthorizationType)
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return []string{fmt.Sprintf("NotificationsApi routes %v, template %v", got, want)}, nil
	}
	return nil, nil
}

// wantAliases maps each function of tpl to its AutoPublishAlias (its own, or Globals'); a
// function without one (a release from before the aliases) is left out.
func wantAliases(tpl *samtemplate.Template) (map[string]string, error) {
	want := map[string]string{}
	for _, id := range tpl.Of("AWS::Serverless::Function") {
		v, ok := tpl.Resources[id].Properties["AutoPublishAlias"]
		if !ok {
			v, ok = tpl.Globals["Function"]["AutoPublishAlias"]
		}
		if !ok {
			continue
		}
		alias, err := tpl.String(v)
		if err != nil {
			return nil, fmt.Errorf("%s AutoPublishAlias: %w", id, err)
		}
		want[id] = alias
	}
	return want, nil
}

// aliasProblems lists what keeps the deployed stack (types: logical ID -> resource type,
// physical: logical ID -> name) from being invoked through the aliases the template wants
// (want: function -> alias): a function without its alias, an API integration (uris) that
// invokes such a function otherwise, or a CodeDeploy resource, which an emulator lacks and
// Target=emulator leaves out.
func aliasProblems(want, types, physical map[string]string, uris []string) []string {
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(types)) {
		alias, wanted := want[id]
		switch {
		case wanted && types[id] == "AWS::Lambda::Function" && types[id+"Alias"+alias] != "AWS::Lambda::Alias":
			problems = append(problems, fmt.Sprintf("%s: no alias %s deployed", id, alias))
		case strings.HasPrefix(types[id], "AWS::CodeDeploy::"):
			problems = append(problems, fmt.Sprintf("%s: a %s on an emulator (Target=emulator leaves CodeDeploy out)", id, types[id]))
		}
	}
	for _, u := range uris {
		for _, id := range slices.Sorted(maps.Keys(want)) {
			fn := ":function:" + physical[id]
			named := physical[id] != "" && (strings.Contains(u, fn+"/") || strings.Contains(u, fn+":"))
			if named && !strings.HasSuffix(u, fn+":"+want[id]+"/invocations") {
				problems = append(problems, fmt.Sprintf("an API integration invokes %s, not %s's alias %s", u, id, want[id]))
			}
		}
	}
	return problems
}

// integrationURIs returns the URIs of the API's integrations.
func (c checker) integrationURIs(ctx context.Context, apiID string) ([]string, error) {
	if apiID == "" {
		return nil, nil
	}
	out, err := c.api.GetIntegrations(ctx, &apigatewayv2.GetIntegrationsInput{ApiId: aws.String(apiID)})
	if err != nil {
		return nil, fmt.Errorf("integrations of %s: %w", apiID, err)
	}
	var uris []string
	for _, in := range out.Items {
		uris = append(uris, aws.ToString(in.IntegrationUri))
	}
	return uris, nil
}

// wantRoutes returns the template's routes (key → authorization) the stack should have: every
// route without a condition, and a route under a condition (a provider's webhook) when the
// stack holds it, its condition being true for the stack's parameters.
func wantRoutes(tpl *samtemplate.Template, physical map[string]string) map[string]string {
	want := map[string]string{}
	for _, id := range tpl.Of("AWS::ApiGatewayV2::Route") {
		r := tpl.Resources[id]
		if _, deployed := physical[id]; r.Condition != "" && !deployed {
			continue
		}
		want[fmt.Sprint(r.Properties["RouteKey"])] = fmt.Sprint(r.Properties["AuthorizationType"])
	}
	return want
}
