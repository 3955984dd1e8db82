package intake_test

import (
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// notFoundBody is resp's problem without its instance (the request ID), to compare the 404 of
// another caller's key with the 404 of a key nobody used.
func notFoundBody(t *testing.T, resp events.APIGatewayV2HTTPResponse) intake.Problem {
	t.Helper()
	p := wantProblem(t, resp, http.StatusNotFound, intake.ProblemNotificationNotFound)
	p.Instance = ""
	return p
}

// TestCallersOwnTheirKeys: another caller's GET, DELETE and conversion answer exactly as for
// a key nobody used, its POST of the same body is a key reuse, and nothing it sends changes
// the record or queues anything. A new session of the owner's role still owns the key.
func TestCallersOwnTheirKeys(t *testing.T) {
	f := newFixture(t)
	if resp := f.do(t, post(body(nil), "idempotency-key", "order-1")); resp.StatusCode != http.StatusAccepted {
		t.Fatal(resp.StatusCode, resp.Body)
	}
	f.markSent(t, "order-1")
	before := f.store.All()
	queued := len(f.queue.Sent())
	unknown := notFoundBody(t, f.do(t, get("order-unused")))
	unknownDel := notFoundBody(t, f.do(t, del("order-unused")))
	unknownConv := notFoundBody(t, f.do(t, convertEvent("order-unused")))

	for name, tc := range map[string]struct {
		ev   eventT
		want intake.Problem
	}{
		"GET":        {as(get("order-1"), otherSession), unknown},
		"DELETE":     {as(del("order-1"), otherSession), unknownDel},
		"conversion": {as(convertEvent("order-1"), otherSession), unknownConv},
		// The operator reads every key, and changes none.
		"operator DELETE":     {as(del("order-1"), operatorSession), unknownDel},
		"operator conversion": {as(convertEvent("order-1"), operatorSession), unknownConv},
	} {
		if d := cmp.Diff(tc.want, notFoundBody(t, f.do(t, tc.ev))); d != "" {
			t.Errorf("%s by another caller differs from an unknown key's 404 (-unknown +other):\n%s", name, d)
		}
	}
	p := wantProblem(t, f.do(t, as(post(body(nil), "idempotency-key", "order-1"), otherSession)),
		http.StatusUnprocessableEntity, intake.ProblemKeyReused)
	if p.State != "" || p.Reason != "" {
		t.Errorf("the key reuse tells another caller where the record stands: %+v", p)
	}
	if d := cmp.Diff(before, f.store.All()); d != "" {
		t.Errorf("another caller changed the record:\n%s", d)
	}
	if n := len(f.queue.Sent()); n != queued {
		t.Errorf("another caller's requests queued %d messages", n-queued)
	}

	newSession := "arn:aws:sts::123456789012:assumed-role/shop-backend/retry-after-restart"
	if resp := f.do(t, as(get("order-1"), newSession)); resp.StatusCode != http.StatusOK {
		t.Errorf("a new session of the owner's role: %d %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp := f.do(t, as(get("order-1"), operatorSession)); resp.StatusCode != http.StatusOK {
		t.Errorf("the operator's GET: %d %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp := f.do(t, as(convertEvent("order-1"), newSession)); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's conversion: %d %s, want 200", resp.StatusCode, resp.Body)
	}
	if resp := f.do(t, as(post(body(nil), "idempotency-key", "order-1"), newSession)); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's replay: %d %s, want 200", resp.StatusCode, resp.Body)
	}
}

// TestOwnerIsAKeyedFingerprint: the record holds the owner's fingerprint, never its ARN.
func TestOwnerIsAKeyedFingerprint(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil), "idempotency-key", "order-1"))
	rec := f.store.All()[0]
	if want := (notifytest.Sealer{}).OwnerFP(callerRole); rec.Owner != want {
		t.Errorf("owner %q, want the fingerprint of the role %q", rec.Owner, want)
	}
}

// TestCallerWithoutIdentity: an event without an IAM identity (a route without IAM
// authorization) reads nothing and admits nothing.
func TestCallerWithoutIdentity(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil), "idempotency-key", "order-1"))
	for _, arn := range []string{"", "arn:aws:s3:::bucket", "not-an-arn"} {
		get := as(get("order-1"), arn)
		if arn == "" {
			get.RequestContext.Authorizer = nil
		}
		notFoundBody(t, f.do(t, get))
		resp := f.do(t, as(post(body(nil), "idempotency-key", "order-2"), arn))
		wantProblem(t, resp, http.StatusInternalServerError, intake.ProblemInternal)
	}
	if n := len(f.store.All()); n != 1 {
		t.Errorf("%d records, want only the one an identified caller admitted", n)
	}
}

// TestRecordsWithoutOwner: a record admitted before owners were stored is owned by nobody:
// only the operator reads it, and a repeat of its POST is still judged by its fingerprint.
func TestRecordsWithoutOwner(t *testing.T) {
	f := newFixture(t)
	f.intake.Owners = nil
	f.do(t, post(body(nil), "idempotency-key", "order-1"))
	f.intake.Owners = notifytest.Sealer{}
	if rec := f.store.All()[0]; rec.Owner != "" {
		t.Fatalf("setup: owner %q", rec.Owner)
	}
	notFoundBody(t, f.do(t, get("order-1")))
	notFoundBody(t, f.do(t, del("order-1")))
	if resp := f.do(t, as(get("order-1"), operatorSession)); resp.StatusCode != http.StatusOK {
		t.Errorf("the operator's GET of an ownerless record: %d, want 200", resp.StatusCode)
	}
	if resp := f.do(t, post(body(nil), "idempotency-key", "order-1")); resp.StatusCode != http.StatusOK {
		t.Errorf("a replay of an ownerless record: %d %s, want 200", resp.StatusCode, resp.Body)
	}
	wantProblem(t, f.do(t, post(body(func(m map[string]any) { m["locale"] = "en" }), "idempotency-key", "order-1")),
		http.StatusUnprocessableEntity, intake.ProblemKeyReused)
	if rec := f.store.All()[0]; rec.State != notify.StateAccepted {
		t.Errorf("state %s, want accepted", rec.State)
	}
}

// TestCanonicalPrincipal: every session of a role is the role, with or without a path.
func TestCanonicalPrincipal(t *testing.T) {
	for in, want := range map[string]string{
		callerSession: callerRole,
		"arn:aws:iam::123456789012:role/team/shop-backend": callerRole,
		callerRole:                                       callerRole,
		"arn:aws:iam::123456789012:user/ops/bob":         "arn:aws:iam::123456789012:user/bob",
		"arn:aws:iam::123456789012:root":                 "arn:aws:iam::123456789012:root",
		"arn:aws-cn:sts::123456789012:assumed-role/r/s":  "arn:aws-cn:iam::123456789012:role/r",
		"arn:aws:sts::123456789012:federated-user/carol": "arn:aws:sts::123456789012:federated-user/carol",
		"arn:aws:sts::123456789012:assumed-role/r":       "",
		"arn:aws:sts::123456789012:assumed-role/r/s/x":   "",
		"arn:aws:iam::12345678901:role/r":                "",
		"arn:aws:iam::123456789012:group/g":              "",
		"arn:aws:s3:::bucket":                            "",
	} {
		got, err := notify.CanonicalPrincipal(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("CanonicalPrincipal(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
