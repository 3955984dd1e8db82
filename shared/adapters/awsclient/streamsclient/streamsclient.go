// Package streamsclient builds the DynamoDB Streams client, apart from package awsclient so
// that only what reads a stream links the Streams SDK: a package's init runs (and its schemas
// and endpoint tables are in the bootstrap) in every function that imports it, whether it
// calls it or not.
package streamsclient

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// New returns a DynamoDB Streams client for cfg. A non-empty endpoint overrides the endpoint
// the SDK would resolve; DynamoDB Local serves streams on its DynamoDB endpoint.
func New(cfg aws.Config, endpoint string) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}
