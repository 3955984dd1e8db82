package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/resetnotify/resetnotify/infra/audittest"
)

// TestRedaction is the redaction proof of promise 4. The standard scenario submits known phone
// numbers, reset URLs and codes and drives them through every kind of ending; two records are
// then removed by TTL. After the real handler has audited the stream, the scanner reads every
// audit item and every line auditctl prints for every command in every format, and must find
// none of the submitted values, no E.164 number and no URL.
func TestRedaction(t *testing.T) {
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	s.Standard(t)
	env.ExpireNow(t, "evt-delivered:sms:password_reset", "evt-cancelled:sms:password_reset")
	// Two TTL updates that keep the version, and two removals.
	env.Replay(t, "req-redaction", env.ReadStream(t, audittest.StandardTransitions+4))

	// The scanner must be able to see a secret where one is: the notifications table holds them
	// in the test sealer's clear-text payload. Otherwise this test would prove nothing.
	if leaks := scanTable(t, env, env.Names.Notifications, s.Submitted); len(leaks) == 0 {
		t.Fatal("the scanner finds no secret in the notifications table; the proof would be vacuous")
	}

	items := env.ScanAudit(t)
	if len(items) != audittest.StandardTransitions+2 {
		t.Errorf("%d audit items, want %d", len(items), audittest.StandardTransitions+2)
	}
	for _, item := range items {
		if leaks := audittest.Leaks(audittest.ItemText(item), s.Submitted); len(leaks) > 0 {
			t.Errorf("audit item %s holds %v", audittest.ItemText(item)[:60], leaks)
		}
	}

	// Close the digests, so that evidence --proof writes real paths.
	env.CloseDigests(t)
	proofDir := t.TempDir()

	events := map[string]bool{}
	for _, k := range s.Keys {
		e, _, _ := strings.Cut(k, ":")
		events[e] = true
	}
	var runs [][]string
	for e := range events {
		for _, f := range []string{"table", "json", "jsonl", "csv"} {
			runs = append(runs, []string{"timeline", "--event-id", e, "--format", f})
		}
		for _, f := range []string{"table", "json"} {
			runs = append(runs,
				[]string{"evidence", "--event-id", e, "--format", f},
				[]string{"verify", "--event-id", e, "--format", f})
		}
		runs = append(runs, []string{"evidence", "--event-id", e, "--proof", filepath.Join(proofDir, e+".json")})
	}
	for _, f := range []string{"table", "json", "jsonl", "csv"} {
		runs = append(runs,
			[]string{"export", "--from", "2030-03-01", "--to", "2030-03-02", "--format", f},
			[]string{"margin", "--since", "2030-03-01", "--until", "2030-03-02", "--format", f})
	}
	// The purges happened now, not in the scenario's 2030: export today's entries too.
	today := newApp().now().UTC()
	runs = append(runs, []string{"export", "--from", today.AddDate(0, 0, -1).Format("2006-01-02"), "--to", today.AddDate(0, 0, 2).Format("2006-01-02"), "--format", "jsonl"})

	lines := 0
	for _, args := range runs {
		a, stdout, stderr := testApp(env.DB, env.Names.Audit, scenarioEnd)
		if err := a.run(context.Background(), args); err != nil {
			t.Errorf("auditctl %v: %v", args, err)
		}
		written := ""
		if len(args) > 4 && args[3] == "--proof" {
			raw, err := os.ReadFile(args[4])
			if err != nil || !strings.Contains(string(raw), `"path"`) {
				t.Errorf("auditctl %v wrote no proof file: %v", args, err)
			}
			written = string(raw)
		}
		for i, line := range strings.Split(stdout.String()+stderr.String()+written, "\n") {
			lines++
			if leaks := audittest.Leaks(line, s.Submitted); len(leaks) > 0 {
				t.Errorf("auditctl %v, line %d holds %v", args, i+1, leaks)
			}
		}
	}
	if lines < 500 {
		t.Errorf("only %d lines scanned", lines)
	}
	t.Logf("scanned %d audit items and %d output lines of %d auditctl runs", len(items), lines, len(runs))
}

// scanTable returns what the scanner finds in the table named name.
func scanTable(t *testing.T, env *audittest.Env, name string, submitted []string) []string {
	t.Helper()
	out, err := env.DB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, item := range out.Items {
		found = append(found, audittest.Leaks(audittest.ItemText(item), submitted)...)
	}
	return found
}
