// Package testenv gives integration tests clients for the local emulators that `make test`
// starts (see infra/devstack), and names and queues that do not collide with other tests.
//
// The endpoints come from RESETNOTIFY_DYNAMODB_ENDPOINT and RESETNOTIFY_SQS_ENDPOINT. When one
// is unset a test skips with a message saying how to run it, so `go test ./...` always builds
// and vets the integration tests; under `make test` RESETNOTIFY_EMULATORS=required turns that
// skip into a failure. An endpoint that is set but does not answer is always a failure.
//
// All tests share one emulator of each kind, and packages run in parallel, so every table and
// queue a test creates must have a name from UniqueName.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/s3client"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/streamsclient"
)

// probeTimeout bounds the request that checks an endpoint answers.
const probeTimeout = 10 * time.Second

// DynamoDB returns a DynamoDB client for DynamoDB Local at RESETNOTIFY_DYNAMODB_ENDPOINT,
// skipping or failing t as the package documentation describes.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	client := awsclient.DynamoDB(Config(), endpoint(t, emulator.EnvDynamoDBEndpoint))
	probe(t, "DynamoDB", func(ctx context.Context) error {
		_, err := client.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
		return err
	})
	return client
}

// Streams returns a DynamoDB Streams client for DynamoDB Local at
// RESETNOTIFY_DYNAMODB_ENDPOINT, skipping or failing t as the package documentation describes.
func Streams(t testing.TB) *dynamodbstreams.Client {
	t.Helper()
	client := streamsclient.New(Config(), endpoint(t, emulator.EnvDynamoDBEndpoint))
	probe(t, "DynamoDB Streams", func(ctx context.Context) error {
		_, err := client.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(1)})
		return err
	})
	return client
}

// SQS returns an SQS client for moto_server at RESETNOTIFY_SQS_ENDPOINT, skipping or failing t
// as the package documentation describes.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	client := awsclient.SQS(Config(), endpoint(t, emulator.EnvSQSEndpoint))
	probe(t, "SQS", func(ctx context.Context) error {
		_, err := client.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)})
		return err
	})
	return client
}

// S3 returns an S3 client for moto_server at RESETNOTIFY_SQS_ENDPOINT (moto serves every
// service on one port), skipping or failing t as for SQS.
func S3(t testing.TB) *s3.Client {
	t.Helper()
	client := s3client.New(Config(), endpoint(t, emulator.EnvSQSEndpoint))
	probe(t, "S3", func(ctx context.Context) error {
		_, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
		return err
	})
	return client
}

// KMS returns a KMS client for moto_server at RESETNOTIFY_SQS_ENDPOINT (moto serves every
// service on one port), skipping or failing t as for SQS.
func KMS(t testing.TB) *kms.Client {
	t.Helper()
	at := endpoint(t, emulator.EnvSQSEndpoint)
	client := kms.NewFromConfig(Config(), func(o *kms.Options) { o.BaseEndpoint = aws.String(at) })
	probe(t, "KMS", func(ctx context.Context) error {
		_, err := client.ListKeys(ctx, &kms.ListKeysInput{Limit: aws.Int32(1)})
		return err
	})
	return client
}

// LockedBucket creates a bucket called name with Object Lock in compliance mode and a default
// retention of days, as template.yaml's AuditArchiveBucket, and returns its name. It is left
// behind when the test ends: its objects are locked.
func LockedBucket(t testing.TB, client *s3.Client, name string, days int32) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	_, err := client.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String(name),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{Mode: s3types.ObjectLockRetentionModeCompliance, Days: aws.Int32(days)}}}})
	if err != nil {
		t.Fatalf("lock bucket %s: %v", name, err)
	}
	return name
}

// Config returns the aws.Config the test clients use: AWS_REGION or us-east-1, and static
// local credentials. It reads no shared AWS config files, so a developer's profile cannot
// point a test at a real account.
func Config() aws.Config {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = emulator.Region
	}
	return aws.Config{Region: region, Credentials: emulator.LocalCredentials()}
}

// maxNameLen leaves room for a ".fifo" suffix within SQS's 80-character limit on queue names;
// DynamoDB allows 255.
const maxNameLen = 75

// UniqueName returns a table or queue name that starts with prefix, includes t's name and ends
// with a random suffix. It holds only letters, digits, '-' and '_', which both DynamoDB and SQS
// accept, and is at most 75 characters long, so ".fifo" may be appended.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("testenv.UniqueName: %v", err)
	}
	suffix := hex.EncodeToString(b[:])
	name := sanitize(prefix) + "-" + sanitize(t.Name())
	if room := maxNameLen - len(suffix) - 1; len(name) > room {
		name = name[:room]
	}
	return name + "-" + suffix
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		default:
			return '_'
		}
	}, s)
}

// Queue creates an SQS queue called name and deletes it when the test ends, returning its URL.
func Queue(t testing.TB, client *sqs.Client, name string) string {
	t.Helper()
	return QueueWithAttributes(t, client, name, nil)
}

// QueueWithAttributes is Queue with queue attributes, e.g. VisibilityTimeout or RedrivePolicy.
func QueueWithAttributes(t testing.TB, client *sqs.Client, name string, attributes map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attributes})
	if err != nil {
		t.Fatalf("testenv.Queue create %s: %v", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		var gone *sqstypes.QueueDoesNotExist
		if err != nil && !errors.As(err, &gone) {
			t.Errorf("testenv.Queue delete %s: %v", name, err)
		}
	})
	return url
}

// endpoint returns the value of the environment variable key, or ends the test.
func endpoint(t testing.TB, key string) string {
	t.Helper()
	value := os.Getenv(key)
	switch decide(value, os.Getenv(emulator.EnvEmulators)) {
	case fail:
		t.Fatalf("%s not set although %s=%s: run the tests under `go run ./infra/devstack exec -- go test ...` (as `make test` does)",
			key, emulator.EnvEmulators, emulator.EmulatorsRequired)
	case skip:
		t.Skipf("integration test: %s not set; run `make test` to start DynamoDB Local and moto", key)
	}
	return value
}

// decision is what a test does about an endpoint variable.
type decision int

const (
	use decision = iota
	skip
	fail
)

// decide returns what a test does given an endpoint variable's value and the value of
// RESETNOTIFY_EMULATORS.
func decide(endpoint, emulators string) decision {
	switch {
	case endpoint != "":
		return use
	case emulators == emulator.EmulatorsRequired:
		return fail
	default:
		return skip
	}
}

// probe fails t unless call succeeds: an endpoint that is set must answer.
func probe(t testing.TB, service string, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if err := call(ctx); err != nil {
		t.Fatal(fmt.Errorf("testenv: %s emulator does not answer: %w", service, err))
	}
}

// Tool returns the path of rel (e.g. "venv/bin/python") under the .tools/ directory that
// `make tools` fills, found from the test's working directory upwards. When it is missing the
// test skips, or fails under RESETNOTIFY_EMULATORS=required, as for an endpoint.
func Tool(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, ".tools", rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	switch decide("", os.Getenv(emulator.EnvEmulators)) {
	case fail:
		t.Fatalf(".tools/%s not found although %s=%s: run `make tools`", rel, emulator.EnvEmulators, emulator.EmulatorsRequired)
	default:
		t.Skipf("needs .tools/%s; run `make tools` (make test does)", rel)
	}
	return ""
}
