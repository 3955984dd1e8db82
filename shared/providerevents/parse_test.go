package providerevents_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/providerevents"
)

// eumEvent returns an AWS End User Messaging SMS event as its event destination publishes it
// (the fields of the AWS "Example event data" page), with edit applied.
func eumEvent(edit func(m map[string]any)) []byte {
	m := map[string]any{
		"eventType":                "TEXT_DELIVERED",
		"eventVersion":             "1.0",
		"eventTimestamp":           t0.Add(7 * time.Second).UnixMilli(),
		"isFinal":                  true,
		"originationPhoneNumber":   origination,
		"destinationPhoneNumber":   destination,
		"isoCountryCode":           "US",
		"mcc":                      "310",
		"mnc":                      "800",
		"messageId":                "aws-msg-1",
		"messageRequestTimestamp":  t0.UnixMilli(),
		"messageEncoding":          "GSM",
		"messageType":              "TRANSACTIONAL",
		"messageStatus":            "DELIVERED",
		"messageStatusDescription": "Message has been accepted by phone",
		"context":                  map[string]any{"attempt_ref": a1},
		"totalMessageParts":        1,
		"totalMessagePrice":        0.00581,
		"totalCarrierFee":          0.003,
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseEndUserSMS(t *testing.T) {
	want := func(status sms.ReceiptStatus, detail string) providerevents.Receipt {
		return providerevents.Receipt{AttemptRef: a1, MessageID: "aws-msg-1", Status: status, At: t0.Add(7 * time.Second), Provider: "endusersms", Detail: detail}
	}
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	tests := []struct {
		name   string
		edit   func(map[string]any)
		want   providerevents.Receipt
		poison bool
	}{
		{name: "delivered", want: want(sms.ReceiptDelivered, "TEXT_DELIVERED")},
		{name: "successful is intermediate", edit: set("eventType", "TEXT_SUCCESSFUL"), want: want(sms.ReceiptNone, "TEXT_SUCCESSFUL")},
		{name: "queued", edit: set("eventType", "TEXT_QUEUED"), want: want(sms.ReceiptNone, "TEXT_QUEUED")},
		{name: "pending", edit: set("eventType", "TEXT_PENDING"), want: want(sms.ReceiptNone, "TEXT_PENDING")},
		{name: "blocked", edit: set("eventType", "TEXT_BLOCKED"), want: want(sms.ReceiptUndelivered, "TEXT_BLOCKED")},
		{name: "ttl expired", edit: set("eventType", "TEXT_TTL_EXPIRED"), want: want(sms.ReceiptUndelivered, "TEXT_TTL_EXPIRED")},
		{name: "carrier unreachable", edit: set("eventType", "TEXT_CARRIER_UNREACHABLE"), want: want(sms.ReceiptUndelivered, "TEXT_CARRIER_UNREACHABLE")},
		{name: "invalid", edit: set("eventType", "TEXT_INVALID"), want: want(sms.ReceiptUndelivered, "TEXT_INVALID")},
		{name: "spam", edit: set("eventType", "TEXT_SPAM"), want: want(sms.ReceiptUndelivered, "TEXT_SPAM")},
		{name: "a failure that is not final yet", edit: func(m map[string]any) { m["eventType"], m["isFinal"] = "TEXT_CARRIER_UNREACHABLE", false },
			want: want(sms.ReceiptNone, "TEXT_CARRIER_UNREACHABLE")},
		{name: "a failure without isFinal is final", edit: func(m map[string]any) { m["eventType"] = "TEXT_UNKNOWN"; delete(m, "isFinal") },
			want: want(sms.ReceiptUndelivered, "TEXT_UNKNOWN")},
		{name: "an unknown text event proves acceptance", edit: set("eventType", "TEXT_SOMETHING_NEW"), want: want(sms.ReceiptNone, "TEXT_SOMETHING_NEW")},
		{name: "voice event", edit: set("eventType", "VOICE_COMPLETED"), poison: true},
		{name: "no context", edit: func(m map[string]any) { delete(m, "context") }, poison: true},
		{name: "another context", edit: set("context", map[string]any{"account": "bar"}), poison: true},
		{name: "a reference not ours", edit: set("context", map[string]any{"attempt_ref": destination}), poison: true},
		{name: "context of numbers", edit: set("context", map[string]any{"attempt_ref": 7}), poison: true},
		{name: "not an object", edit: func(m map[string]any) { clear(m) }, poison: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := providerevents.ParseEndUserSMS(eumEvent(tc.edit))
			if tc.poison {
				if !errors.Is(err, providerevents.ErrPoison) {
					t.Fatalf("ParseEndUserSMS = %+v, %v; want ErrPoison", got, err)
				}
				if strings.Contains(err.Error(), destination) {
					t.Errorf("error quotes the event: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			if s := fmt.Sprintf("%+v", got); strings.Contains(s, destination) || strings.Contains(s, origination) {
				t.Errorf("receipt holds a phone number: %s", s)
			}
		})
	}
	for _, raw := range []string{"", "null", "[]", `{"eventType":`, `"TEXT_DELIVERED"`, strings.Repeat(" ", 9000) + "{}"} {
		if _, err := providerevents.ParseEndUserSMS([]byte(raw)); !errors.Is(err, providerevents.ErrPoison) {
			t.Errorf("ParseEndUserSMS(%.20q) = %v, want ErrPoison", raw, err)
		}
	}
}

func TestParseSimulator(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   providerevents.Receipt
		poison bool
	}{
		{
			name: "delivered",
			body: `{"message_id":"sim-00000001","client_ref":"` + a1 + `","status":"delivered","at":"2026-11-01T12:00:05Z"}`,
			want: providerevents.Receipt{AttemptRef: a1, MessageID: "sim-00000001", Status: sms.ReceiptDelivered, At: t0.Add(5 * time.Second), Provider: "simulator", Detail: "delivered"},
		},
		{
			name: "validity expired",
			body: `{"message_id":"sim-00000002","client_ref":"` + a2 + `","status":"undelivered","reason":"validity_expired","at":"2026-11-01T13:00:05+01:00"}`,
			want: providerevents.Receipt{AttemptRef: a2, MessageID: "sim-00000002", Status: sms.ReceiptUndelivered, At: t0.Add(5 * time.Second), Provider: "simulator", Detail: "validity_expired"},
		},
		{
			name: "accepted",
			body: `{"message_id":"sim-00000003","client_ref":"` + a1 + `","status":"accepted","at":"2026-11-01T12:00:05Z"}`,
			want: providerevents.Receipt{AttemptRef: a1, MessageID: "sim-00000003", Status: sms.ReceiptNone, At: t0.Add(5 * time.Second), Provider: "simulator", Detail: "accepted"},
		},
		{
			name: "free text in the reason is dropped",
			body: `{"message_id":"sim-4","client_ref":"` + a1 + `","status":"undelivered","reason":"number ` + destination + ` is off","at":"2026-11-01T12:00:05Z"}`,
			want: providerevents.Receipt{AttemptRef: a1, MessageID: "sim-4", Status: sms.ReceiptUndelivered, At: t0.Add(5 * time.Second), Provider: "simulator"},
		},
		{
			name: "the second simulated provider",
			body: `{"message_id":"simulator2-00000001","client_ref":"` + a1 + `","status":"delivered","at":"2026-11-01T12:00:05Z","provider":"simulator2"}`,
			want: providerevents.Receipt{AttemptRef: a1, MessageID: "simulator2-00000001", Status: sms.ReceiptDelivered, At: t0.Add(5 * time.Second), Provider: "simulator2", Detail: "delivered"},
		},
		{
			name: "a provider the simulator cannot be is the simulator",
			body: `{"message_id":"sim-00000009","client_ref":"` + a1 + `","status":"delivered","at":"2026-11-01T12:00:05Z","provider":"sinch"}`,
			want: providerevents.Receipt{AttemptRef: a1, MessageID: "sim-00000009", Status: sms.ReceiptDelivered, At: t0.Add(5 * time.Second), Provider: "simulator", Detail: "delivered"},
		},
		{name: "unknown status", body: `{"message_id":"sim-5","client_ref":"` + a1 + `","status":"read"}`, poison: true},
		{name: "no reference", body: `{"message_id":"sim-6","status":"delivered"}`, poison: true},
		{name: "not JSON", body: `client_ref=` + a1, poison: true},
		{name: "empty", body: ``, poison: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := providerevents.ParseSimulator([]byte(tc.body))
			if tc.poison {
				if !errors.Is(err, providerevents.ErrPoison) {
					t.Fatalf("ParseSimulator = %+v, %v; want ErrPoison", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
		})
	}
}
