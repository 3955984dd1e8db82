// Package emulator starts and stops the local AWS emulators the project is tested against:
// DynamoDB Local (AWS's own engine, which also serves DynamoDB Streams) and moto_server (SQS).
// Both are installed into the repository's .tools folder by `make tools`.
//
// Each emulator gets a free port and is reached at 127.0.0.1. It runs in its own process group,
// so that a Ctrl-C in the terminal reaches the command under test and not the emulators, and
// writes its output to a log file whose tail is quoted when it fails to start. moto_server binds
// 127.0.0.1 only; DynamoDB Local has no option to choose its bind address and listens on all
// interfaces, which is acceptable for an in-memory database of test data.
//
// A caller starts a Stack, hands its endpoints to clients (Environ gives them as environment
// variables) and calls Stop on every exit path. The package runs on Unix systems only.
package emulator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
)

// Names of the environment variables through which a Stack's endpoints reach tests and tools.
const (
	// EnvDynamoDBEndpoint holds the DynamoDB Local endpoint, which also serves DynamoDB Streams.
	EnvDynamoDBEndpoint = "RESETNOTIFY_DYNAMODB_ENDPOINT"
	// EnvSQSEndpoint holds the moto_server endpoint used for SQS.
	EnvSQSEndpoint = "RESETNOTIFY_SQS_ENDPOINT"
	// EnvEmulators set to EmulatorsRequired makes integration tests fail, instead of skip, when
	// an endpoint variable is missing.
	EnvEmulators = "RESETNOTIFY_EMULATORS"
	// EmulatorsRequired is the value of EnvEmulators that makes the emulators mandatory.
	EmulatorsRequired = "required"
)

// javaHeap returns set, else $EnvJavaHeap, else DefaultJavaHeap.
func javaHeap(set string, getenv func(string) string) string {
	return cmp.Or(set, getenv(EnvJavaHeap), DefaultJavaHeap)
}

// Region is the region the local stack's clients use when none is configured.
const Region = "us-east-1"

// Defaults for Options fields left at their zero value.
const (
	DefaultReadyTimeout = 60 * time.Second
	DefaultJavaHeap     = "256m"
	// EnvJavaHeap overrides DefaultJavaHeap for every Start that leaves JavaHeap empty
	// (make bench sets it).
	EnvJavaHeap = "RESETNOTIFY_DYNAMODB_JAVA_HEAP"
)

// Options configures Start. The zero value is ready to use from anywhere inside the repository.
type Options struct {
	// ToolsDir is the folder `make tools` installs into. Empty means the .tools folder beside
	// the go.mod found by walking up from the working directory.
	ToolsDir string
	// LogDir receives dynamodb-local.log and moto.log and is kept after Stop. Empty means a new
	// temporary folder that Stop removes, unless Start failed.
	LogDir string
	// ReadyTimeout bounds the wait for each emulator to answer. Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// JavaHeap is DynamoDB Local's maximum heap (java -Xmx). Empty means $EnvJavaHeap, else
	// DefaultJavaHeap; the tables live in SQLite's native memory, so the heap need not grow
	// with the data, except for a query over one very large index partition (make bench's
	// 100,000-entry digest period fails with an InternalFailure at 256m and passes at 1g).
	JavaHeap string
}

// Stack is a running pair of emulators. Its methods are safe for concurrent use.
type Stack struct {
	// DynamoDBEndpoint is DynamoDB Local's URL, e.g. http://127.0.0.1:41234. It also serves
	// DynamoDB Streams.
	DynamoDBEndpoint string
	// SQSEndpoint is moto_server's URL.
	SQSEndpoint string
	// LogDir holds the emulators' log files.
	LogDir string

	procs      []*process
	removeLogs bool
	stopOnce   sync.Once
	stopErr    error
}

// Start starts DynamoDB Local and moto_server and returns once both answer a request, or
// returns an error naming the emulator that failed together with the tail of its log. On error
// nothing is left running, and the log folder is kept. Cancelling ctx aborts the start; it does not stop a started Stack.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	opts.JavaHeap = javaHeap(opts.JavaHeap, os.Getenv)
	if opts.ToolsDir == "" {
		dir, err := FindToolsDir()
		if err != nil {
			return nil, fmt.Errorf("emulator.start: %w", err)
		}
		opts.ToolsDir = dir
	}
	dynamoDir := filepath.Join(opts.ToolsDir, "dynamodb-local")
	jar := filepath.Join(dynamoDir, "DynamoDBLocal.jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("emulator.start: DynamoDB Local not installed at %s: run make tools", dynamoDir)
	}
	motoServer := filepath.Join(opts.ToolsDir, "venv", "bin", "moto_server")
	if _, err := os.Stat(motoServer); err != nil {
		return nil, fmt.Errorf("emulator.start: moto_server not installed at %s: run make tools", motoServer)
	}

	s := &Stack{LogDir: opts.LogDir}
	if s.LogDir == "" {
		dir, err := os.MkdirTemp("", "resetnotify-emulators-")
		if err != nil {
			return nil, fmt.Errorf("emulator.start: log dir: %w", err)
		}
		s.LogDir, s.removeLogs = dir, true
	} else if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("emulator.start: log dir: %w", err)
	}

	if err := s.start(ctx, opts, dynamoDir, jar, motoServer); err != nil {
		// Keep the logs the error points at.
		s.removeLogs = false
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context, opts Options, dynamoDir, jar, motoServer string) error {
	dynamoPort, err := freePort()
	if err != nil {
		return fmt.Errorf("emulator.start dynamodb: %w", err)
	}
	dynamo, err := startProcess("DynamoDB Local", filepath.Join(s.LogDir, "dynamodb-local.log"), s.LogDir,
		"java",
		"-Xmx"+opts.JavaHeap,
		"-Djava.library.path="+filepath.Join(dynamoDir, "DynamoDBLocal_lib"),
		"-jar", jar,
		// -sharedDb: every credential and region sees the same tables. -disableTelemetry:
		// nothing about local runs should try to leave the machine.
		"-inMemory", "-sharedDb", "-disableTelemetry",
		"-port", fmt.Sprint(dynamoPort))
	if err != nil {
		return fmt.Errorf("emulator.start dynamodb: %w", err)
	}
	s.procs = append(s.procs, dynamo)
	s.DynamoDBEndpoint = fmt.Sprintf("http://127.0.0.1:%d", dynamoPort)

	sqsPort, err := freePort()
	if err != nil {
		return fmt.Errorf("emulator.start sqs: %w", err)
	}
	moto, err := startProcess("moto_server", filepath.Join(s.LogDir, "moto.log"), s.LogDir,
		motoServer, "-H", "127.0.0.1", "-p", fmt.Sprint(sqsPort))
	if err != nil {
		return fmt.Errorf("emulator.start sqs: %w", err)
	}
	s.procs = append(s.procs, moto)
	s.SQSEndpoint = fmt.Sprintf("http://127.0.0.1:%d", sqsPort)

	// Both processes are already starting; waiting for one after the other costs the slower one.
	cfg := probeConfig()
	ddb := awsclient.DynamoDB(cfg, s.DynamoDBEndpoint)
	err = dynamo.waitReady(ctx, opts.ReadyTimeout, func(ctx context.Context) error {
		_, err := ddb.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)})
		return err
	})
	if err != nil {
		return fmt.Errorf("emulator.start dynamodb: %w", err)
	}
	sqsClient := awsclient.SQS(cfg, s.SQSEndpoint)
	err = moto.waitReady(ctx, opts.ReadyTimeout, func(ctx context.Context) error {
		_, err := sqsClient.ListQueues(ctx, &sqs.ListQueuesInput{})
		return err
	})
	if err != nil {
		return fmt.Errorf("emulator.start sqs: %w", err)
	}
	return nil
}

// probeConfig is the configuration of the readiness probes: local credentials, and no retries,
// since the probe loop itself retries.
func probeConfig() aws.Config {
	return aws.Config{
		Region:           Region,
		Credentials:      LocalCredentials(),
		RetryMaxAttempts: 1,
	}
}

// LocalCredentials returns the static credentials used against the emulators. DynamoDB Local
// runs with -sharedDb, so every credential sees the same tables.
func LocalCredentials() aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local", Source: "emulator"}, nil
	})
}

// Stop stops both emulators, first with SIGTERM and then, for one that lingers, SIGKILL to its
// whole process group, and waits for them to exit. It removes the log folder if Start created
// it. Calling Stop again returns the first call's result.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		for _, p := range s.procs {
			if err := p.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.removeLogs {
			if err := os.RemoveAll(s.LogDir); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.stopErr = fmt.Errorf("emulator.stop: %w", err)
		}
	})
	return s.stopErr
}

// Environ returns base (a list of KEY=value strings, as from os.Environ) with the Stack's
// endpoints set, both as the project's RESETNOTIFY_* variables and as the SDK's standard
// AWS_ENDPOINT_URL_* variables, and EnvEmulators set to EmulatorsRequired. A region and local
// credentials are added only where base does not set them.
func (s *Stack) Environ(base []string) []string {
	env := make([]string, 0, len(base)+10)
	set := make(map[string]bool, len(base))
	override := map[string]string{
		EnvDynamoDBEndpoint:                 s.DynamoDBEndpoint,
		EnvSQSEndpoint:                      s.SQSEndpoint,
		EnvEmulators:                        EmulatorsRequired,
		"AWS_ENDPOINT_URL_DYNAMODB":         s.DynamoDBEndpoint,
		"AWS_ENDPOINT_URL_DYNAMODB_STREAMS": s.DynamoDBEndpoint,
		"AWS_ENDPOINT_URL_SQS":              s.SQSEndpoint,
		// moto_server serves S3 on the same port (the audit archive's bucket, locally), and
		// KMS (the sealing key of the local stack).
		"AWS_ENDPOINT_URL_S3":  s.SQSEndpoint,
		"AWS_ENDPOINT_URL_KMS": s.SQSEndpoint,
	}
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := override[k]; ok {
			continue
		}
		set[k] = true
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(override)) {
		env = append(env, k+"="+override[k])
	}
	defaults := [][2]string{
		{"AWS_REGION", Region},
		{"AWS_ACCESS_KEY_ID", "local"},
		{"AWS_SECRET_ACCESS_KEY", "local"},
	}
	for _, d := range defaults {
		if !set[d[0]] {
			env = append(env, d[0]+"="+d[1])
		}
	}
	return env
}

// FindToolsDir returns the .tools folder beside the go.mod found by walking up from the
// working directory, whether or not it exists yet.
func FindToolsDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find tools dir: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".tools"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find tools dir: no go.mod above the working directory; run from inside the repository or set Options.ToolsDir")
		}
		dir = parent
	}
}
