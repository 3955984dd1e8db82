package provider_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/dev/smssim"
	"github.com/resetnotify/resetnotify/dev/smssim/smssimtest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/secretparam/secretparamtest"
	"github.com/resetnotify/resetnotify/shared/sms"
	"github.com/resetnotify/resetnotify/shared/sms/provider"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    provider.Config
		wantErr []string
	}{
		{
			name: "simulator with defaults",
			env:  map[string]string{"SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": "http://127.0.0.1:8025"},
			want: provider.Config{Kind: "simulator", Timeout: 5 * time.Second, SimulatorURL: "http://127.0.0.1:8025", SinchBaseURL: provider.DefaultSinchBaseURL},
		},
		{
			name: "simulator with timeout and visibility",
			env:  map[string]string{"SMS_PROVIDER": "Simulator", "SMS_SIMULATOR_URL": "http://127.0.0.1:8025", "SMS_SIMULATOR_TOKEN": "t", "SMS_TIMEOUT": "800ms", "SMS_VISIBILITY_SECONDS": "3"},
			want: provider.Config{Kind: "simulator", Timeout: 800 * time.Millisecond, Visibility: 3 * time.Second, SimulatorURL: "http://127.0.0.1:8025", SimulatorToken: "t", SinchBaseURL: provider.DefaultSinchBaseURL},
		},
		{
			name: "endusersms",
			env:  map[string]string{"SMS_PROVIDER": "endusersms", "SMS_ORIGINATION_IDENTITY": "pool-1", "SMS_CONFIGURATION_SET": "cs", "SMS_ENDPOINT": "http://127.0.0.1:9"},
			want: provider.Config{Kind: "endusersms", Timeout: 5 * time.Second, Visibility: 5 * time.Minute, OriginationIdentity: "pool-1", ConfigurationSetName: "cs", Endpoint: "http://127.0.0.1:9", SinchBaseURL: provider.DefaultSinchBaseURL},
		},
		{
			name: "sinch",
			env:  map[string]string{"SMS_PROVIDER": "sinch", "SINCH_BASE_URL": "https://eu.sms.api.sinch.com", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "tok", "SINCH_FROM": "Shop", "SINCH_CALLBACK_URL": "https://h/cb"},
			want: provider.Config{Kind: "sinch", Timeout: 5 * time.Second, Visibility: time.Minute, SinchBaseURL: "https://eu.sms.api.sinch.com", SinchServicePlanID: "p", SinchAPIToken: "tok", SinchFrom: "Shop", SinchCallbackURL: "https://h/cb"},
		},
		{name: "no provider", env: map[string]string{}, wantErr: []string{"SMS_PROVIDER is not set"}},
		{name: "unknown provider", env: map[string]string{"SMS_PROVIDER": "twilio"}, wantErr: []string{`"twilio" is not one of`}},
		{name: "simulator without URL", env: map[string]string{"SMS_PROVIDER": "simulator"}, wantErr: []string{"SMS_SIMULATOR_URL is required"}},
		{name: "endusersms without identity", env: map[string]string{"SMS_PROVIDER": "endusersms"}, wantErr: []string{"SMS_ORIGINATION_IDENTITY is required"}},
		{name: "sinch without credentials", env: map[string]string{"SMS_PROVIDER": "sinch", "SINCH_FROM": "x"}, wantErr: []string{"SINCH_SERVICE_PLAN_ID", "SINCH_API_TOKEN", "SINCH_API_TOKEN_PARAM"}},
		{name: "bad timeout and visibility", env: map[string]string{"SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": "http://x", "SMS_TIMEOUT": "5", "SMS_VISIBILITY_SECONDS": "-1"}, wantErr: []string{"SMS_TIMEOUT", "SMS_VISIBILITY_SECONDS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provider.ConfigFromEnv(env(tc.env))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ConfigFromEnv accepted: %+v", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

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
	var target string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		target = r.Header.Get("X-Amz-Target")
		io.WriteString(w, `{"MessageId":"aws-1"}`)
	}))
	defer fake.Close()
	cfg, err := provider.ConfigFromEnv(env(map[string]string{"SMS_PROVIDER": "endusersms", "SMS_ORIGINATION_IDENTITY": "pool-1", "SMS_ENDPOINT": fake.URL}))
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
	// Without a receipt reader, lookups are inconclusive, never "not found".
	res, err := p.Lookup.Lookup(context.Background(), sms.LookupRequest{AttemptRef: "n1-a1", AttemptedAt: time.Now().Add(-time.Hour)})
	if err == nil || res.Status != sms.LookupInconclusive {
		t.Errorf("lookup without receipts: %+v, %v", res, err)
	}
}

func TestNewSinch(t *testing.T) {
	cfg, err := provider.ConfigFromEnv(env(map[string]string{"SMS_PROVIDER": "sinch", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "secret-token", "SINCH_FROM": "Shop"}))
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
	cfg, err := provider.ConfigFromEnv(env(base))
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
	if _, err := provider.ConfigFromEnv(env(base)); err == nil || !strings.Contains(err.Error(), "SINCH_API_TOKEN_PARAM") {
		t.Errorf("no token at all: %v", err)
	}
	// Other providers never call SSM.
	f := &secretparamtest.SSM{Value: token}
	if _, err := provider.ResolveSecrets(context.Background(), provider.Config{Kind: provider.Simulator}, f); err != nil || len(f.Inputs) != 0 {
		t.Errorf("simulator: %v after %d calls", err, len(f.Inputs))
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	cfg := provider.Config{Kind: provider.Sinch, SinchAPIToken: "sinch-secret-token-0123", SimulatorToken: "sim-secret-token-0123", SinchServicePlanID: "plan"}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("provider", "config", cfg)
	for _, out := range []string{buf.String(), cfg.String(), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg)} {
		if strings.Contains(out, "secret-token") {
			t.Errorf("output holds a token: %s", out)
		}
		if !strings.Contains(out, "plan") {
			t.Errorf("output lost the harmless fields: %s", out)
		}
	}
}
