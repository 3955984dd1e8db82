package awsclient_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/streamsclient"
)

func TestIsLocalEndpoint(t *testing.T) {
	cases := []struct {
		endpoint string
		want     bool
	}{
		{"http://127.0.0.1:8000", true},
		{"http://localhost:4566", true},
		{"https://localhost:4566", true},
		{"https://[::1]:8000", true},
		{"http://dynamodb-local:8000", true},
		{"https://dynamodb.us-east-1.amazonaws.com", false},
		{"https://vpce-0123.dynamodb.eu-west-1.vpce.amazonaws.com", false},
		{"", false},
		{"127.0.0.1:8000", false},
	}
	for _, tc := range cases {
		t.Run(tc.endpoint, func(t *testing.T) {
			if got := awsclient.IsLocalEndpoint(tc.endpoint); got != tc.want {
				t.Errorf("IsLocalEndpoint(%q) = %v, want %v", tc.endpoint, got, tc.want)
			}
		})
	}
}

func TestDynamoDBChecksumValidation(t *testing.T) {
	cases := []struct {
		name         string
		cfgEndpoint  *string
		endpoint     string
		wantDisabled bool
		wantEndpoint string
	}{
		{name: "aws", wantDisabled: false},
		{name: "argument local", endpoint: "http://127.0.0.1:8000", wantDisabled: true, wantEndpoint: "http://127.0.0.1:8000"},
		{name: "config local", cfgEndpoint: aws.String("http://localhost:8000"), wantDisabled: true, wantEndpoint: "http://localhost:8000"},
		{name: "argument wins", cfgEndpoint: aws.String("https://example.com"), endpoint: "http://127.0.0.1:1", wantDisabled: true, wantEndpoint: "http://127.0.0.1:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := aws.Config{Region: "us-east-1", BaseEndpoint: tc.cfgEndpoint}
			o := awsclient.DynamoDB(cfg, tc.endpoint).Options()
			if o.DisableValidateResponseChecksum != tc.wantDisabled {
				t.Errorf("DisableValidateResponseChecksum = %v, want %v", o.DisableValidateResponseChecksum, tc.wantDisabled)
			}
			if got := aws.ToString(o.BaseEndpoint); got != tc.wantEndpoint {
				t.Errorf("BaseEndpoint = %q, want %q", got, tc.wantEndpoint)
			}
		})
	}
}

// TestEndpointFromEnvironment checks the path a function in AWS takes: the endpoint comes from
// AWS_ENDPOINT_URL_<SERVICE> through config.LoadDefaultConfig, not from the argument.
func TestEndpointFromEnvironment(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8001")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "http://127.0.0.1:8002")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:8003")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ddb := awsclient.DynamoDB(cfg, "").Options()
	if got := aws.ToString(ddb.BaseEndpoint); got != "http://127.0.0.1:8001" || !ddb.DisableValidateResponseChecksum {
		t.Errorf("DynamoDB BaseEndpoint = %q, checksum validation disabled = %v", got, ddb.DisableValidateResponseChecksum)
	}
	if got := aws.ToString(streamsclient.New(cfg, "").Options().BaseEndpoint); got != "http://127.0.0.1:8002" {
		t.Errorf("Streams BaseEndpoint = %q", got)
	}
	if got := aws.ToString(awsclient.SQS(cfg, "").Options().BaseEndpoint); got != "http://127.0.0.1:8003" {
		t.Errorf("SQS BaseEndpoint = %q", got)
	}
}
