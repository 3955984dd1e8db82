package testenv

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/resetnotify/resetnotify/infra/emulator"
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name      string
		endpoint  string
		emulators string
		want      decision
	}{
		{"set", "http://127.0.0.1:8000", "", use},
		{"set and required", "http://127.0.0.1:8000", "required", use},
		{"unset", "", "", skip},
		{"unset, other mode", "", "optional", skip},
		{"unset and required", "", "required", fail},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.endpoint, tc.emulators); got != tc.want {
				t.Errorf("decide(%q, %q) = %v, want %v", tc.endpoint, tc.emulators, got, tc.want)
			}
		})
	}
}

// recorder is a testing.TB that records how a helper ended the test instead of ending t.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

// runHelper calls f with a recorder on its own goroutine, as testing does, so that the
// recorder's Skip and Fatal can end it.
func runHelper(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestClientsWithoutEndpoint(t *testing.T) {
	helpers := map[string]func(testing.TB){
		"DynamoDB": func(tb testing.TB) { DynamoDB(tb) },
		"Streams":  func(tb testing.TB) { Streams(tb) },
		"SQS":      func(tb testing.TB) { SQS(tb) },
	}
	for name, helper := range helpers {
		t.Run(name+"/skips", func(t *testing.T) {
			t.Setenv(emulator.EnvDynamoDBEndpoint, "")
			t.Setenv(emulator.EnvSQSEndpoint, "")
			t.Setenv(emulator.EnvEmulators, "")
			r := runHelper(t, helper)
			if !r.skipped || !strings.Contains(r.msg, "run `make test` to start DynamoDB Local and moto") {
				t.Errorf("skipped = %v, failed = %v, msg = %q; want a skip saying how to run", r.skipped, r.failed, r.msg)
			}
		})
		t.Run(name+"/fails when required", func(t *testing.T) {
			t.Setenv(emulator.EnvDynamoDBEndpoint, "")
			t.Setenv(emulator.EnvSQSEndpoint, "")
			t.Setenv(emulator.EnvEmulators, emulator.EmulatorsRequired)
			r := runHelper(t, helper)
			if !r.failed || !strings.Contains(r.msg, "not set although RESETNOTIFY_EMULATORS=required") {
				t.Errorf("skipped = %v, failed = %v, msg = %q; want a failure", r.skipped, r.failed, r.msg)
			}
		})
		t.Run(name+"/fails when unreachable", func(t *testing.T) {
			dead := deadEndpoint(t)
			t.Setenv(emulator.EnvDynamoDBEndpoint, dead)
			t.Setenv(emulator.EnvSQSEndpoint, dead)
			t.Setenv(emulator.EnvEmulators, "")
			r := runHelper(t, helper)
			if !r.failed || !strings.Contains(r.msg, "emulator does not answer") {
				t.Errorf("skipped = %v, failed = %v, msg = %q; want a failure", r.skipped, r.failed, r.msg)
			}
		})
	}
}

// deadEndpoint returns the URL of a port on 127.0.0.1 that nothing listens on.
func deadEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{3,75}$`)
	seen := map[string]bool{}
	for range 100 {
		name := UniqueName(t, "notifications")
		if !valid.MatchString(name) {
			t.Fatalf("UniqueName() = %q, not a valid table and queue name", name)
		}
		if !strings.HasPrefix(name, "notifications-TestUniqueName-") {
			t.Fatalf("UniqueName() = %q, want prefix and test name", name)
		}
		if seen[name] {
			t.Fatalf("UniqueName() returned %q twice", name)
		}
		seen[name] = true
	}
	t.Run(strings.Repeat("a very long sub-test name/", 10), func(t *testing.T) {
		if name := UniqueName(t, "dlq"); !valid.MatchString(name) {
			t.Errorf("UniqueName() = %q, not a valid table and queue name", name)
		}
	})
}

func TestQueue(t *testing.T) {
	client := SQS(t)
	var url string
	t.Run("create", func(t *testing.T) {
		url = Queue(t, client, UniqueName(t, "queue"))
		_, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("hello")})
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "hello" {
			t.Fatalf("ReceiveMessage = %+v, %v; want the message sent", out, err)
		}
	})
	_, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)})
	var gone *sqstypes.QueueDoesNotExist
	if !errors.As(err, &gone) {
		t.Errorf("after the test, GetQueueAttributes(%s) error = %v, want QueueDoesNotExist", url, err)
	}
}

func TestDynamoDBAndStreams(t *testing.T) {
	// The probes inside the helpers are the test: each client reached its emulator.
	DynamoDB(t)
	Streams(t)
}
