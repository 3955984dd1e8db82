package main

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// The digest tests audit two notifications over three digest periods (one minute each, as
// locally), close them with the real digest step, tamper with the audit table as someone
// with more rights than the application might, and run verify both online and offline (an
// export and the public key file only).

const (
	keyA = "evt-a:sms:password_reset" // notification 01HZSCENARIO-0001
	keyB = "evt-b:sms:password_reset" // notification 01HZSCENARIO-0002
)

// digestEnv is an audited, digested table and what verify needs.
type digestEnv struct {
	env      *audittest.Env
	key      string    // the public key file
	from, to time.Time // the three periods
	now      time.Time // the CLI's clock: every period closed
	digests  []auditlog.Digest
}

func newDigestEnv(t *testing.T) *digestEnv {
	t.Helper()
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	write := func(period int, n int) {
		env.WriteClock.Set(base.Add(time.Duration(period)*p + 20*time.Second))
		env.Replay(t, "req-digest", env.ReadStream(t, n))
	}
	s.Submit(t, "evt-a", "", "+447700900301", map[string]string{"code": "A1B2C3"}, 15*time.Minute)
	s.Step(t, keyA, time.Second, audittest.Lease)
	s.Submit(t, "evt-b", "", "+447700900302", map[string]string{"code": "D4E5F6"}, 15*time.Minute)
	write(0, 3)
	s.Step(t, keyA, time.Second, audittest.Accepted("sim-a"))
	s.Step(t, keyA, time.Second, audittest.Delivered)
	write(1, 2)
	s.Step(t, keyB, time.Second, audittest.Lease)
	s.Step(t, keyB, time.Second, audittest.Accepted("sim-b"))
	write(2, 2)
	ds := env.CloseDigests(t)
	if len(ds) != 3 {
		t.Fatalf("digest step closed %d periods, want 3", len(ds))
	}
	return &digestEnv{env: env, key: publicKeyFile(t, env), from: base, to: base.Add(3 * p),
		now: base.Add(3*p + audittest.DigestGrace + time.Second), digests: ds}
}

// verifyOnline runs verify --from --to against the table.
func (d *digestEnv) verifyOnline(t *testing.T) (string, error) {
	t.Helper()
	a, stdout, stderr := testApp(d.env.DB, d.env.Names.Audit, d.now)
	err := a.run(context.Background(), []string{"verify", "--from", d.from.Format(time.RFC3339), "--to", d.to.Format(time.RFC3339), "--public-key", d.key})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr)
	}
	return stdout.String(), err
}

// verifyOffline exports the range as JSON lines, then verifies the file for the range with
// an app that has no database at all: only the file and the public key.
func (d *digestEnv) verifyOffline(t *testing.T) (string, error) {
	t.Helper()
	return d.verifyFile(t, d.export(t), d.from, d.to)
}

// export writes the export of the range to a file and returns its name.
func (d *digestEnv) export(t *testing.T) string {
	t.Helper()
	a, stdout, _ := testApp(d.env.DB, d.env.Names.Audit, d.now)
	if err := a.run(context.Background(), []string{"export", "--from", d.from.Format(time.RFC3339), "--to", d.to.Format(time.RFC3339), "--format", "jsonl"}); err != nil {
		t.Fatalf("export: %v", err)
	}
	file := filepath.Join(t.TempDir(), "audit-export.jsonl")
	if err := os.WriteFile(file, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// verifyFile runs verify --input file for [from, to) with no database.
func (d *digestEnv) verifyFile(t *testing.T, file string, from, to time.Time) (string, error) {
	t.Helper()
	off, out, stderr := testApp(nil, "unused", d.now)
	off.newDB = func(context.Context, string) (auditlog.QueryAPI, error) {
		t.Error("offline verify opened the database")
		return nil, errors.New("no database offline")
	}
	err := off.run(context.Background(), []string{"verify", "--input", file, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--public-key", d.key})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr)
	}
	return out.String(), err
}

func (d *digestEnv) item(t *testing.T, eventID, seq string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := d.env.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(d.env.Names.Audit), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			tables.AuditEventID: &ddbtypes.AttributeValueMemberS{Value: eventID},
			tables.AuditSeq:     &ddbtypes.AttributeValueMemberS{Value: seq},
		},
	})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("get %s %s: %v", eventID, seq, err)
	}
	return out.Item
}

func (d *digestEnv) put(t *testing.T, item map[string]ddbtypes.AttributeValue) {
	t.Helper()
	if _, err := d.env.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(d.env.Names.Audit), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func (d *digestEnv) delete(t *testing.T, eventID, seq string) {
	t.Helper()
	_, err := d.env.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(d.env.Names.Audit),
		Key: map[string]ddbtypes.AttributeValue{
			tables.AuditEventID: &ddbtypes.AttributeValueMemberS{Value: eventID},
			tables.AuditSeq:     &ddbtypes.AttributeValueMemberS{Value: seq},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rewriteChain rewrites every entry of notification B with another destination fingerprint
// and recomputes every hash from the genesis value on: a chain consistent in itself.
func rewriteChain(t *testing.T, d *digestEnv) {
	prev := auditlog.GenesisHash
	for v := int64(1); v <= 3; v++ {
		e, err := auditlog.FromItem(d.item(t, "evt-b", auditlog.Seq(keyB, v)))
		if err != nil {
			t.Fatal(err)
		}
		e.DestinationFP = "ffffffffffffffff"
		if e, err = auditlog.Link(e, prev); err != nil {
			t.Fatal(err)
		}
		d.put(t, auditlog.Item(e))
		prev = e.Hash
	}
}

// periodOf names the digest period i of digestEnv.
func periodOf(i int) string {
	start := audittest.WriteStart.Truncate(audittest.DigestPeriod).Add(time.Duration(i) * audittest.DigestPeriod)
	return auditlog.PeriodName(start, start.Add(audittest.DigestPeriod))
}

func TestVerifyDigests(t *testing.T) {
	digestSeq := func(d *digestEnv, i int) string { return tables.FormatTime(d.digests[i].PeriodStart) }
	tests := []struct {
		name   string
		tamper func(t *testing.T, d *digestEnv)
		// want is what the first line says after "BROKEN: <scope>: "; "" means verify passes.
		want string
	}{
		{name: "untouched", tamper: func(*testing.T, *digestEnv) {}},
		{
			name:   "whole chain rewritten consistently",
			tamper: rewriteChain,
			want:   "period " + periodOf(0) + ": entries changed: the 3 entries written in this period are not the ones its signed digest covers (the Merkle root differs)",
		},
		{
			name: "every entry of one notification deleted",
			tamper: func(t *testing.T, d *digestEnv) {
				for v := int64(1); v <= 4; v++ {
					d.delete(t, "evt-a", auditlog.Seq(keyA, v))
				}
			},
			want: "period " + periodOf(0) + ": entries deleted: the signed digest of this period covers 3 entries, only 1 written in it are left (2 deleted)",
		},
		{
			name: "one entry deleted",
			tamper: func(t *testing.T, d *digestEnv) {
				d.delete(t, "evt-a", auditlog.Seq(keyA, 4))
			},
			want: "period " + periodOf(1) + ": entries deleted: the signed digest of this period covers 2 entries, only 1 written in it are left (1 deleted)",
		},
		{
			name: "entry added in a closed period",
			tamper: func(t *testing.T, d *digestEnv) {
				e, err := auditlog.FromItem(d.item(t, "evt-a", auditlog.Seq(keyA, 4)))
				if err != nil {
					t.Fatal(err)
				}
				// A forged purge after the last transition, well chained, in period 1.
				e.Seq, e.FromState, e.ToState, e.Reason = auditlog.Seq(keyA, 4)+"#purged", e.ToState, auditlog.StatePurged, auditlog.ReasonPurgedManual
				if e, err = auditlog.Link(e, e.Hash); err != nil {
					t.Fatal(err)
				}
				d.put(t, auditlog.Item(e))
			},
			want: "period " + periodOf(1) + ": entries added: 3 entries are written in this period, its signed digest covers 2 (1 added after it was signed)",
		},
		{
			name: "entry edited, its hash kept",
			tamper: func(t *testing.T, d *digestEnv) {
				item := d.item(t, "evt-a", auditlog.Seq(keyA, 3))
				item[tables.AuditProviderMessageID] = &ddbtypes.AttributeValueMemberS{Value: "sim-forged"}
				d.put(t, item)
			},
			want: "notification 01HZSCENARIO-0001, seq evt-a:sms:password_reset#0000000003: hash does not match the entry's content: the entry was edited",
		},
		{
			name: "two entries reordered",
			tamper: func(t *testing.T, d *digestEnv) {
				two, three := d.item(t, "evt-a", auditlog.Seq(keyA, 2)), d.item(t, "evt-a", auditlog.Seq(keyA, 3))
				two[tables.AuditSeq], three[tables.AuditSeq] = three[tables.AuditSeq], two[tables.AuditSeq]
				d.put(t, two)
				d.put(t, three)
			},
			want: "period " + periodOf(0) + ": entries changed",
		},
		{
			name: "digest forged with another key",
			tamper: func(t *testing.T, d *digestEnv) {
				other, _, err := digest.NewLocalKey()
				if err != nil {
					t.Fatal(err)
				}
				dg := d.digests[2]
				sig, err := digest.LocalSigner{Key: other}.Sign(context.Background(), auditlog.DigestSum(dg))
				if err != nil {
					t.Fatal(err)
				}
				dg.Signature = base64.StdEncoding.EncodeToString(sig)
				item, err := auditlog.DigestItem(dg)
				if err != nil {
					t.Fatal(err)
				}
				d.put(t, item)
			},
			want: "period " + periodOf(2) + ": digest forged or altered: its signature does not verify with the public key",
		},
		{
			name: "middle digest deleted",
			tamper: func(t *testing.T, d *digestEnv) {
				d.delete(t, tables.DigestEventID, digestSeq(d, 1))
			},
			want: "period " + auditlog.PeriodName(audittest.WriteStart.Truncate(time.Minute).Add(time.Minute), audittest.WriteStart.Truncate(time.Minute).Add(2*time.Minute)) + ": digest missing",
		},
		{
			name: "signature altered",
			tamper: func(t *testing.T, d *digestEnv) {
				item := d.item(t, tables.DigestEventID, digestSeq(d, 1))
				sig, _ := base64.StdEncoding.DecodeString(item[tables.DigestSignature].(*ddbtypes.AttributeValueMemberS).Value)
				sig[len(sig)-1] ^= 0x01
				item[tables.DigestSignature] = &ddbtypes.AttributeValueMemberS{Value: base64.StdEncoding.EncodeToString(sig)}
				d.put(t, item)
			},
			want: "period " + auditlog.PeriodName(audittest.WriteStart.Truncate(time.Minute).Add(time.Minute), audittest.WriteStart.Truncate(time.Minute).Add(2*time.Minute)) + ": digest forged or altered",
		},
		{
			name: "digest count forged",
			tamper: func(t *testing.T, d *digestEnv) {
				item := d.item(t, tables.DigestEventID, digestSeq(d, 2))
				item[tables.DigestCount] = &ddbtypes.AttributeValueMemberN{Value: "1"}
				d.put(t, item)
			},
			want: "digest forged or altered",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDigestEnv(t)
			tc.tamper(t, d)
			for _, mode := range []struct {
				name string
				run  func(*testing.T) (string, error)
			}{{"online", d.verifyOnline}, {"offline", d.verifyOffline}} {
				out, err := mode.run(t)
				first, _, _ := strings.Cut(out, "\n")
				if tc.want == "" {
					if err != nil || !strings.HasPrefix(first, "OK: ") || !strings.Contains(first, "7 entries covered by verified signed digests") {
						t.Errorf("%s: verify = %v\n%s", mode.name, err, out)
					}
					continue
				}
				if !errors.Is(err, errVerifyFailed) || exitCode(err, nil) != 1 {
					t.Errorf("%s: verify returned %v, want exit 1\n%s", mode.name, err, out)
				}
				if _, rest, _ := strings.Cut(first, ": "); !strings.HasPrefix(first, "BROKEN: ") || !strings.Contains(rest, tc.want) {
					t.Errorf("%s: verify printed\n%s\nwant the first line to say %q", mode.name, out, tc.want)
				}
			}
		})
	}
}

// TestEvidenceDigestCoverage reports, per notification, whether verified digests cover its
// entries: all of them when untouched, and which differ after an edit.
func TestEvidenceDigestCoverage(t *testing.T) {
	d := newDigestEnv(t)
	evidence := func(args ...string) string {
		t.Helper()
		a, stdout, stderr := testApp(d.env.DB, d.env.Names.Audit, d.now)
		if err := a.run(context.Background(), append([]string{"evidence", "--event-id", "evt-a"}, args...)); err != nil {
			t.Fatalf("evidence: %v (%s)", err, stderr)
		}
		return stdout.String()
	}
	want := "Signed digests: all 4 entries are covered by 2 digests verified with key " + digest.LocalKeyID(&d.env.SigningKey.PublicKey)
	if out := evidence("--public-key", d.key); !strings.Contains(out, want) {
		t.Errorf("evidence says\n%s\nwant %q", out, want)
	}
	if out := evidence(); !strings.Contains(out, "Signed digests: not checked") {
		t.Errorf("evidence without a key says\n%s", out)
	}
	item := d.item(t, "evt-a", auditlog.Seq(keyA, 3))
	item[tables.AuditProviderMessageID] = &ddbtypes.AttributeValueMemberS{Value: "sim-forged"}
	d.put(t, item)
	if out := evidence("--public-key", d.key, "--format", "json"); !strings.Contains(out, `"mismatched": 1`) || !strings.Contains(out, `"covered": 3`) {
		t.Errorf("evidence after an edit says\n%s\nwant 3 covered and 1 mismatched", out)
	}
}

func TestPublicKey(t *testing.T) {
	key, _, err := digest.NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := digest.PublicKeyPEM(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pub.pem")
	if err := os.WriteFile(file, pemKey, 0o644); err != nil {
		t.Fatal(err)
	}
	a, stdout, stderr := testApp(nil, "audit", scenarioEnd)
	a.getenv = func(k string) string {
		if k == config.EnvAuditDigestPublicKey {
			return file
		}
		return ""
	}
	if err := a.run(context.Background(), []string{"public-key"}); err != nil {
		t.Fatalf("public-key: %v (%s)", err, stderr)
	}
	got, err := auditor.ParsePublicKeyPEM(stdout.Bytes())
	if err != nil || !got.Equal(&key.PublicKey) {
		t.Errorf("public-key printed %q (%v), want the key of %s", stdout, err, file)
	}
	// With --key-id it asks KMS, never the file.
	a, _, _ = testApp(nil, "audit", scenarioEnd)
	err = a.run(context.Background(), []string{"public-key", "--key-id", "arn:aws:kms:us-east-1:111122223333:key/k"})
	if err == nil || !strings.Contains(err.Error(), "no KMS in tests") {
		t.Errorf("public-key --key-id = %v, want the KMS client's error", err)
	}
}

func TestWriteCheckKnownGap(t *testing.T) {
	var out strings.Builder
	r := auditor.Report{Digests: 1, Entries: 3, Notifications: 1, Covered: 3, KnownGaps: []auditor.KnownGap{{
		NotificationID: "01R", Seq: "k#0000000003#gap", FromVersion: 2, ToVersion: 3, WrittenAt: scenarioEnd,
	}}}
	if err := writeCheck(&out, "table", "range", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OK: range:", "KNOWN GAPS (recorded, not hidden): 1 gap", "known gap: the transitions of versions 2–3 were lost"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("verify printed\n%s\nwant %q", out.String(), want)
		}
	}
}
