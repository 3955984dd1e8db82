package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// The environment that names the suite's second caller, one of:
//
//	RESETNOTIFY_E2E_SECOND_CALLER_HEADER  "Name: value", a header the stack's gateway takes as
//	                                      another caller (the local gateway only; make e2e)
//	RESETNOTIFY_E2E_SECOND_CALLER_ROLE    a role ARN the suite assumes through STS, signing
//	                                      as that role's session (make emulator-e2e; in AWS, a
//	                                      role the suite's credentials may assume)
const (
	envSecondCallerHeader = "RESETNOTIFY_E2E_SECOND_CALLER_HEADER"
	envSecondCallerRole   = "RESETNOTIFY_E2E_SECOND_CALLER_ROLE"
)

// secondCaller returns the suite's second caller, as the environment names it.
func (s *stack) secondCaller(t *testing.T) caller {
	t.Helper()
	if h := os.Getenv(envSecondCallerHeader); h != "" {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			t.Fatalf("%s=%q is not \"Name: value\"", envSecondCallerHeader, h)
		}
		return caller{creds: s.creds, header: http.Header{http.CanonicalHeaderKey(strings.TrimSpace(name)): {strings.TrimSpace(value)}}}
	}
	role := os.Getenv(envSecondCallerRole)
	if role == "" {
		t.Fatalf("neither %s nor %s names a second caller", envSecondCallerHeader, envSecondCallerRole)
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	creds := stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), role, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = "e2e-" + s.runID
	})
	return caller{creds: aws.NewCredentialsCache(creds)}
}

// TestCallersOwnTheirKeys: two callers, each seeing 404 for the other's keys (GET, DELETE and
// conversion answer exactly as for a key nobody used); a POST of the other's key with the same
// body is a notification of its own (202), never a replay or a key reuse. Nothing the second
// caller sends changes the first caller's notification.
func TestCallersOwnTheirKeys(t *testing.T) {
	s := getStack(t)
	second := s.secondCaller(t)
	mine := s.newNotification(t, "owned-1", number(t), 10*time.Minute)
	if r := s.submit(t, mine); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	body, err := json.Marshal(mine)
	if err != nil {
		t.Fatal(err)
	}
	theirs := s.newNotification(t, "owned-2", number(t), 10*time.Minute)
	theirBody, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.callAs(t, second, http.MethodPost, "/v1/notifications", nil, theirBody); r.Code != http.StatusAccepted {
		t.Fatalf("the second caller's POST: %d %s", r.Code, r.Body)
	}

	unused := "e2e-" + s.runID + "-never-used"
	routes := []struct{ method, suffix string }{
		{http.MethodGet, ""}, {http.MethodDelete, ""}, {http.MethodPost, "/conversion"},
	}
	for _, rt := range routes {
		for _, pair := range []struct {
			who      caller
			key      string
			whoNamed string
		}{{second, mine.key(), "second caller"}, {caller{creds: s.creds}, theirs.key(), "first caller"}} {
			got := s.callAs(t, pair.who, rt.method, "/v1/notifications/"+pair.key+rt.suffix, nil, nil)
			want := s.callAs(t, pair.who, rt.method, "/v1/notifications/"+unused+rt.suffix, nil, nil)
			if got.Code != http.StatusNotFound || want.Code != http.StatusNotFound || withoutInstance(t, got.Body) != withoutInstance(t, want.Body) {
				t.Errorf("%s %s of the other's key: %d %s; an unknown key: %d %s", pair.whoNamed, rt.method+rt.suffix, got.Code, got.Body, want.Code, want.Body)
			}
		}
	}
	// Keys are scoped to their owner: the second caller's POST of the first one's key and body
	// is a notification of its own, and the first one's stays as it was.
	first := s.get(t, mine.key())
	r := s.callAs(t, second, http.MethodPost, "/v1/notifications", nil, body)
	if r.Code != http.StatusAccepted || r.status(t).NotificationID == first.NotificationID {
		t.Errorf("the second caller's POST of the first one's key and body: %d %s, want 202 and a notification of its own", r.Code, r.Body)
	}
	if again := s.callAs(t, second, http.MethodGet, "/v1/notifications/"+mine.key(), nil, nil); again.Code != http.StatusOK ||
		again.status(t).NotificationID == first.NotificationID {
		t.Errorf("the second caller's GET of its own notification under the shared key: %d %s", again.Code, again.Body)
	}
	if st := s.get(t, mine.key()); st.NotificationID != first.NotificationID || st.State == "cancelled" {
		t.Errorf("the first caller's notification after the second caller's POST: %+v, want %+v", st, first)
	}
	if r := s.callAs(t, second, http.MethodGet, "/v1/notifications/"+theirs.key(), nil, nil); r.Code != http.StatusOK {
		t.Errorf("the second caller reads its own key: %d %s", r.Code, r.Body)
	}
}

// withoutInstance returns a problem body without its instance (the request ID), to compare two
// answers.
func withoutInstance(t *testing.T, body []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("problem %q: %v", body, err)
	}
	delete(m, "instance")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
