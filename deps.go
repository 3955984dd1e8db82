//go:build tools

// Package resetnotify pins the modules that the functions, tools and tests share, so that
// helpers working in parallel never race on go.mod. It is never built.
package resetnotify

import (
	_ "github.com/aws/aws-lambda-go/events"
	_ "github.com/aws/aws-lambda-go/lambda"
	_ "github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/credentials"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	_ "github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	_ "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	_ "github.com/aws/aws-sdk-go-v2/service/kms"
	_ "github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	_ "github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "github.com/aws/aws-sdk-go-v2/service/ssm"
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/oklog/ulid/v2"
	_ "gopkg.in/yaml.v3"
)
