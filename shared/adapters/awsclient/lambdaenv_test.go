package awsclient_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
)

func lambdaEnv(extra map[string]string) func(string) string {
	m := map[string]string{
		"AWS_REGION":            "eu-west-1",
		"AWS_ACCESS_KEY_ID":     "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "secret-value-never-logged",
		"AWS_SESSION_TOKEN":     "session-token",
	}
	for k, v := range extra {
		if v == "-" {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestFromLambdaEnvCredentialsAndRegion(t *testing.T) {
	cfg, err := awsclient.FromLambdaEnv(lambdaEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" {
		t.Errorf("region %q", cfg.Region)
	}
	c, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessKeyID != "AKIDEXAMPLE" || c.SecretAccessKey != "secret-value-never-logged" || c.SessionToken != "session-token" {
		t.Errorf("credentials %+v", c)
	}
	if cfg.Retryer != nil || cfg.HTTPClient != nil {
		t.Error("the SDK's default retryer and HTTP client must be kept")
	}
}

func TestFromLambdaEnvMissing(t *testing.T) {
	for _, tc := range []struct {
		unset, want string
	}{
		{"AWS_REGION", "AWS_REGION is not set"},
		{"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
	} {
		_, err := awsclient.FromLambdaEnv(lambdaEnv(map[string]string{tc.unset: "-"}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("without %s: err %v, want %q", tc.unset, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("error leaks the secret: %v", err)
		}
	}
	cfg, err := awsclient.FromLambdaEnv(lambdaEnv(map[string]string{"AWS_REGION": "-", "AWS_DEFAULT_REGION": "us-east-2"}))
	if err != nil || cfg.Region != "us-east-2" {
		t.Errorf("AWS_DEFAULT_REGION: %q, %v", cfg.Region, err)
	}
}

// TestFromLambdaEnvEndpoints resolves the clients' endpoints as the SDK does: the service's
// own AWS_ENDPOINT_URL_<SERVICE> over AWS_ENDPOINT_URL. The service clients also look at the
// process environment, so the variables are set there too (t.Setenv).
func TestFromLambdaEnvEndpoints(t *testing.T) {
	vars := map[string]string{
		"AWS_ENDPOINT_URL":          "http://127.0.0.1:4566",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000",
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	cfg, err := awsclient.FromLambdaEnv(lambdaEnv(vars))
	if err != nil {
		t.Fatal(err)
	}
	ddb := dynamodb.NewFromConfig(cfg).Options()
	if ddb.BaseEndpoint == nil || *ddb.BaseEndpoint != "http://127.0.0.1:8000" {
		t.Errorf("dynamodb endpoint %v, want the service-specific one", ddb.BaseEndpoint)
	}
	q := sqs.NewFromConfig(cfg).Options()
	if q.BaseEndpoint == nil || *q.BaseEndpoint != "http://127.0.0.1:4566" {
		t.Errorf("sqs endpoint %v, want AWS_ENDPOINT_URL", q.BaseEndpoint)
	}

	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	cfg, err = awsclient.FromLambdaEnv(lambdaEnv(map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true: endpoint %v", *cfg.BaseEndpoint)
	}
}
