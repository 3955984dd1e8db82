// Package s3client builds the S3 client, apart from package awsclient so that only what
// reads or writes the audit archive (the digest function, the auditor's tools) links the S3
// SDK: a package's init runs, and its schemas and endpoint tables are in the bootstrap, in
// every function that imports it, whether it calls it or not.
package s3client

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
)

// New returns an S3 client for cfg. A non-empty endpoint overrides the endpoint the SDK would
// resolve; an emulator's endpoint (awsclient.IsLocalEndpoint) is addressed path-style, since
// its buckets have no DNS names.
func New(cfg aws.Config, endpoint string) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if o.BaseEndpoint != nil && awsclient.IsLocalEndpoint(*o.BaseEndpoint) {
			o.UsePathStyle = true
		}
	})
}
