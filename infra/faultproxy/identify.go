package faultproxy

import (
	"net/http"
	"net/url"
	"strings"
)

// call is an AWS request as the proxy sees it.
type call struct {
	service   string
	operation string
	proto     protocol
	body      []byte
}

// protocol is the wire protocol of a request, which decides the shape of an error answer.
type protocol int

const (
	protoRESTJSON protocol = iota // Lambda, API Gateway, and anything unknown
	protoJSON10                   // DynamoDB, DynamoDB Streams, SQS (JSON)
	protoJSON11                   // KMS, SSM, CloudWatch Logs, EventBridge
	protoQuery                    // SQS (query), STS, CloudWatch (query)
	protoRESTXML                  // S3
)

// targetServices maps X-Amz-Target prefixes to services, for requests with no SigV4 scope.
var targetServices = map[string]string{
	"DynamoDB_20120810":        "dynamodb",
	"DynamoDBStreams_20120810": "dynamodbstreams",
	"AmazonSQS":                "sqs",
	"TrentService":             "kms",
	"AmazonSSM":                "ssm",
	"Logs_20140328":            "logs",
	"AWSEvents":                "events",
}

// identify names the service and operation of r, whose body is body: the service from the
// SigV4 credential scope (Authorization header or X-Amz-Credential query parameter), the
// operation from X-Amz-Target (JSON protocols), from Action (query protocol, in the form body
// or the URL), or, for S3, from the method and path.
func identify(r *http.Request, body []byte) call {
	c := call{service: signingService(r), body: body}
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, op, _ := strings.Cut(t, ".")
		c.operation = op
		if s, ok := targetServices[prefix]; ok && (c.service == "" || s == "dynamodbstreams") {
			c.service = s
		}
		c.proto = protoJSON11
		if strings.Contains(r.Header.Get("Content-Type"), "json-1.0") || c.service == "dynamodb" || c.service == "dynamodbstreams" || c.service == "sqs" {
			c.proto = protoJSON10
		}
		return c
	}
	if a := action(r, body); a != "" {
		c.operation, c.proto = a, protoQuery
		return c
	}
	if c.service == "s3" {
		c.proto, c.operation = protoRESTXML, s3Operation(r)
		return c
	}
	c.operation = r.Method
	return c
}

// signingService returns the service of the request's SigV4 credential scope, or "".
func signingService(r *http.Request) string {
	cred := ""
	if auth := r.Header.Get("Authorization"); auth != "" {
		if _, after, ok := strings.Cut(auth, "Credential="); ok {
			cred, _, _ = strings.Cut(after, ",")
		}
	} else {
		cred = r.URL.Query().Get("X-Amz-Credential")
	}
	// AKID/date/region/service/aws4_request
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) == 5 {
		return parts[3]
	}
	return ""
}

// action returns the query protocol's Action, from a form body or the URL.
func action(r *http.Request, body []byte) string {
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if v, err := url.ParseQuery(string(body)); err == nil {
			return v.Get("Action")
		}
	}
	return ""
}

// s3Operation names the S3 operations the stack uses; any other request is named by its method.
func s3Operation(r *http.Request) string {
	path := strings.Trim(r.URL.Path, "/")
	_, key, hasKey := strings.Cut(path, "/")
	hasKey = hasKey && key != ""
	q := r.URL.Query()
	switch {
	case hasKey && r.Method == http.MethodPut:
		return "PutObject"
	case hasKey && r.Method == http.MethodGet:
		return "GetObject"
	case hasKey && r.Method == http.MethodHead:
		return "HeadObject"
	case hasKey && r.Method == http.MethodDelete:
		return "DeleteObject"
	case !hasKey && r.Method == http.MethodGet && q.Get("list-type") == "2":
		return "ListObjectsV2"
	}
	return r.Method
}
