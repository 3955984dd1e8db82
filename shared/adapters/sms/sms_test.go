package sms_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

func TestOutcomeReasonAndState(t *testing.T) {
	tests := []struct {
		name   string
		out    sms.Outcome
		reason notify.Reason
		state  notify.State
	}{
		{"accepted", sms.Accepted("m1"), notify.ReasonProviderAccepted, notify.StateSent},
		{"accepted without id is unknown", sms.Outcome{Class: sms.ClassAccepted}, notify.ReasonProviderAmbiguous, notify.StateDispatchUnknown},
		{"throttled", sms.NotAccepted(sms.DetailThrottled, time.Second, nil), notify.ReasonProviderThrottled, notify.StateRetryScheduled},
		{"unavailable", sms.NotAccepted(sms.DetailUnavailable, 0, nil), notify.ReasonProviderUnavailable, notify.StateRetryScheduled},
		{"not written", sms.NotAccepted(sms.DetailNotWritten, 0, nil), notify.ReasonProviderUnavailable, notify.StateRetryScheduled},
		{"rejected", sms.Rejected("21211", nil), notify.ReasonProviderRejected, notify.StateFailed},
		{"timeout", sms.Unknown(sms.DetailTimeout, nil), notify.ReasonProviderTimeout, notify.StateDispatchUnknown},
		{"connection lost", sms.Unknown(sms.DetailConnectionLost, nil), notify.ReasonConnectionLost, notify.StateDispatchUnknown},
		{"ambiguous", sms.Unknown(sms.DetailAmbiguous, nil), notify.ReasonProviderAmbiguous, notify.StateDispatchUnknown},
		{"zero outcome is unknown", sms.Outcome{}, notify.ReasonProviderAmbiguous, notify.StateDispatchUnknown},
		{"unknown class is unknown", sms.Outcome{Class: "weird"}, notify.ReasonProviderAmbiguous, notify.StateDispatchUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.out.Reason(); got != tc.reason {
				t.Errorf("Reason() = %s, want %s", got, tc.reason)
			}
			if got := tc.out.State(); got != tc.state {
				t.Errorf("State() = %s, want %s", got, tc.state)
			}
			// Every (dispatching → state, reason) pair the mapping produces is one the core allows.
			if err := notify.CheckTransition(notify.StateDispatching, tc.state, tc.reason); err != nil {
				t.Errorf("core refuses dispatching→%s %s: %v", tc.state, tc.reason, err)
			}
		})
	}
}

func TestLookupResultReason(t *testing.T) {
	tests := []struct {
		name   string
		res    sms.LookupResult
		reason notify.Reason
	}{
		{"found", sms.Found("m1", sms.ReceiptNone, time.Time{}), notify.ReasonReconciledAccepted},
		{"found without id", sms.LookupResult{Status: sms.LookupFound}, notify.ReasonReconcileInconclusive},
		{"not found", sms.LookupResult{Status: sms.LookupNotFound}, notify.ReasonReconciledNotFound},
		{"inconclusive", sms.Inconclusive("x"), notify.ReasonReconcileInconclusive},
		{"zero", sms.LookupResult{}, notify.ReasonReconcileInconclusive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.res.Reason(); got != tc.reason {
				t.Errorf("Reason() = %s, want %s", got, tc.reason)
			}
		})
	}
	if sms.ReceiptDelivered.Reason() != notify.ReasonReceiptDelivered || sms.ReceiptUndelivered.State() != notify.StateUndelivered {
		t.Error("receipt mapping is wrong")
	}
}

func TestAbsent(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		now         time.Time
		attemptedAt time.Time
		want        sms.LookupResult
	}{
		{"before the window", at.Add(9 * time.Second), at, sms.Inconclusive("not_visible_yet")},
		{"at the window", at.Add(10 * time.Second), at, sms.LookupResult{Status: sms.LookupNotFound}},
		{"after the window", at.Add(time.Hour), at, sms.LookupResult{Status: sms.LookupNotFound}},
		{"unknown attempt time", at, time.Time{}, sms.Inconclusive("attempt_time_unknown")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sms.Absent(tc.now, tc.attemptedAt, 10*time.Second)); diff != "" {
				t.Errorf("Absent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAttemptRef(t *testing.T) {
	ref := sms.AttemptRef("01JBZ8X6Q5-a", 3)
	if ref != "01JBZ8X6Q5-a-a3" {
		t.Fatalf("AttemptRef = %q", ref)
	}
	id, n, ok := sms.ParseAttemptRef(ref)
	if !ok || id != "01JBZ8X6Q5-a" || n != 3 {
		t.Fatalf("ParseAttemptRef(%q) = %q, %d, %v", ref, id, n, ok)
	}
	for _, bad := range []string{"", "x", "-a1", "id-a0", "id-a01", "id-ax", "id-a-1"} {
		if _, _, ok := sms.ParseAttemptRef(bad); ok {
			t.Errorf("ParseAttemptRef(%q) accepted", bad)
		}
	}
}

func TestSendRequestRedacts(t *testing.T) {
	req := sms.SendRequest{To: "+447700900123", Body: "Reset: https://shop.example/r/SECRET", AttemptRef: "n1-a1", ValidityPeriod: time.Minute}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("send", "req", req)
	for _, s := range []string{fmt.Sprint(req), fmt.Sprintf("%v %+v %#v %s", req, req, req, req), logged.String()} {
		if strings.Contains(s, "447700900123") || strings.Contains(s, "SECRET") {
			t.Errorf("secret leaked: %s", s)
		}
		if !strings.Contains(s, "n1-a1") {
			t.Errorf("attempt ref missing: %s", s)
		}
	}
}

// sendProbe has a Send method. Embedded at the same depth as LookupOnly, it makes
// probe.Send ambiguous, which is a compile error, if LookupOnly ever gains a Send method or
// field: this file then stops compiling.
type sendProbe struct{}

func (sendProbe) Send() {}

type probe struct {
	sms.LookupOnly
	sendProbe
}

var (
	_ sms.Lookup = sms.LookupOnly{}
	_            = probe{}.Send // compile-time: LookupOnly has no Send
)

type fakeBoth struct{}

func (fakeBoth) Send(context.Context, sms.SendRequest) sms.Outcome { return sms.Accepted("x") }
func (fakeBoth) Lookup(context.Context, sms.LookupRequest) (sms.LookupResult, error) {
	return sms.Found("m1", sms.ReceiptNone, time.Time{}), nil
}

func TestLookupOnlyHidesSend(t *testing.T) {
	lo := sms.OnlyLookup(fakeBoth{})
	if _, ok := any(lo).(sms.Sender); ok {
		t.Fatal("LookupOnly satisfies Sender")
	}
	res, err := lo.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n-a1"})
	if err != nil || res.Status != sms.LookupFound {
		t.Fatalf("Lookup = %+v, %v", res, err)
	}
	res, err = sms.LookupOnly{}.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n-a1"})
	if err == nil || res.Status != sms.LookupInconclusive {
		t.Fatalf("zero LookupOnly = %+v, %v", res, err)
	}
}

func TestWholeSeconds(t *testing.T) {
	tests := []struct {
		name     string
		d        time.Duration
		min, max int64
		want     int64
		tooShort bool
	}{
		{"rounds down", 90*time.Second + 999*time.Millisecond, 1, 0, 90, false},
		{"exact", 90 * time.Second, 1, 0, 90, false},
		{"clamped to max", 10 * time.Hour, 1, 14400, 14400, false},
		{"under a second", 999 * time.Millisecond, 1, 0, 0, true},
		{"zero", 0, 1, 0, 0, true},
		{"negative", -time.Second, 1, 0, 0, true},
		{"under the provider minimum", 4*time.Second + 900*time.Millisecond, 5, 259200, 0, true},
		{"at the provider minimum", 5 * time.Second, 5, 259200, 5, false},
		{"minimum 0 still needs a second", 500 * time.Millisecond, 0, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sms.WholeSeconds(tc.d, tc.min, tc.max)
			if tc.tooShort {
				if !errors.Is(err, sms.ErrValidityTooShort) {
					t.Fatalf("WholeSeconds(%s) error = %v, want ErrValidityTooShort", tc.d, err)
				}
				if o := sms.TooShort(err); o.Class != sms.ClassNotAccepted || o.Detail != sms.DetailNotWritten {
					t.Fatalf("TooShort = %s", o)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("WholeSeconds(%s) = %d, %v; want %d", tc.d, got, err, tc.want)
			}
		})
	}
}

type fakeReader struct {
	rc  sms.Receipt
	ok  bool
	err error
}

func (f fakeReader) FindByAttemptRef(context.Context, string) (sms.Receipt, bool, error) {
	return f.rc, f.ok, f.err
}

func TestReceiptLookup(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	delivered := sms.Receipt{AttemptRef: "n-a1", MessageID: "m1", Status: sms.ReceiptDelivered, At: at.Add(time.Second)}
	tests := []struct {
		name    string
		reader  fakeReader
		now     time.Time
		want    sms.LookupResult
		wantErr bool
	}{
		{"final receipt", fakeReader{rc: delivered, ok: true}, at, sms.Found("m1", sms.ReceiptDelivered, at.Add(time.Second)), false},
		{"intermediate event", fakeReader{rc: sms.Receipt{MessageID: "m1"}, ok: true}, at, sms.Found("m1", sms.ReceiptNone, time.Time{}), false},
		{"none yet", fakeReader{}, at.Add(time.Minute), sms.Inconclusive("not_visible_yet"), false},
		// A receipt may be dropped or arrive late: its absence never proves "not accepted".
		{"none at the window", fakeReader{}, at.Add(5 * time.Minute), sms.Inconclusive("no_receipt"), false},
		{"none long after the window", fakeReader{}, at.Add(24 * time.Hour), sms.Inconclusive("no_receipt"), false},
		{"reader fails", fakeReader{err: errors.New("boom")}, at.Add(time.Hour), sms.Inconclusive("provider_error"), true},
		// Another provider's receipt under our reference proves nothing about this one's attempt.
		{"another provider's receipt", fakeReader{rc: sms.Receipt{MessageID: "m1", Provider: "sinch", Status: sms.ReceiptDelivered}, ok: true}, at, sms.Inconclusive("receipt_from_another_provider"), false},
		{"this provider's receipt", fakeReader{rc: sms.Receipt{MessageID: "m1", Provider: "endusersms"}, ok: true}, at, sms.Found("m1", sms.ReceiptNone, time.Time{}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := sms.NewReceiptLookup(tc.reader, 5*time.Minute, notifytest.NewClock(tc.now)).ForProvider("endusersms")
			got, err := l.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n-a1", AttemptedAt: at})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReceiptMatches(t *testing.T) {
	rc := sms.Receipt{Provider: "sinch", MessageID: "m1"}
	for _, tc := range []struct {
		provider, messageID string
		want                bool
	}{
		{"sinch", "m1", true}, {"sinch", "", true}, {"", "m1", true},
		{"endusersms", "m1", false}, {"sinch", "m2", false},
	} {
		if got := rc.Matches(tc.provider, tc.messageID); got != tc.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tc.provider, tc.messageID, got, tc.want)
		}
	}
	if legacy := (sms.Receipt{MessageID: "m1"}); !legacy.Matches("sinch", "m1") {
		t.Error("a receipt recorded before providers were does not match")
	}
}

func TestProviderErrorHasNoMessage(t *testing.T) {
	err := &sms.ProviderError{Provider: "sinch", Op: "send", StatusCode: 400, Code: "syntax_invalid_parameter_format", RequestID: "r1"}
	want := "sinch.send: provider answered status 400 code syntax_invalid_parameter_format request r1"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
