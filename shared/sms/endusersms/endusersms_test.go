package endusersms_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/sms/endusersms"
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
	Context                map[string]string
	TimeToLive             int
}

type recorded struct {
	target, contentType, auth string
	body                      []byte
}

type fake struct {
	mu   sync.Mutex
	reqs []recorded
	url  string
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func newFake(t *testing.T, h http.HandlerFunc) *fake {
	f := &fake{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"), r.Header.Get("Authorization"), b})
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func answer(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-RequestId", "req-1")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
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

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

func TestSendClassifies(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		closedPort bool
		class      sms.Class
		reason     notify.Reason
		messageID  string
		code       string
		retryAfter time.Duration
		hangs      bool // the case waits for the client timeout
	}{
		{name: "200", handler: answer(200, nil, `{"MessageId":"aws-msg-1"}`), class: sms.ClassAccepted, reason: notify.ReasonProviderAccepted, messageID: "aws-msg-1"},
		{name: "200 garbage body", handler: answer(200, nil, `{"MessageId":`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "200 without an ID", handler: answer(200, nil, `{}`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "ThrottlingException", handler: awsError(400, "ThrottlingException", ""), class: sms.ClassNotAccepted, reason: notify.ReasonProviderThrottled, code: "ThrottlingException"},
		{name: "ServiceQuotaExceededException", handler: awsError(402, "ServiceQuotaExceededException", `,"Reason":"MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"`), class: sms.ClassNotAccepted, reason: notify.ReasonProviderThrottled, code: "ServiceQuotaExceededException/MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"},
		{name: "429 with Retry-After", handler: answer(429, map[string]string{"Retry-After": "4"}, `{}`), class: sms.ClassNotAccepted, reason: notify.ReasonProviderThrottled, code: "UnknownError", retryAfter: 4 * time.Second},
		{name: "ExpiredTokenException", handler: awsError(400, "ExpiredTokenException", ""), class: sms.ClassNotAccepted, reason: notify.ReasonProviderUnavailable, code: "ExpiredTokenException"},
		{name: "ValidationException", handler: awsError(400, "ValidationException", `,"Reason":"INVALID_PARAMETER"`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "ValidationException/INVALID_PARAMETER"},
		{name: "AccessDeniedException", handler: awsError(403, "AccessDeniedException", `,"Reason":"ACCOUNT_DISABLED"`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "AccessDeniedException/ACCOUNT_DISABLED"},
		{name: "ResourceNotFoundException", handler: awsError(404, "ResourceNotFoundException", `,"ResourceType":"configuration-set"`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "ResourceNotFoundException/configuration-set"},
		{name: "ConflictException opted out", handler: awsError(409, "ConflictException", `,"Reason":"DESTINATION_PHONE_NUMBER_OPTED_OUT"`), class: sms.ClassRejected, reason: notify.ReasonProviderRejected, code: "ConflictException/DESTINATION_PHONE_NUMBER_OPTED_OUT"},
		{name: "InternalServerException", handler: awsError(500, "InternalServerException", ""), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous, code: "InternalServerException"},
		{name: "502 html", handler: answer(502, nil, `<html>bad gateway</html>`), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous},
		{name: "503 is not documented as not processed", handler: awsError(503, "ServiceUnavailable", ""), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous, code: "ServiceUnavailable"},
		{name: "504", handler: answer(504, nil, ``), class: sms.ClassUnknown, reason: notify.ReasonProviderAmbiguous, code: "UnknownError"},
		{name: "connection closed after the request was read", handler: func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			conn.Close()
		}, class: sms.ClassUnknown, reason: notify.ReasonConnectionLost},
		{name: "slower than the timeout", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, class: sms.ClassUnknown, reason: notify.ReasonProviderTimeout, hangs: true},
		{name: "dial refused", closedPort: true, class: sms.ClassNotAccepted, reason: notify.ReasonProviderUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := closedPort(t)
			var f *fake
			if !tc.closedPort {
				f = newFake(t, tc.handler)
				endpoint = f.url
			}
			timeout := 10 * time.Second
			if tc.hangs {
				timeout = 300 * time.Millisecond
			}
			s, err := endusersms.NewSender(client(endpoint), endusersms.Config{
				OriginationIdentity:  "pool-abc",
				ConfigurationSetName: "resetnotify-events",
				Timeout:              timeout,
				Clock:                notifytest.NewClock(t0),
			})
			if err != nil {
				t.Fatal(err)
			}
			out := s.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: 89*time.Second + 999*time.Millisecond})
			if out.Class != tc.class || out.Reason() != tc.reason {
				t.Fatalf("outcome %s (reason %s, err %v), want %s / %s", out, out.Reason(), out.Err, tc.class, tc.reason)
			}
			if out.MessageID != tc.messageID || out.Code != tc.code || out.RetryAfter != tc.retryAfter {
				t.Errorf("outcome %s: want message ID %q, code %q, retry after %s", out, tc.messageID, tc.code, tc.retryAfter)
			}
			if out.Err != nil {
				if msg := out.Err.Error(); strings.Contains(msg, "447700900123") || strings.Contains(msg, "SECRET") {
					t.Errorf("error leaks a secret: %s", msg)
				}
			} else if tc.class != sms.ClassAccepted {
				t.Error("no diagnostic error")
			}
			if f == nil {
				return
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want exactly 1: a send is never retried by the SDK", len(reqs))
			}
			r := reqs[0]
			if r.target != "PinpointSMSVoiceV2.SendTextMessage" || r.contentType != "application/x-amz-json-1.0" {
				t.Errorf("X-Amz-Target %q, Content-Type %q", r.target, r.contentType)
			}
			if !strings.HasPrefix(r.auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(r.auth, "/eu-west-1/sms-voice/aws4_request") {
				t.Errorf("Authorization %q is not a SigV4 signature for sms-voice", r.auth)
			}
			var got wireInput
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			want := wireInput{
				DestinationPhoneNumber: number,
				MessageBody:            body,
				OriginationIdentity:    "pool-abc",
				MessageType:            "TRANSACTIONAL",
				ConfigurationSetName:   "resetnotify-events",
				Context:                map[string]string{"attempt_ref": ref},
				TimeToLive:             89,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SendTextMessage body (-want +got):\n%s", diff)
			}
		})
	}
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
			f := newFake(t, answer(200, nil, `{"MessageId":"m"}`))
			s, _ := endusersms.NewSender(endusersms.NewClient(aws.Config{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}}, f.url), endusersms.Config{OriginationIdentity: "pool-abc"})
			out := s.Send(context.Background(), sms.SendRequest{To: number, Body: body, AttemptRef: ref, ValidityPeriod: tc.validity})
			reqs := f.requests()
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
			json.Unmarshal(reqs[0].body, &got)
			if got.TimeToLive != tc.wantTTL || got.ConfigurationSetName != "" {
				t.Errorf("TimeToLive %d, ConfigurationSetName %q; want %d and none", got.TimeToLive, got.ConfigurationSetName, tc.wantTTL)
			}
		})
	}
}

func TestNewClientDoesNotRetry(t *testing.T) {
	f := newFake(t, awsError(500, "InternalServerException", ""))
	c := endusersms.NewClient(aws.Config{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 5}, f.url)
	_, err := c.SendTextMessage(context.Background(), &pinpointsmsvoicev2.SendTextMessageInput{DestinationPhoneNumber: aws.String(number), OriginationIdentity: aws.String("p")})
	if err == nil || len(f.requests()) != 1 {
		t.Fatalf("err %v after %d requests, want one failed request", err, len(f.requests()))
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
