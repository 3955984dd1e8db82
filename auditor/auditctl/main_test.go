package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/auditlog"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name.golden, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// testApp returns an app reading db's table audit, with the clock stopped at now.
func testApp(db auditlog.QueryAPI, table string, now time.Time) (*app, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &app{
		stdout: &stdout, stderr: &stderr,
		getenv: func(k string) string {
			if k == envAuditTable {
				return table
			}
			return ""
		},
		now:      func() time.Time { return now },
		newDB:    func(context.Context, string) (auditlog.QueryAPI, error) { return db, nil },
		newKMS:   func(context.Context) (auditor.PublicKeyAPI, error) { return nil, errors.New("no KMS in tests") },
		readFile: os.ReadFile,
		writeFile: func(name string, data []byte) error {
			return os.WriteFile(name, data, 0o600)
		},
	}, &stdout, &stderr
}

// scenarioEnd is the clock of the CLI tests: the day after the standard scenario.
var scenarioEnd = audittest.ScenarioStart.Add(24 * time.Hour)

// standardEnv runs the standard scenario and the audit handler over its stream.
func standardEnv(t *testing.T) *audittest.Env {
	t.Helper()
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	s.Standard(t)
	env.Replay(t, "req-golden", env.ReadStream(t, audittest.StandardTransitions))
	env.CloseDigests(t)
	return env
}

// publicKeyFile writes env's digest public key to a file and returns its path.
func publicKeyFile(t *testing.T, env *audittest.Env) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "digest-public.pem")
	if err := os.WriteFile(path, env.PublicKeyPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGolden runs every command against a table filled by the standard scenario.
func TestGolden(t *testing.T) {
	env := standardEnv(t)
	key := publicKeyFile(t, env)
	tests := []struct {
		name string
		args []string
		err  error
	}{
		{"timeline-unknown-table", []string{"timeline", "--event-id", "evt-unknown"}, nil},
		{"timeline-unknown-json", []string{"timeline", "--event-id", "evt-unknown", "--format", "json"}, nil},
		{"timeline-unknown-jsonl", []string{"timeline", "--event-id", "evt-unknown", "--format", "jsonl"}, nil},
		{"timeline-unknown-csv", []string{"timeline", "--event-id", "evt-unknown", "--format", "csv"}, nil},
		{"timeline-two-table", []string{"timeline", "--event-id", "evt-two"}, nil},
		{"export-day-csv", []string{"export", "--from", "2030-03-01", "--to", "2030-03-02", "--format", "csv"}, nil},
		{"export-window-jsonl", []string{"export", "--from", "2030-03-01T09:00:05Z", "--to", "2030-03-01T09:01:00Z"}, nil},
		{"export-empty-json", []string{"export", "--from", "2030-02-01", "--to", "2030-02-03", "--format", "json"}, nil},
		{"verify-event", []string{"verify", "--event-id", "evt-retry"}, nil},
		{"verify-range-json", []string{"verify", "--from", "2030-03-01", "--to", "2030-03-01T09:31:00Z", "--public-key", key, "--format", "json"}, nil},
		{"evidence-delivered", []string{"evidence", "--event-id", "evt-delivered"}, nil},
		{"evidence-unknown", []string{"evidence", "--event-id", "evt-unknown"}, nil},
		{"evidence-retry", []string{"evidence", "--event-id", "evt-retry"}, nil},
		{"evidence-expired", []string{"evidence", "--event-id", "evt-expired"}, nil},
		{"evidence-late", []string{"evidence", "--event-id", "evt-late"}, nil},
		{"evidence-cancelled", []string{"evidence", "--event-id", "evt-cancelled"}, nil},
		{"evidence-two", []string{"evidence", "--event-id", "evt-two"}, nil},
		{"evidence-two-json", []string{"evidence", "--event-id", "evt-two", "--format", "json"}, nil},
		{"evidence-open", []string{"evidence", "--event-id", "evt-open"}, nil},
		{"margin-table", []string{"margin", "--since", "1d"}, nil},
		{"margin-json", []string{"margin", "--since", "2030-03-01", "--until", "2030-03-02", "--format", "json"}, nil},
		{"margin-csv", []string{"margin", "--since", "2030-03-01", "--until", "2030-03-02", "--format", "csv"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, stdout, stderr := testApp(env.DB, env.Names.Audit, scenarioEnd)
			err := a.run(context.Background(), tc.args)
			if !errors.Is(err, tc.err) {
				t.Fatalf("run %v: %v (stderr %q)", tc.args, err, stderr)
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %q", stderr)
			}
			golden(t, tc.name, stdout.Bytes())
		})
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		err    error
		stderr string
	}{
		{"no command", nil, errUsage, "Usage:"},
		{"unknown command", []string{"delete"}, errUsage, `unknown command "delete"`},
		{"help", []string{"--help"}, nil, ""},
		{"command help", []string{"export", "--help"}, nil, ""},
		{"missing event", []string{"timeline"}, errUsage, "--event-id is required"},
		{"bad format", []string{"evidence", "--event-id", "e", "--format", "csv"}, errUsage, "--format must be one of table, json"},
		{"verify needs one scope", []string{"verify", "--event-id", "e", "--from", "2030-01-01", "--to", "2030-01-02"}, errUsage, "or --event-id"},
		{"verify half range", []string{"verify", "--from", "2030-01-01"}, errUsage, "or --event-id"},
		{"verify input and event", []string{"verify", "--input", "f", "--event-id", "e"}, errUsage, "not with --event-id"},
		{"verify input needs the range", []string{"verify", "--input", "f"}, errUsage, "give --input with --from and --to"},
		{"verify input half range", []string{"verify", "--input", "f", "--from", "2030-01-01"}, errUsage, "give --input with --from and --to"},
		{"verify proof alone", []string{"verify", "--proof", "p.json", "--event-id", "e"}, errUsage, "give --proof alone"},
		{"verify proof needs a key", []string{"verify", "--proof", "p.json"}, errUsage, "public key is needed"},
		{"verify range needs a key", []string{"verify", "--from", "2030-01-01", "--to", "2030-01-02"}, errUsage, "public key is needed"},
		{"public key needs a source", []string{"public-key"}, errUsage, "give --key-id"},
		{"export bad time", []string{"export", "--from", "yesterday", "--to", "2030-01-02"}, errUsage, "--from must be an RFC 3339 time"},
		{"export reversed", []string{"export", "--from", "2030-01-02", "--to", "2030-01-01"}, errUsage, "--from must be before --to"},
		{"margin bad since", []string{"margin", "--since", "-3d"}, errUsage, "or a duration"},
		{"stray argument", []string{"timeline", "--event-id", "e", "extra"}, errUsage, `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, stdout, stderr := testApp(nil, "audit", scenarioEnd)
			err := a.run(context.Background(), tc.args)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.stderr)
			}
			if tc.err == nil && !strings.Contains(stdout.String(), "auditctl") {
				t.Errorf("help on stdout: %q", stdout)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	var stderr bytes.Buffer
	for _, tc := range []struct {
		err  error
		want int
	}{{nil, 0}, {errUsage, 2}, {errVerifyFailed, 1}, {errors.New("boom"), 1}} {
		if got := exitCode(tc.err, &stderr); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if stderr.String() != "auditctl: boom\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}
