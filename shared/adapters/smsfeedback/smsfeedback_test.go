package smsfeedback_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/smstest"
	"github.com/resetnotify/resetnotify/shared/adapters/smsfeedback"
)

// TestEndUserSMSPutsMessageFeedback: a conversion reaches PutMessageFeedback, signed for
// sms-voice, with the message ID and RECEIVED; another provider's message is not reported.
func TestEndUserSMSPutsMessageFeedback(t *testing.T) {
	f := smstest.NewProvider(t, smstest.Reply(200, map[string]string{"Content-Type": "application/x-amz-json-1.0"},
		`{"MessageId":"msg-1","MessageFeedbackStatus":"RECEIVED"}`))
	api := pinpointsmsvoicev2.New(pinpointsmsvoicev2.Options{Region: "eu-west-1", BaseEndpoint: aws.String(f.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", Source: "test"}, nil
		})})
	fb := smsfeedback.EndUserSMS{API: api}
	if err := fb.Converted(context.Background(), smsfeedback.ProviderEndUserSMS, "msg-1"); err != nil {
		t.Fatal(err)
	}
	if err := fb.Converted(context.Background(), smsfeedback.ProviderSimulator, "sim-1"); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1 (the other provider's message is not reported)", len(reqs))
	}
	r := reqs[0]
	if target := r.Header.Get("X-Amz-Target"); target != "PinpointSMSVoiceV2.PutMessageFeedback" {
		t.Errorf("X-Amz-Target %q", target)
	}
	if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "/eu-west-1/sms-voice/aws4_request") {
		t.Errorf("Authorization %q is not a SigV4 signature for sms-voice", auth)
	}
	var got map[string]string
	if err := json.Unmarshal(r.Body, &got); err != nil || got["MessageId"] != "msg-1" || got["MessageFeedbackStatus"] != "RECEIVED" || len(got) != 2 {
		t.Errorf("body %s (%v), want exactly MessageId msg-1 and RECEIVED", r.Body, err)
	}
}

func TestEndUserSMSFailureIsAnError(t *testing.T) {
	f := smstest.NewProvider(t, smstest.Reply(404, map[string]string{"Content-Type": "application/x-amz-json-1.0"},
		`{"__type":"com.amazonaws.pinpointsmsvoicev2#ResourceNotFoundException","Message":"no such message"}`))
	api := pinpointsmsvoicev2.New(pinpointsmsvoicev2.Options{Region: "eu-west-1", BaseEndpoint: aws.String(f.URL), Credentials: aws.AnonymousCredentials{}})
	if err := (smsfeedback.EndUserSMS{API: api}).Converted(context.Background(), smsfeedback.ProviderEndUserSMS, "msg-x"); err == nil {
		t.Error("a refused feedback returned no error")
	}
}

// TestSimulatorRecordsFeedback: the simulator records the feedback on the message, without a
// bearer token; an unknown message is an error.
func TestSimulatorRecordsFeedback(t *testing.T) {
	sim := smssim.New(smssim.Config{Token: "send-token"})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); srv.Close() })
	id := smssimSend(t, srv.URL, "send-token")
	fb := smsfeedback.Simulator{URL: srv.URL}
	if err := fb.Converted(context.Background(), smsfeedback.ProviderSimulator, id); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range sim.Messages() {
		if m.MessageID == id {
			found = m.Feedback == "RECEIVED"
		}
	}
	if !found {
		t.Errorf("the simulator did not record the feedback: %+v", sim.Messages())
	}
	if err := fb.Converted(context.Background(), smsfeedback.ProviderSimulator, "no-such"); err == nil {
		t.Error("feedback on an unknown message returned no error")
	}
}

// smssimSend sends one message through the simulator's API and returns its ID.
func smssimSend(t *testing.T, base, token string) string {
	t.Helper()
	body := `{"to":"+447700900123","body":"code 123456","client_ref":"n-1-a1","validity_seconds":60}`
	req := httptest.NewRequest("POST", base+"/messages", strings.NewReader(body))
	req.RequestURI = ""
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		MessageID string `json:"message_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.MessageID == "" {
		t.Fatalf("send: %d %v", resp.StatusCode, err)
	}
	return out.MessageID
}
