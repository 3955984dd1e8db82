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

// TestCallersOwnTheirKeys: keys are scoped to their owner. Another caller's GET, DELETE and
// conversion of a key answer exactly as for a key nobody used; its POST with the same key is
// a notification of its own (202), which changes nothing of the first; the owner reusing the
// key with another body still gets 422. A new session of the owner's role still owns the key,
// and the operator reads it by naming the owner.
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
		"GET":                 {as(get("order-1"), otherSession), unknown},
		"GET naming owner":    {as(withOwner(get("order-1"), callerRole), otherSession), unknown},
		"DELETE":              {as(del("order-1"), otherSession), unknownDel},
		"conversion":          {as(convertEvent("order-1"), otherSession), unknownConv},
		"operator GET":        {as(get("order-1"), operatorSession), unknown},
		"operator DELETE":     {as(del("order-1"), operatorSession), unknownDel},
		"operator conversion": {as(convertEvent("order-1"), operatorSession), unknownConv},
	} {
		if d := cmp.Diff(tc.want, notFoundBody(t, f.do(t, tc.ev))); d != "" {
			t.Errorf("%s by another caller differs from an unknown key's 404 (-unknown +other):\n%s", name, d)
		}
	}
	if d := cmp.Diff(before, f.store.All()); d != "" {
		t.Errorf("another caller's reads changed the record:\n%s", d)
	}
	other := f.do(t, as(post(body(func(m map[string]any) { m["locale"] = "en" }), "idempotency-key", "order-1"), otherSession))
	if other.StatusCode != http.StatusAccepted {
		t.Fatalf("another caller's POST of the same key: %d %s, want 202", other.StatusCode, other.Body)
	}
	if v := decodeView(t, other); v.IdempotencyKey != "order-1" || v.NotificationID == before[0].NotificationID {
		t.Errorf("another caller's notification %+v shares the first's ID or hides its key", v)
	}
	if n := len(f.queue.Sent()); n != queued+1 {
		t.Errorf("another caller's POST queued %d messages, want 1", n-queued)
	}
	if rec, err := f.store.Get(t.Context(), stored("order-1")); err != nil || rec.State != notify.StateSent {
		t.Errorf("the first record after another caller's POST: %v %v, want it sent as it was", rec.State, err)
	}
	wantProblem(t, f.do(t, post(body(func(m map[string]any) { m["locale"] = "en" }), "idempotency-key", "order-1")),
		http.StatusUnprocessableEntity, intake.ProblemKeyReused)

	newSession := "arn:aws:sts::123456789012:assumed-role/shop-backend/retry-after-restart"
	for name, ev := range map[string]eventT{
		"a new session's GET":           as(get("order-1"), newSession),
		"the operator's GET of the key": as(withOwner(get("order-1"), callerSession), operatorSession),
		"the owner's conversion":        as(convertEvent("order-1"), newSession),
		"the owner's replay":            as(post(body(nil), "idempotency-key", "order-1"), newSession),
	} {
		if resp := f.do(t, ev); resp.StatusCode != http.StatusOK || decodeView(t, resp).NotificationID != before[0].NotificationID {
			t.Errorf("%s: %d %s, want 200 with the first notification", name, resp.StatusCode, resp.Body)
		}
	}
}

// withOwner returns the GET ev naming owner in the owner query parameter.
func withOwner(ev eventT, owner string) eventT {
	ev.QueryStringParameters = map[string]string{intake.QueryOwner: owner}
	ev.RawQueryString = intake.QueryOwner + "=" + owner
	return ev
}

// TestRecordsUnderTheBareKey: a record stored under the caller's bare key (admitted before keys
// were scoped) stays readable, cancellable and convertible by its owner, and by nobody else.
func TestRecordsUnderTheBareKey(t *testing.T) {
	f := newFixture(t)
	f.do(t, post(body(nil), "idempotency-key", "order-1"))
	rec, err := f.store.Get(t.Context(), stored("order-1"))
	if err != nil {
		t.Fatal(err)
	}
	rec.IdempotencyKey = "order-1"
	f.store = notifytest.NewStore()
	f.intake.Store = f.store
	if _, _, err := f.store.Admit(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	notFoundBody(t, f.do(t, as(get("order-1"), otherSession)))
	notFoundBody(t, f.do(t, as(del("order-1"), otherSession)))
	if resp := f.do(t, get("order-1")); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's GET of its record under the bare key: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := f.do(t, del("order-1")); resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's DELETE of its record under the bare key: %d %s", resp.StatusCode, resp.Body)
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
// only the operator reads it.
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
	if rec := f.store.All()[0]; rec.State != notify.StateAccepted {
		t.Errorf("state %s, want accepted", rec.State)
	}
}

// TestCanonicalPrincipal: every session of a role is the role, with or without a path.
func TestCanonicalPrincipal(t *testing.T) {
	for in, want := range map[string]string{
		callerSession: callerRole,
		"arn:aws:iam::123456789012:role/team/shop-backend": callerRole,
		callerRole:                                      callerRole,
		"arn:aws:iam::123456789012:user/ops/bob":        "arn:aws:iam::123456789012:user/bob",
		"arn:aws:iam::123456789012:root":                "arn:aws:iam::123456789012:root",
		"arn:aws-cn:sts::123456789012:assumed-role/r/s": "arn:aws-cn:iam::123456789012:role/r",
		// Any user allowed sts:GetFederationToken mints any name: no owner.
		"arn:aws:sts::123456789012:federated-user/carol": "",
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
