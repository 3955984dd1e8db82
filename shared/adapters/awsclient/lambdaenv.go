package awsclient

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// FromLambdaEnv builds an aws.Config from the Lambda execution environment alone, read through
// getenv (os.Getenv in Lambda): the region from AWS_REGION (else AWS_DEFAULT_REGION), static
// credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, and
// endpoints from AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>.
//
// Static credentials are right in Lambda: the service puts the execution role's credentials in
// the environment when it creates the execution environment, and they are fixed for that
// environment's life (the SDK's own environment provider also reads them once and never
// refreshes them). Using them directly keeps the default credential chain (STS, SSO, SSO OIDC,
// IMDS, shared files) out of every bootstrap, which is most of its size and part of its init.
//
// The endpoints follow the SDK's documented service-specific endpoint rules: a service's
// AWS_ENDPOINT_URL_<SERVICE> (its SDK ID in upper case with spaces as underscores, e.g.
// DYNAMODB, DYNAMODB_STREAMS, SQS, SSM, KMS) wins over AWS_ENDPOINT_URL, which applies to
// every other service. AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true ignores both. The SDK's
// default retryer and HTTP client are kept (the Config leaves them unset).
//
// A missing region or a missing key pair is an error naming the variable, never its value.
func FromLambdaEnv(getenv func(string) string) (aws.Config, error) {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, errors.New("awsclient.from_lambda_env: AWS_REGION is not set")
	}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return aws.Config{}, errors.New("awsclient.from_lambda_env: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set")
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))),
	}
	if strings.EqualFold(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		return cfg, nil
	}
	if u := getenv("AWS_ENDPOINT_URL"); u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	cfg.ConfigSources = []any{serviceEndpoints{getenv: getenv}}
	return cfg, nil
}

// serviceEndpoints is the config source the SDK's service clients ask for a service's own
// endpoint (the same method the SDK's environment config has).
type serviceEndpoints struct {
	getenv func(string) string
}

// GetServiceBaseEndpoint returns AWS_ENDPOINT_URL_<SERVICE> for the service with SDK ID sdkID.
func (s serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	u := s.getenv("AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return u, u != "", nil
}
