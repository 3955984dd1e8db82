package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/audittest"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// writeProofFile runs evidence --proof for event and returns the file.
func (d *digestEnv) writeProofFile(t *testing.T, event string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "proof.json")
	a, _, stderr := testApp(d.env.DB, d.env.Names.Audit, d.now)
	if err := a.run(context.Background(), []string{"evidence", "--event-id", event, "--proof", file, "--public-key", d.key}); err != nil {
		t.Fatalf("evidence --proof: %v (%s)", err, stderr)
	}
	if stderr.Len() > 0 {
		t.Errorf("evidence stderr: %q", stderr)
	}
	return file
}

// verifyProof runs verify --proof file with no database.
func (d *digestEnv) verifyProof(t *testing.T, file string) (string, error) {
	t.Helper()
	off, out, stderr := testApp(nil, "unused", d.now)
	off.newDB = func(context.Context, string) (auditlog.QueryAPI, error) {
		t.Error("verify --proof opened the database")
		return nil, errors.New("no database offline")
	}
	err := off.run(context.Background(), []string{"verify", "--proof", file, "--public-key", d.key})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr)
	}
	return out.String(), err
}

// editProof rewrites the proof file's JSON with edit.
func editProof(t *testing.T, file string, edit func(p map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	edit(p)
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(edited, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return edited
}

// proofEntry returns entry i of a proof file's JSON.
func proofEntry(p map[string]any, i int) map[string]any {
	return p["entries"].([]any)[i].(map[string]any)
}

// TestProof writes the inclusion proof of event A (four entries over two periods, three
// entries in the first) and checks it offline with the public key alone; then changes an
// entry, a path node, a leaf index, or the digest, and expects verify to refuse.
func TestProof(t *testing.T) {
	d := newDigestEnv(t)
	file := d.writeProofFile(t, "evt-a")
	out, err := d.verifyProof(t, file)
	if err != nil || !strings.HasPrefix(out, "OK: ") || !strings.Contains(out, "event evt-a: 4 entries of 4 proven in 2 signed digests") {
		t.Fatalf("verify --proof of an untouched event = %v\n%s", err, out)
	}
	tests := []struct {
		name string
		edit func(p map[string]any)
		want string
	}{
		{"entry changed", func(p map[string]any) {
			proofEntry(p, 1)["entry"].(map[string]any)["provider_message_id"] = "sim-forged"
		}, "seq evt-a:sms:password_reset#0000000002: entry edited: its content does not hash to its hash"},
		{"entry and its hash changed", func(p map[string]any) {
			e := proofEntry(p, 0)["entry"].(map[string]any)
			e["hash"] = strings.Repeat("0", 64)
			delete(proofEntry(p, 0), "leaf")
		}, "seq evt-a:sms:password_reset#0000000001: entry edited"},
		{"path node changed", func(p map[string]any) {
			path := proofEntry(p, 0)["path"].([]any)
			path[0] = strings.Repeat("ab", 32)
		}, "seq evt-a:sms:password_reset#0000000001: entry or path changed: the entry and its path do not lead to the signed root of " + periodOf(0)},
		{"leaf index changed", func(p map[string]any) {
			proofEntry(p, 0)["leaf_index"] = 2
		}, "entry or path changed"},
		{"digest root changed", func(p map[string]any) {
			p["digests"].([]any)[0].(map[string]any)["tree_root"] = strings.Repeat("cd", 32)
		}, "period " + periodOf(0) + ": digest forged or altered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := d.verifyProof(t, editProof(t, file, tc.edit))
			first, _, _ := strings.Cut(out, "\n")
			if !errors.Is(err, errVerifyFailed) || !strings.HasPrefix(first, "BROKEN: ") || !strings.Contains(first, tc.want) {
				t.Errorf("verify --proof = %v\n%s\nwant exit 1, the first line saying %q", err, out, tc.want)
			}
		})
	}
}

// TestVerifyInputCoversRange: verify --input checks the file against the range the auditor
// asks for; a file cut short (its last digest and the entries of that period removed, its
// range line edited to match) fails, and --input without a range is a usage error.
func TestVerifyInputCoversRange(t *testing.T) {
	d := newDigestEnv(t)
	file := d.export(t)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	last := d.digests[2].PeriodStart
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec["type"] == "range":
			rec["to"] = last.Format(time.RFC3339)
		case rec["type"] == "digest" && rec["period_start"] == last.Format(time.RFC3339):
			continue
		case rec["written_at"] != nil && rec["written_at"].(string) >= last.Format(time.RFC3339):
			continue
		}
		b, _ := json.Marshal(rec)
		kept = append(kept, string(b))
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The range it still covers passes.
	if out, err := d.verifyFile(t, cut, d.from, last); err != nil || !strings.HasPrefix(out, "OK: ") {
		t.Errorf("verify of the range the cut file covers = %v\n%s", err, out)
	}
	// Verified once the last period is past auditctl's default grace (90 s): no lag allowance
	// for a file, so its digest is missing at once.
	d.now = d.to.Add(config.DefaultDigestGrace + time.Second)
	out, err := d.verifyFile(t, cut, d.from, d.to)
	want := "period " + periodOf(2) + ": digest missing: the file holds no signed digest for these periods"
	if first, _, _ := strings.Cut(out, "\n"); !errors.Is(err, errVerifyFailed) || !strings.Contains(first, want) {
		t.Errorf("verify of a file cut short = %v\n%s\nwant exit 1 saying %q", err, out, want)
	}
	a, _, stderr := testApp(nil, "unused", d.now)
	if err := a.run(context.Background(), []string{"verify", "--input", cut, "--public-key", d.key}); !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), "give --input with --from and --to") {
		t.Errorf("verify --input without a range = %v (%s), want a usage error", err, stderr)
	}
}

// TestVerifyLateThenMissing holds the digest step back: it closes only the first two of the
// three periods. Past the last period's grace verify warns that its digest is late and
// exits 0; past the grace, the schedule and the lag bound it is missing, exit 1.
func TestVerifyLateThenMissing(t *testing.T) {
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	s.Submit(t, "evt-a", "", "+447700900301", map[string]string{"code": "A1B2C3"}, 15*time.Minute)
	env.WriteClock.Set(base.Add(20 * time.Second))
	env.Replay(t, "req-late", env.ReadStream(t, 1))
	s.Step(t, keyA, time.Second, audittest.Lease)
	env.WriteClock.Set(base.Add(2*p + 20*time.Second))
	env.Replay(t, "req-late", env.ReadStream(t, 1))
	// The digest step last ran just before the third period ended.
	if _, err := env.Digester(notifytest.NewClock(base.Add(3*p - time.Second))).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := &digestEnv{env: env, key: publicKeyFile(t, env), from: base, to: base.Add(3 * p)}
	settings := map[string]string{config.EnvAuditDigestPeriodMinutes: "1", config.EnvAuditDigestGraceSeconds: "10",
		config.EnvAuditDigestLagBoundSeconds: "120"}
	verify := func(now time.Time) (string, error) {
		a, stdout, stderr := testApp(env.DB, env.Names.Audit, now)
		a.getenv = func(k string) string {
			if k == envAuditTable {
				return env.Names.Audit
			}
			return settings[k]
		}
		err := a.run(context.Background(), []string{"verify", "--from", d.from.Format(time.RFC3339), "--to", d.to.Format(time.RFC3339), "--public-key", d.key})
		if stderr.Len() > 0 {
			t.Errorf("stderr: %q", stderr)
		}
		return stdout.String(), err
	}
	end := base.Add(3 * p)
	// Late: 11 s after the end (grace 10 s), and still just within grace + 1 min + 120 s.
	for _, now := range []time.Time{end.Add(11 * time.Second), end.Add(3*time.Minute + 9*time.Second)} {
		out, err := verify(now)
		if err != nil || !strings.HasPrefix(out, "OK: ") || !strings.Contains(out, "LATE (a warning, not an error): period "+periodOf(2)+": digest late") {
			t.Errorf("at %s: verify = %v (exit %d)\n%s\nwant OK with a late warning", now, err, exitCode(err, nil), out)
		}
	}
	out, err := verify(end.Add(3*time.Minute + 11*time.Second))
	if first, _, _ := strings.Cut(out, "\n"); exitCode(err, nil) != 1 || !strings.Contains(first, "period "+periodOf(2)+": digest missing: these periods ended more than 10s ago") {
		t.Errorf("past the bound: verify = %v\n%s\nwant exit 1, digest missing", err, out)
	}
}
