package provider_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/shared/adapters/secretparam/secretparamtest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvSimulatorSendsAndLooksUp(t *testing.T) {
	srv, base := smssimtest.Start(t, smssim.Config{})
	p, err := provider.FromEnv(context.Background(), env(map[string]string{"SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": base}), provider.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != provider.Simulator || p.Timeout != provider.DefaultTimeout {
		t.Errorf("provider %+v", p)
	}
	if _, ok := any(p.Lookup).(sms.Sender); ok {
		t.Fatal("the lookup can send")
	}
	out := p.Sender.Send(context.Background(), sms.SendRequest{To: "+15555550100", Body: "hi", AttemptRef: "n1-a1", ValidityPeriod: time.Minute})
	if out.Reason() != notify.ReasonProviderAccepted {
		t.Fatalf("send: %s (%v)", out, out.Err)
	}
	res, err := p.Lookup.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n1-a1", AttemptedAt: time.Now()})
	if err != nil || res.Status != sms.LookupFound || res.MessageID != out.MessageID {
		t.Fatalf("lookup: %+v, %v", res, err)
	}
	if n := len(srv.Accepted("+15555550100")); n != 1 {
		t.Errorf("simulator accepted %d", n)
	}
}

func TestNewEndUserSMSIsWired(t *testing.T) {
	var target, sent string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		target, sent = r.Header.Get("X-Amz-Target"), string(b)
		io.WriteString(w, `{"MessageId":"aws-1"}`)
	}))
	defer fake.Close()
	cfg, err := config.LoadSMS(env(map[string]string{"SMS_PROVIDER": "endusersms", "SMS_ORIGINATION_IDENTITY": "pool-1", "SMS_ENDPOINT": fake.URL,
		"SMS_PROTECT_CONFIGURATION_ID": "protect-0123"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider.New(cfg, provider.Deps{AWS: aws.Config{Region: "eu-west-1", Credentials: aws.AnonymousCredentials{}}})
	if err != nil {
		t.Fatal(err)
	}
	out := p.Sender.Send(context.Background(), sms.SendRequest{To: "+15555550100", Body: "hi", AttemptRef: "n1-a1", ValidityPeriod: time.Minute})
	if out.MessageID != "aws-1" || target != "PinpointSMSVoiceV2.SendTextMessage" {
		t.Fatalf("send: %s (%v), target %q", out, out.Err, target)
	}
	if !strings.Contains(sent, `"ProtectConfigurationId":"protect-0123"`) {
		t.Errorf("the send does not name SMS_PROTECT_CONFIGURATION_ID's protect configuration: %s", sent)
	}
	// Without a receipt reader, lookups are inconclusive, never "not found".
	res, err := p.Lookup.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n1-a1", AttemptedAt: time.Now().Add(-time.Hour)})
	if err == nil || res.Status != sms.LookupInconclusive {
		t.Errorf("lookup without receipts: %+v, %v", res, err)
	}
}

func TestNewSinch(t *testing.T) {
	cfg, err := config.LoadSMS(env(map[string]string{"SMS_PROVIDER": "sinch", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "secret-token", "SINCH_FROM": "Shop"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider.New(cfg, provider.Deps{})
	if err != nil || p.Name != provider.Sinch || p.Visibility != time.Minute {
		t.Fatalf("New: %+v, %v", p, err)
	}
	if _, err := provider.New(provider.Config{Kind: "sinch"}, provider.Deps{}); err == nil || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("incomplete config: %v", err)
	}
}

func TestSinchTokenFromSSM(t *testing.T) {
	const token = "sinch-api-token-from-ssm-0123"
	base := map[string]string{"SMS_PROVIDER": "sinch", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_FROM": "Shop", "SINCH_API_TOKEN_PARAM": "/resetnotify/sinch-api-token"}
	cfg, err := config.LoadSMS(env(base))
	if err != nil {
		t.Fatalf("a token parameter instead of a token: %v", err)
	}
	if cfg.SinchAPIToken != "" {
		t.Fatal("the token came from the environment")
	}
	if _, err := provider.New(cfg, provider.Deps{}); err == nil {
		t.Error("New built a Sinch client without resolving the token")
	}
	tests := []struct {
		name    string
		f       *secretparamtest.SSM
		wantErr bool
	}{
		{"resolved", &secretparamtest.SSM{Value: token}, false},
		{"ssm fails", &secretparamtest.SSM{Err: errors.New("AccessDeniedException")}, true},
		{"too short", &secretparamtest.SSM{Value: "short"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provider.ResolveSecrets(context.Background(), cfg, tc.f)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ResolveSecrets: %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				if tc.f.Value != "" && strings.Contains(err.Error(), tc.f.Value) {
					t.Errorf("error %q holds the value", err)
				}
				return
			}
			if got.SinchAPIToken != token || len(tc.f.Inputs) != 1 {
				t.Errorf("token %q after %d calls", got.SinchAPIToken, len(tc.f.Inputs))
			}
			if _, err := provider.New(got, provider.Deps{}); err != nil {
				t.Errorf("New after ResolveSecrets: %v", err)
			}
		})
	}
	// Neither a token nor a parameter: refused, naming both.
	delete(base, "SINCH_API_TOKEN_PARAM")
	if _, err := config.LoadSMS(env(base)); err == nil || !strings.Contains(err.Error(), "SINCH_API_TOKEN_PARAM") {
		t.Errorf("no token at all: %v", err)
	}
	// Other providers never call SSM.
	f := &secretparamtest.SSM{Value: token}
	if _, err := provider.ResolveSecrets(context.Background(), provider.Config{Kind: provider.Simulator}, f); err != nil || len(f.Inputs) != 0 {
		t.Errorf("simulator: %v after %d calls", err, len(f.Inputs))
	}
}

// TestSinchCallbackTokenFromSSM: with a callback URL, dispatch reads the callback token from
// SSM at cold start (beside the API token) and the adapter asks for reports at the URL with
// it; a callback URL without any token is refused at start-up, naming both variables.
func TestSinchCallbackTokenFromSSM(t *testing.T) {
	const apiToken, cbToken = "sinch-api-token-from-ssm-0123", "sinch-callback-token-0123"
	base := map[string]string{
		"SMS_PROVIDERS": "endusersms,sinch", "SMS_ORIGINATION_IDENTITY": "pool-1", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_FROM": "Shop",
		"SINCH_API_TOKEN_PARAM": "/resetnotify/sinch-api-token", "SINCH_CALLBACK_URL": "https://api.example/v1/provider-events/sinch",
		"SINCH_CALLBACK_TOKEN_PARAM": "/resetnotify/sinch-callback-token",
	}
	cfg, err := config.LoadSMS(env(base))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fmt.Sprint(cfg), cbToken) || !strings.Contains(cfg.String(), "sinch_callback_token=ssm:/resetnotify/sinch-callback-token") {
		t.Errorf("config describes itself as %s", cfg)
	}
	f := &secretparamtest.SSM{ByName: map[string]string{"/resetnotify/sinch-api-token": apiToken, "/resetnotify/sinch-callback-token": cbToken}}
	got, err := provider.ResolveSecrets(context.Background(), cfg, f)
	if err != nil || got.SinchCallbackToken != cbToken || got.SinchAPIToken != apiToken || len(f.Inputs) != 2 {
		t.Fatalf("ResolveSecrets: %v; callback token %q after %d calls", err, got.SinchCallbackToken, len(f.Inputs))
	}
	if _, err := provider.New(got.One(provider.Sinch), provider.Deps{}); err != nil {
		t.Errorf("New after ResolveSecrets: %v", err)
	}
	if _, err := provider.New(cfg.One(provider.Sinch), provider.Deps{}); err == nil {
		t.Error("New built a Sinch client whose callback token was not resolved")
	}
	delete(base, "SINCH_CALLBACK_TOKEN_PARAM")
	if _, err := config.LoadSMS(env(base)); err == nil || !strings.Contains(err.Error(), "SINCH_CALLBACK_TOKEN_PARAM") || !strings.Contains(err.Error(), "SINCH_CALLBACK_TOKEN ") {
		t.Errorf("a callback URL without a token: %v", err)
	}
	// Without a callback URL the token is not read: no reports are asked for.
	delete(base, "SINCH_CALLBACK_URL")
	cfg, _ = config.LoadSMS(env(base))
	f = &secretparamtest.SSM{ByName: map[string]string{"/resetnotify/sinch-api-token": apiToken}}
	if _, err := provider.ResolveSecrets(context.Background(), cfg, f); err != nil || len(f.Inputs) != 1 {
		t.Errorf("no callback URL: %v after %d calls", err, len(f.Inputs))
	}
}

// TestConfigNamesTheAdapters checks that package config, which parses SMS_PROVIDER without
// linking the adapters, knows them by their own names and minimum validity periods.
func TestConfigNamesTheAdapters(t *testing.T) {
	for _, tc := range []struct{ config, adapter string }{
		{config.SMSSimulator, provider.Simulator}, {config.SMSEndUserSMS, provider.EndUserSMS}, {config.SMSSinch, provider.Sinch}, {config.SMSTwilio, provider.Twilio},
	} {
		if tc.config != tc.adapter {
			t.Errorf("config names %q, the adapter %q", tc.config, tc.adapter)
		}
		if got, want := (config.SMS{Kind: tc.config}).MinValidity(), provider.MinValidity(tc.adapter); got != want {
			t.Errorf("%s: config's min validity %s, the adapter's %s", tc.config, got, want)
		}
	}
}

// TestTwilioKeyFromSSM: dispatch and reconcile read the Twilio API key from SSM at cold
// start, and only then build the client; the key never shows in the configuration's
// description or in an error.
func TestTwilioKeyFromSSM(t *testing.T) {
	const token = "SK0123456789abcdef0123456789abcdef:0123456789abcdef0123456789abcdef"
	cfg, err := config.LoadSMS(env(map[string]string{
		"SMS_PROVIDERS": "simulator,twilio", "SMS_SIMULATOR_URL": "http://127.0.0.1:1", "TWILIO_ACCOUNT_SID": "AC1",
		"TWILIO_API_KEY_PARAM": "/resetnotify/twilio-api-key", "TWILIO_FROM": "+15005550006",
		"TWILIO_CALLBACK_URL": "https://api.example/v1/provider-events/twilio",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.NewChain(cfg, provider.Deps{}); err == nil {
		t.Error("NewChain built a Twilio client without resolving the token")
	}
	f := &secretparamtest.SSM{ByName: map[string]string{"/resetnotify/twilio-api-key": token}}
	got, err := provider.ResolveSecrets(context.Background(), cfg, f)
	if err != nil || got.TwilioAPIKey != token || len(f.Inputs) != 1 {
		t.Fatalf("ResolveSecrets: %v; %d calls", err, len(f.Inputs))
	}
	if strings.Contains(got.String(), "0123456789abcdef0123456789abcdef") || strings.Contains(fmt.Sprintf("%#v", got), "0123456789abcdef0123456789abcdef") {
		t.Errorf("the configuration describes its token: %s", got)
	}
	chain, err := provider.NewChain(got, provider.Deps{})
	if err != nil || len(chain) != 2 || chain[1].Name != provider.Twilio {
		t.Fatalf("NewChain: %v, %+v", err, chain)
	}
	if _, ok := any(chain[1].Lookup).(sms.Sender); ok {
		t.Error("the Twilio lookup can send")
	}
	if _, err := provider.ResolveSecrets(context.Background(), cfg, &secretparamtest.SSM{Value: "short"}); err == nil || strings.Contains(err.Error(), "short") {
		t.Errorf("a short token: %v", err)
	}
	// The auth token put in the key's parameter is no key: the client is not built.
	const authToken = "fedcba9876543210fedcba9876543210"
	wrong, err := provider.ResolveSecrets(context.Background(), cfg, &secretparamtest.SSM{Value: authToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.NewChain(wrong, provider.Deps{}); err == nil || strings.Contains(err.Error(), authToken) {
		t.Errorf("an auth token as the API key: %v", err)
	}
}
