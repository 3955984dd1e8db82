package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/audittest"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// The tampering tests write to the audit table directly, as someone with more rights than
// the application (which can only create items) might.

const tamperKey = "evt-tamper:sms:password_reset"

// tamperEnv audits one delivered notification and checks that verify passes before any
// tampering.
func tamperEnv(t *testing.T) *audittest.Env {
	t.Helper()
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	s.Submit(t, "evt-tamper", "", "+447700900777", map[string]string{"code": "T4MP3R"}, 15*time.Minute)
	s.Step(t, tamperKey, time.Second, audittest.Lease)
	s.Step(t, tamperKey, time.Second, audittest.Accepted("sim-msg-77"))
	s.Step(t, tamperKey, 2*time.Second, audittest.Delivered)
	env.Replay(t, "req-1", env.ReadStream(t, 4))
	if out, err := runVerify(t, env); err != nil {
		t.Fatalf("verify before tampering: %v\n%s", err, out)
	}
	return env
}

func runVerify(t *testing.T, env *audittest.Env) (string, error) {
	t.Helper()
	a, stdout, stderr := testApp(env.DB, env.Names.Audit, scenarioEnd)
	err := a.run(context.Background(), []string{"verify", "--event-id", "evt-tamper"})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr)
	}
	return stdout.String(), err
}

func getItem(t *testing.T, env *audittest.Env, version int64) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := env.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(env.Names.Audit), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			tables.AuditEventID: &ddbtypes.AttributeValueMemberS{Value: "evt-tamper"},
			tables.AuditSeq:     &ddbtypes.AttributeValueMemberS{Value: auditlog.Seq(tamperKey, version)},
		},
	})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("get version %d: %v", version, err)
	}
	return out.Item
}

func putItem(t *testing.T, env *audittest.Env, item map[string]ddbtypes.AttributeValue) {
	t.Helper()
	if _, err := env.DB.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(env.Names.Audit), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func wantBroken(t *testing.T, out string, err error, seq, what string) {
	t.Helper()
	if !errors.Is(err, errVerifyFailed) || exitCode(err, nil) != 1 {
		t.Fatalf("verify returned %v, want exit 1\n%s", err, out)
	}
	first, _, _ := strings.Cut(out, "\n")
	want := "BROKEN: event evt-tamper: first broken link: notification 01HZSCENARIO-0001, seq " + seq + ": " + what
	if !strings.HasPrefix(first, want) {
		t.Errorf("verify printed\n%s\nwant the first line to start with\n%s", out, want)
	}
}

func TestVerifyDetectsEditedItem(t *testing.T) {
	env := tamperEnv(t)
	item := getItem(t, env, 3)
	item[tables.AuditProviderMessageID] = &ddbtypes.AttributeValueMemberS{Value: "sim-msg-forged"}
	putItem(t, env, item)
	out, err := runVerify(t, env)
	wantBroken(t, out, err, tamperKey+"#0000000003", "hash does not match the entry's content: the entry was edited")
}

func TestVerifyDetectsDeletedItem(t *testing.T) {
	env := tamperEnv(t)
	_, err := env.DB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(env.Names.Audit),
		Key: map[string]ddbtypes.AttributeValue{
			tables.AuditEventID: &ddbtypes.AttributeValueMemberS{Value: "evt-tamper"},
			tables.AuditSeq:     &ddbtypes.AttributeValueMemberS{Value: auditlog.Seq(tamperKey, 2)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runVerify(t, env)
	wantBroken(t, out, err, tamperKey+"#0000000003", "version 2 missing after seq "+tamperKey+"#0000000001")
}

// TestVerifyDetectsReorderedChain swaps the contents of versions 2 and 3 under their keys and
// renumbers them, recomputing every hash from there on, as a careful forger would: the chain
// of hashes is then consistent, but the states no longer follow one another.
func TestVerifyDetectsReorderedChain(t *testing.T) {
	env := tamperEnv(t)
	var es []auditlog.Entry
	for v := int64(1); v <= 4; v++ {
		e, err := auditlog.FromItem(getItem(t, env, v))
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	es[1], es[2] = es[2], es[1]
	for i := 1; i < len(es); i++ {
		es[i].Version, es[i].Seq = int64(i+1), auditlog.Seq(tamperKey, int64(i+1))
		e, err := auditlog.Link(es[i], es[i-1].Hash)
		if err != nil {
			t.Fatal(err)
		}
		es[i] = e
		putItem(t, env, auditlog.Item(e))
	}
	out, err := runVerify(t, env)
	wantBroken(t, out, err, tamperKey+"#0000000002", "from_state dispatching does not follow to_state accepted")
}

// TestVerifyDetectsSwappedItems swaps two items' contents under their keys without
// recomputing anything.
func TestVerifyDetectsSwappedItems(t *testing.T) {
	env := tamperEnv(t)
	v2, v3 := getItem(t, env, 2), getItem(t, env, 3)
	v2[tables.AuditSeq], v3[tables.AuditSeq] = v3[tables.AuditSeq], v2[tables.AuditSeq]
	putItem(t, env, v2)
	putItem(t, env, v3)
	out, err := runVerify(t, env)
	wantBroken(t, out, err, tamperKey+"#0000000002", "hash does not match the entry's content")
}
