package auditlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// TestOldRecordsAndRefusalsAreAudited: a record written before the guard decided per key (the
// intake without a guard writes today's shape: no decide_by, decided_at or retry_at) is
// served once the guard is on (a replay is its key's count, which the key never had, and the
// put: no wait), moves on as
// dispatch moves it, and is audited as before; a refused record's accepted → refused is
// audited with its reason, and the chains verify.
func TestOldRecordsAndRefusalsAreAudited(t *testing.T) {
	env := audittest.NewEnv(t)
	s := audittest.NewScenario(env)
	const old, refused = "evt-old:sms:password_reset", "evt-refused:sms:password_reset"
	params := map[string]string{"code": "482913"}
	first := s.Submit(t, "evt-old", "", "+447700900111", params, 15*time.Minute)
	item := rawItem(t, env, old)
	for _, attr := range []string{tables.AttrDecideBy, tables.AttrDecidedAt, tables.AttrRetryAt} {
		if _, ok := item[attr]; ok {
			t.Fatalf("a record admitted without the guard holds %s", attr)
		}
	}

	guard := &notifytest.Guard{}
	s.Intake.Guard = guard
	s.Intake.Sleep = func(context.Context, time.Duration) error {
		t.Error("a replay of a record without a decision bound waited")
		return errors.New("no wait expected")
	}
	replay, err := s.Intake.Submit(context.Background(), notify.Request{
		IdempotencyKey: old, EventID: "evt-old", Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: "+447700900111", Locale: "en", Params: params, ExpiresAt: first.ExpiresAt,
	})
	if err != nil || !replay.Replayed || replay.Record.State != notify.StateAccepted {
		t.Fatalf("replay of the old record: %+v %v", replay, err)
	}
	if n, _ := guard.Counts(); n != 1 {
		t.Errorf("the replay was counted %d times, want once (its key, never counted before)", n)
	}
	s.Step(t, old, time.Second, audittest.Lease)
	s.Step(t, old, time.Second, audittest.Accepted("sim-old"))

	guard.Refuse = &notify.RefusedError{Reason: notify.RefusedPrefixVelocity, RetryAfter: 40 * time.Second}
	s.Intake.Sleep = nil
	s.Clock.Advance(time.Second)
	_, err = s.Intake.Submit(context.Background(), notify.Request{
		IdempotencyKey: refused, EventID: "evt-refused", Channel: notify.ChannelSMS, Purpose: notify.PurposePasswordReset,
		To: "+447700900222", Locale: "en", Params: params, ExpiresAt: s.Clock.Now().Add(15 * time.Minute),
	})
	if !errors.Is(err, notify.ErrPrefixRateLimited) {
		t.Fatalf("refused submission: %v", err)
	}

	env.Replay(t, "req-1", env.ReadStream(t, 5))
	for event, want := range map[string][]notify.State{
		"evt-old":     {notify.StateAccepted, notify.StateDispatching, notify.StateSent},
		"evt-refused": {notify.StateAccepted, notify.StateRefused},
	} {
		got, err := env.Reader.Timeline(context.Background(), event)
		if err != nil {
			t.Fatal(err)
		}
		var states []notify.State
		for _, e := range got {
			states = append(states, e.ToState)
		}
		if len(states) != len(want) || states[len(states)-1] != want[len(want)-1] {
			t.Errorf("%s: timeline %v, want %v", event, states, want)
		}
		if p := auditor.Verify(got); len(p) != 0 {
			t.Errorf("%s: Verify: %v", event, p)
		}
		if event == "evt-refused" && len(got) == 2 && (got[1].Reason != notify.ReasonRefusedPrefixVelocity || got[1].FromState != notify.StateAccepted) {
			t.Errorf("refusal entry %s → %s (%s), want accepted → refused (%s)", got[1].FromState, got[1].ToState, got[1].Reason, notify.ReasonRefusedPrefixVelocity)
		}
	}
}

func rawItem(t *testing.T, env *audittest.Env, key string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := env.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(env.Names.Notifications), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{tables.AttrIdempotencyKey: &ddbtypes.AttributeValueMemberS{Value: key}}})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("get %s: %v", key, err)
	}
	return out.Item
}
