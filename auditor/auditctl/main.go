// Command auditctl is the auditor's CLI over the audit table: it prints the timeline of an
// event, exports a time range with its signed digests, verifies the digests and the hash
// chains (online, or offline from an export and the public key), writes a plain-language
// evidence report, prints the digests' public key, and recommends a safety margin from
// measured latencies. It only reads.
//
// Usage:
//
//	auditctl <command> [flags]
//
//	timeline --event-id E                 every transition of every notification of event E
//	export   --from T --to T              the digests and whole chains verify needs for [from, to)
//	verify   --from T --to T [--input F] | --event-id E | --proof F
//	                                      check digests (signature, chain, against the entries) and
//	                                      hash chains; exit 1 with a sentence per problem, exit 0
//	                                      with a warning when a digest is only late; --input checks
//	                                      an export for the range asked, --proof a proof file
//	evidence --event-id E [--proof F]     plain-language report of what happened and why, and
//	                                      whether verified signed digests cover it; --proof writes
//	                                      each entry's inclusion proof
//	public-key [--key-id K]               the digests' public key, PEM
//	margin   --since D [--until T]        accepted→delivered latency and a recommended safety margin
//
// Every command takes --table (default $AUDIT_TABLE, else resetnotify-audit) and --format
// (table, json, jsonl or csv; evidence and verify take table or json). The AWS region,
// credentials and endpoint come from the standard AWS environment variables and shared
// config, so AWS_ENDPOINT_URL_DYNAMODB points auditctl at DynamoDB Local; --endpoint-url
// overrides it. Times are RFC 3339 (2030-03-01T09:00:00Z) or a UTC date (2030-03-01);
// --since also takes a duration back from now (36h, 30d).
//
// Exit status: 0 on success, 1 when verify finds a problem or a command fails, 2 on a usage
// error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/resetnotify/resetnotify/auditor"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/s3client"
	"github.com/resetnotify/resetnotify/shared/auditlog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp().run(ctx, os.Args[1:])
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// newApp returns the CLI wired to the process: its streams, environment and clock, and a
// DynamoDB client from the standard AWS configuration.
func newApp() *app {
	return &app{
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		getenv:   os.Getenv,
		now:      time.Now,
		terminal: isTerminal(os.Stderr),
		newDB: func(ctx context.Context, endpoint string) (auditlog.QueryAPI, error) {
			cfg, err := awsconfig.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("aws config: %w", err)
			}
			return awsclient.DynamoDB(cfg, endpoint), nil
		},
		newKMS: func(ctx context.Context) (auditor.PublicKeyAPI, error) {
			cfg, err := awsconfig.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("aws config: %w", err)
			}
			return kms.NewFromConfig(cfg), nil
		},
		newS3: func(ctx context.Context) (auditor.ArchiveAPI, error) {
			cfg, err := awsconfig.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("aws config: %w", err)
			}
			return s3client.New(cfg, ""), nil
		},
		readFile: os.ReadFile,
		writeFile: func(name string, data []byte) error {
			return os.WriteFile(name, data, 0o644)
		},
	}
}

// errUsage marks an error in the command line; its message has been printed with the usage.
var errUsage = errors.New("usage")

// errVerifyFailed means verify found a broken or missing link; the report is printed.
var errVerifyFailed = errors.New("verification failed")

// exitCode maps run's error to the exit status, printing it unless already reported.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errVerifyFailed):
		return 1
	default:
		fmt.Fprintln(stderr, "auditctl:", err)
		return 1
	}
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
