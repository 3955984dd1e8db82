package dynamostore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// recordingAPI keeps the last UpdateItem input and answers every call with success.
type recordingAPI struct {
	API
	update *dynamodb.UpdateItemInput
}

func (r *recordingAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.update = in
	return &dynamodb.UpdateItemOutput{}, nil
}

// TestTransitionWritesAttemptedAt checks that taking the lease stores attempted_at, so
// reconciliation can count the provider's visibility window from it, and that a record without
// one removes the attribute.
func TestTransitionWritesAttemptedAt(t *testing.T) {
	ctx := context.Background()
	prev := sampleRecord()
	prev.State, prev.Reason, prev.Version = notify.StateAccepted, notify.ReasonAdmitted, 1
	prev.LeaseUntil, prev.AttemptedAt = time.Time{}, time.Time{}
	now := prev.UpdatedAt.Add(time.Second)
	lease, err := prev.Apply(notify.Change{To: notify.StateDispatching, Reason: notify.ReasonLeaseAcquired, LeaseToken: "tok-1", LeaseUntil: now.Add(30 * time.Second)}, now)
	if err != nil {
		t.Fatal(err)
	}

	api := &recordingAPI{}
	s := New(api, "notifications")
	if err := s.Transition(ctx, prev, lease); err != nil {
		t.Fatal(err)
	}
	if clauseOf(t, api.update, tables.AttrAttemptedAt) != "SET" {
		t.Errorf("lease update %q does not SET %s", *api.update.UpdateExpression, tables.AttrAttemptedAt)
	}
	if !valueIs(api.update.ExpressionAttributeValues, tables.FormatTime(now)) {
		t.Errorf("no value %s for %s in %v", tables.FormatTime(now), tables.AttrAttemptedAt, api.update.ExpressionAttributeValues)
	}

	none := lease
	none.AttemptedAt = time.Time{}
	none.Version = lease.Version + 1
	if err := s.Transition(ctx, lease, none); err != nil {
		t.Fatal(err)
	}
	if clauseOf(t, api.update, tables.AttrAttemptedAt) != "REMOVE" {
		t.Errorf("update %q does not REMOVE an empty %s", *api.update.UpdateExpression, tables.AttrAttemptedAt)
	}
}

// clauseOf returns the update clause (SET, REMOVE, ...) that names attr, or "" when none does.
func clauseOf(t *testing.T, in *dynamodb.UpdateItemInput, attr string) string {
	t.Helper()
	placeholder := ""
	for k, v := range in.ExpressionAttributeNames {
		if v == attr {
			placeholder = k
		}
	}
	if placeholder == "" {
		t.Fatalf("update names no %s: %v", attr, in.ExpressionAttributeNames)
	}
	for _, line := range strings.Split(strings.TrimSpace(*in.UpdateExpression), "\n") {
		keyword, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		for _, action := range strings.Split(rest, ",") {
			target, _, _ := strings.Cut(strings.TrimSpace(action), " ")
			if target == placeholder {
				return keyword
			}
		}
	}
	return ""
}

func valueIs(values map[string]ddbtypes.AttributeValue, want string) bool {
	for _, v := range values {
		if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok && s.Value == want {
			return true
		}
	}
	return false
}
