package endusersms_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/endusersms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

const (
	number = "+447700900123"
	body   = "Your code is 918273. SECRET"
	ref    = "01JC0000000000000000000000-a1"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// wireInput is SendTextMessage's JSON body as the service receives it.
type wireInput struct {
	DestinationPhoneNumber string
	MessageBody            string
	OriginationIdentity    string
	MessageType            string
	ConfigurationSetName   string
	ProtectConfigurationId string
	Context                map[string]string
	TimeToLive             int
	MessageFeedbackEnabled bool
}

// answer answers as the service does: an AWS JSON body and a request ID, and header.
func answer(status int, header map[string]string, body string) http.HandlerFunc {
	h := map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amzn-RequestId": "req-1"}
	for k, v := range header {
		h[k] = v
	}
	return smstest.Reply(status, h, body)
}

func awsError(status int, typ, extra string) http.HandlerFunc {
	return answer(status, nil, fmt.Sprintf(`{"__type":"com.amazonaws.pinpointsmsvoicev2#%s","Message":"destination %s refused"%s}`, typ, number, extra))
}

// client returns a real SDK client with the SDK's default retryer (three attempts), so the
// tests show that Send itself switches retries off.
func client(endpoint string) *pinpointsmsvoicev2.Client {
	return pinpointsmsvoicev2.New(pinpointsmsvoicev2.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
		}),
	})
}

func TestSendClassifies(t *testing.T) {
	smstest.SendSuite{
		Cases: append([]smstest.SendCase{
			{Name: "200", Handler: answer(200, nil, `{"MessageId":"aws-msg-1"}`), Class: sms.ClassAccepted, Reason: notify.ReasonProviderAccepted, MessageID: "aws-msg-1"},
			{Name: "200 garbage body", Handler: answer(200, nil, `{"MessageId":`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "200 without an ID", Handler: answer(200, nil, `{}`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "ThrottlingException", Handler: awsError(400, "ThrottlingException", ""), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, Code: "ThrottlingException"},
			{Name: "ServiceQuotaExceededException", Handler: awsError(402, "ServiceQuotaExceededException", `,"Reason":"MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"`), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, Code: "ServiceQuotaExceededException/MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"},
			{Name: "429 with Retry-After", Handler: answer(429, map[string]string{"Retry-After": "4"}, `{}`), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderThrottled, Code: "UnknownError", RetryAfter: 4 * time.Second},
			{Name: "ExpiredTokenException", Handler: awsError(400, "ExpiredTokenException", ""), Class: sms.ClassNotAccepted, Reason: notify.ReasonProviderUnavailable, Code: "ExpiredTokenException"},
			{Name: "ValidationException", Handler: awsError(400, "ValidationException", `,"Reason":"INVALID_PARAMETER"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "ValidationException/INVALID_PARAMETER"},
			{Name: "ValidationException, country not enabled: the next provider may serve it", Handler: awsError(400, "ValidationException", `,"Reason":"COUNTRY_NOT_ENABLED"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "ValidationException/COUNTRY_NOT_ENABLED", Failover: true},
			{Name: "ValidationException, sender ID not registered", Handler: awsError(400, "ValidationException", `,"Reason":"SENDER_ID_NOT_REGISTERED"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "ValidationException/SENDER_ID_NOT_REGISTERED", Failover: true},
			{Name: "ConflictException, country blocked by our protect configuration: no failover", Handler: awsError(409, "ConflictException", `,"Reason":"DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "ConflictException/DESTINATION_COUNTRY_BLOCKED_BY_PROTECT_CONFIGURATION"},
			{Name: "AccessDeniedException", Handler: awsError(403, "AccessDeniedException", `,"Reason":"ACCOUNT_DISABLED"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "AccessDeniedException/ACCOUNT_DISABLED"},
			{Name: "ResourceNotFoundException", Handler: awsError(404, "ResourceNotFoundException", `,"ResourceType":"configuration-set"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "ResourceNotFoundException/configuration-set"},
			{Name: "ConflictException opted out", Handler: awsError(409, "ConflictException", `,"Reason":"DESTINATION_PHONE_NUMBER_OPTED_OUT"`), Class: sms.ClassRejected, Reason: notify.ReasonProviderRejected, Code: "ConflictException/DESTINATION_PHONE_NUMBER_OPTED_OUT"},
			{Name: "InternalServerException", Handler: awsError(500, "InternalServerException", ""), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous, Code: "InternalServerException"},
			{Name: "502 html", Handler: answer(502, nil, `<html>bad gateway</html>`), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous},
			{Name: "503 is not documented as not processed", Handler: awsError(503, "ServiceUnavailable", ""), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous, Code: "ServiceUnavailable"},
			{Name: "504", Handler: answer(504, nil, ``), Class: sms.ClassUnknown, Reason: notify.ReasonProviderAmbiguous, Code: "UnknownError"},
		}, smstest.TransportCases()...),
		HangTimeout: 300 * time.Millisecond,
		Send: func(t *testing.T, endpoint string, timeout time.Duration) sms.Outcome {
			s, err := endusersms.NewSender(client(endpoint), endusersms.Config{
				OriginationIdentity:  "pool-abc",
				ConfigurationSetName: "resetnotify-events",
				// The template's protect configuration: every send must name it.
				ProtectConfigurationID: "protect-0123456789abcdef",
				Timeout:                timeout,
				Clock:                  notifytest.NewClock(t0),
			})
			if err != nil {
				t.Fatal(err)
			}
			return s.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 89*time.Second + 999*time.Millisecond})
		},
		CheckRequest: func(t *testing.T, r smstest.Request) {
			if target, typ := r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"); target != "PinpointSMSVoiceV2.SendTextMessage" || typ != "application/x-amz-json-1.0" {
				t.Errorf("X-Amz-Target %q, Content-Type %q", target, typ)
			}
			if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/eu-west-1/sms-voice/aws4_request") {
				t.Errorf("Authorization %q is not a SigV4 signature for sms-voice", auth)
			}
			want := wireInput{
				DestinationPhoneNumber: number,
				MessageBody:            body,
				OriginationIdentity:    "pool-abc",
				MessageType:            "TRANSACTIONAL",
				ConfigurationSetName:   "resetnotify-events",
				ProtectConfigurationId: "protect-0123456789abcdef",
				Context:                map[string]string{"attempt_ref": ref, "configuration_set": "resetnotify-events"},
				TimeToLive:             89,
				MessageFeedbackEnabled: true,
			}
			smstest.CheckBody(t, r, want)
		},
		Retried: "the SDK",
	}.Run(t)
}

func TestTimeToLive(t *testing.T) {
	tests := []struct {
		name     string
		validity time.Duration
		wantTTL  int // 0: refused without a call
	}{
		{"rounded down", 5*time.Second + 999*time.Millisecond, 5},
		{"clamped to 72 hours", 100 * time.Hour, endusersms.MaxTTLSeconds},
		{"under the 5 s minimum", 4*time.Second + 999*time.Millisecond, 0},
		{"zero", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := smstest.NewProvider(t, answer(200, nil, `{"MessageId":"m"}`))
			s, _ := endusersms.NewSender(endusersms.NewClient(aws.Config{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}}, f.URL), endusersms.Config{OriginationIdentity: "pool-abc"})
			out := s.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: tc.validity})
			reqs := f.Requests()
			if tc.wantTTL == 0 {
				if out.Class != sms.ClassNotAccepted || !errors.Is(out.Err, sms.ErrValidityTooShort) || len(reqs) != 0 {
					t.Fatalf("outcome %s (%v) after %d requests, want a refusal without a call", out, out.Err, len(reqs))
				}
				return
			}
			if out.Class != sms.ClassAccepted || len(reqs) != 1 {
				t.Fatalf("outcome %s (%v), %d requests", out, out.Err, len(reqs))
			}
			var got wireInput
			json.Unmarshal(reqs[0].Body, &got)
			if got.TimeToLive != tc.wantTTL || got.ConfigurationSetName != "" || got.ProtectConfigurationId != "" {
				t.Errorf("TimeToLive %d, ConfigurationSetName %q, ProtectConfigurationId %q; want %d and none", got.TimeToLive, got.ConfigurationSetName, got.ProtectConfigurationId, tc.wantTTL)
			}
		})
	}
}

func TestNewClientDoesNotRetry(t *testing.T) {
	f := smstest.NewProvider(t, awsError(500, "InternalServerException", ""))
	c := endusersms.NewClient(aws.Config{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 5}, f.URL)
	_, err := c.SendTextMessage(context.Background(), &pinpointsmsvoicev2.SendTextMessageInput{DestinationPhoneNumber: aws.String(number), OriginationIdentity: aws.String("p")})
	if err == nil || len(f.Requests()) != 1 {
		t.Fatalf("err %v after %d requests, want one failed request", err, len(f.Requests()))
	}
}

func TestNewSenderValidates(t *testing.T) {
	if _, err := endusersms.NewSender(nil, endusersms.Config{OriginationIdentity: "p"}); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := endusersms.NewSender(client("http://127.0.0.1:1"), endusersms.Config{}); err == nil {
		t.Error("empty origination identity accepted")
	}
}

type receipts map[string]sms.Receipt

func (r receipts) FindByAttemptRef(_ context.Context, ref string) (sms.Receipt, bool, error) {
	rc, ok := r[ref]
	return rc, ok, nil
}

func TestLookupReadsReceipts(t *testing.T) {
	clock := notifytest.NewClock(t0.Add(time.Minute))
	l := endusersms.NewLookup(receipts{ref: {AttemptRef: ref, MessageID: "aws-msg-1", Status: sms.ReceiptDelivered, At: t0}}, 5*time.Minute, clock)
	var only sms.LookupOnly = sms.OnlyLookup(l)
	res, err := only.Lookup(context.Background(), sms.LookupRequest{AttemptRef: ref, AttemptedAt: t0})
	if err != nil || res.Reason() != notify.ReasonReconciledAccepted || res.Receipt != sms.ReceiptDelivered {
		t.Fatalf("found: %+v, %v", res, err)
	}
	res, _ = only.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "other-a1", AttemptedAt: t0})
	if res.Reason() != notify.ReasonReconcileInconclusive {
		t.Errorf("within the window: %+v", res)
	}
	// The service has no lookup API and its events can be lost or late: without a receipt the
	// answer stays inconclusive however long after the attempt, so nothing is re-sent.
	for _, wait := range []time.Duration{5 * time.Minute, 24 * time.Hour} {
		clock.Advance(wait)
		res, _ = only.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "other-a1", AttemptedAt: t0})
		if res.Reason() != notify.ReasonReconcileInconclusive || res.Detail != "no_receipt" {
			t.Errorf("%s after the window: %+v, want inconclusive/no_receipt", wait, res)
		}
	}
}
