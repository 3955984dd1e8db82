// Package awsclient builds the project's AWS service clients from an aws.Config (the DynamoDB
// Streams client is in streamsclient, linked only by what reads a stream), so that a
// function in AWS, a test against the local emulators and the local stack driver all get the
// same client settings.
//
// In AWS the endpoint argument is empty and the SDK resolves the endpoint as usual, including
// the standard AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> variables when the config came
// from config.LoadDefaultConfig. Locally the endpoint argument (or one of those variables)
// points at DynamoDB Local or moto_server.
package awsclient

import (
	"net"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DynamoDB returns a DynamoDB client for cfg. A non-empty endpoint overrides the endpoint the
// SDK would resolve. When the endpoint in effect is local (see IsLocalEndpoint), response
// checksum validation is disabled: DynamoDB Local omits the CRC32 header on error responses,
// which the SDK would otherwise report in place of the real error.
func DynamoDB(cfg aws.Config, endpoint string) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if o.BaseEndpoint != nil && IsLocalEndpoint(*o.BaseEndpoint) {
			o.DisableValidateResponseChecksum = true
		}
	})
}

// SQS returns an SQS client for cfg. A non-empty endpoint overrides the endpoint the SDK would
// resolve.
func SQS(cfg aws.Config, endpoint string) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// IsLocalEndpoint reports whether endpoint is an emulator rather than an AWS service: its host
// is a loopback address or "localhost", or it uses plain HTTP, which no AWS endpoint accepts.
func IsLocalEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == "http" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
