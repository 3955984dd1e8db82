package config_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/shared/config"
)

func TestLoadSMS(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    config.SMS
		wantErr []string
	}{
		{
			name: "simulator with defaults",
			env:  map[string]string{"SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": "http://127.0.0.1:8025"},
			want: config.SMS{Chain: []string{"simulator"}, Kind: "simulator", Timeout: 5 * time.Second, SimulatorURL: "http://127.0.0.1:8025", SinchBaseURL: config.DefaultSinchBaseURL},
		},
		{
			name: "simulator with timeout and visibility",
			env:  map[string]string{"SMS_PROVIDER": "Simulator", "SMS_SIMULATOR_URL": "http://127.0.0.1:8025", "SMS_SIMULATOR_TOKEN": "t", "SMS_TIMEOUT": "800ms", "SMS_VISIBILITY_SECONDS": "3"},
			want: config.SMS{Chain: []string{"simulator"}, Kind: "simulator", Timeout: 800 * time.Millisecond, Visibility: 3 * time.Second, SimulatorURL: "http://127.0.0.1:8025", SimulatorToken: "t", SinchBaseURL: config.DefaultSinchBaseURL},
		},
		{
			name: "endusersms",
			env:  map[string]string{"SMS_PROVIDER": "endusersms", "SMS_ORIGINATION_IDENTITY": "pool-1", "SMS_CONFIGURATION_SET": "cs", "SMS_ENDPOINT": "http://127.0.0.1:9"},
			want: config.SMS{Chain: []string{"endusersms"}, Kind: "endusersms", Timeout: 5 * time.Second, Visibility: 5 * time.Minute, OriginationIdentity: "pool-1", ConfigurationSetName: "cs", Endpoint: "http://127.0.0.1:9", SinchBaseURL: config.DefaultSinchBaseURL},
		},
		{
			name: "sinch",
			env:  map[string]string{"SMS_PROVIDER": "sinch", "SINCH_BASE_URL": "https://eu.sms.api.sinch.com", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "tok", "SINCH_FROM": "Shop", "SINCH_CALLBACK_URL": "https://h/cb", "SINCH_CALLBACK_TOKEN": "callback-token-0123"},
			want: config.SMS{Chain: []string{"sinch"}, Kind: "sinch", Timeout: 5 * time.Second, Visibility: time.Minute, SinchBaseURL: "https://eu.sms.api.sinch.com", SinchServicePlanID: "p", SinchAPIToken: "tok", SinchFrom: "Shop", SinchCallbackURL: "https://h/cb", SinchCallbackToken: "callback-token-0123"},
		},
		{
			name: "sinch callback token from SSM",
			env:  map[string]string{"SMS_PROVIDER": "sinch", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "tok", "SINCH_FROM": "Shop", "SINCH_CALLBACK_URL": "https://h/cb", "SINCH_CALLBACK_TOKEN_PARAM": "/p"},
			want: config.SMS{Chain: []string{"sinch"}, Kind: "sinch", Timeout: 5 * time.Second, Visibility: time.Minute, SinchBaseURL: config.DefaultSinchBaseURL, SinchServicePlanID: "p", SinchAPIToken: "tok", SinchFrom: "Shop", SinchCallbackURL: "https://h/cb", SinchCallbackTokenParam: "/p"},
		},
		{name: "sinch callback without a token", env: map[string]string{"SMS_PROVIDER": "sinch", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "tok", "SINCH_FROM": "Shop", "SINCH_CALLBACK_URL": "https://h/cb"},
			wantErr: []string{"SINCH_CALLBACK_TOKEN or SINCH_CALLBACK_TOKEN_PARAM is required"}},
		{name: "sinch callback with a query and a short token", env: map[string]string{"SMS_PROVIDER": "sinch", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "tok", "SINCH_FROM": "Shop", "SINCH_CALLBACK_URL": "https://h/cb?token=x", "SINCH_CALLBACK_TOKEN": "short"},
			wantErr: []string{"SINCH_CALLBACK_URL must be", "SINCH_CALLBACK_TOKEN must be at least"}},
		{name: "no provider", env: map[string]string{}, wantErr: []string{"SMS_PROVIDERS is not set"}},
		{name: "unknown provider", env: map[string]string{"SMS_PROVIDER": "plivo"}, wantErr: []string{`"plivo" is not one of`}},
		{name: "twilio without anything", env: map[string]string{"SMS_PROVIDER": "twilio"},
			wantErr: []string{"TWILIO_ACCOUNT_SID is required", "TWILIO_API_KEY or TWILIO_API_KEY_PARAM", "exactly one of TWILIO_FROM and TWILIO_MESSAGING_SERVICE_SID", "TWILIO_CALLBACK_URL must be"}},
		{name: "twilio with two senders and a callback query", env: map[string]string{"SMS_PROVIDER": "twilio", "TWILIO_ACCOUNT_SID": "AC1", "TWILIO_API_KEY_PARAM": "/p",
			"TWILIO_FROM": "+15005550006", "TWILIO_MESSAGING_SERVICE_SID": "MG1", "TWILIO_CALLBACK_URL": "https://h/cb?attempt=x"},
			wantErr: []string{"exactly one of TWILIO_FROM", "TWILIO_CALLBACK_URL must be"}},
		{name: "twilio with an auth token where the API key goes", env: map[string]string{"SMS_PROVIDER": "twilio", "TWILIO_ACCOUNT_SID": "AC1",
			"TWILIO_API_KEY": "0123456789abcdef0123456789abcdef", "TWILIO_FROM": "+15005550006", "TWILIO_CALLBACK_URL": "https://h/cb"},
			wantErr: []string{"TWILIO_API_KEY: the Twilio API key must be written <key SID>:<key secret>"}},
		{name: "twilio with a short key secret", env: map[string]string{"SMS_PROVIDER": "twilio", "TWILIO_ACCOUNT_SID": "AC1",
			"TWILIO_API_KEY": "SK1:short", "TWILIO_FROM": "+15005550006", "TWILIO_CALLBACK_URL": "https://h/cb"},
			wantErr: []string{"TWILIO_API_KEY: the Twilio API key secret must be at least 16 bytes"}},
		{
			name: "twilio",
			env: map[string]string{"SMS_PROVIDERS": "twilio,simulator", "SMS_SIMULATOR_URL": "http://a", "TWILIO_ACCOUNT_SID": "AC1", "TWILIO_API_KEY_PARAM": "/p",
				"TWILIO_MESSAGING_SERVICE_SID": "MG1", "TWILIO_CALLBACK_URL": "https://h/v1/provider-events/twilio"},
			want: config.SMS{Chain: []string{"twilio", "simulator"}, Kind: "twilio", Timeout: 5 * time.Second, Visibility: time.Minute, SimulatorURL: "http://a", SinchBaseURL: config.DefaultSinchBaseURL,
				TwilioBaseURL: config.DefaultTwilioBaseURL, TwilioAccountSID: "AC1", TwilioAPIKeyParam: "/p", TwilioMessagingServiceSID: "MG1",
				TwilioCallbackURL: "https://h/v1/provider-events/twilio"},
		},
		{name: "simulator without URL", env: map[string]string{"SMS_PROVIDER": "simulator"}, wantErr: []string{"SMS_SIMULATOR_URL is required"}},
		{name: "endusersms without identity", env: map[string]string{"SMS_PROVIDER": "endusersms"}, wantErr: []string{"SMS_ORIGINATION_IDENTITY is required"}},
		{name: "sinch without credentials", env: map[string]string{"SMS_PROVIDER": "sinch", "SINCH_FROM": "x"}, wantErr: []string{"SINCH_SERVICE_PLAN_ID", "SINCH_API_TOKEN", "SINCH_API_TOKEN_PARAM"}},
		{
			name: "a chain, with the longest visibility window of its providers",
			env:  map[string]string{"SMS_PROVIDERS": " Sinch, simulator ,simulator2", "SMS_SIMULATOR_URL": "http://a", "SMS_SIMULATOR2_URL": "http://b", "SINCH_SERVICE_PLAN_ID": "p", "SINCH_API_TOKEN": "tok", "SINCH_FROM": "Shop"},
			want: config.SMS{Chain: []string{"sinch", "simulator", "simulator2"}, Kind: "sinch", Timeout: 5 * time.Second, Visibility: time.Minute, SimulatorURL: "http://a", Simulator2URL: "http://b", SinchBaseURL: config.DefaultSinchBaseURL, SinchServicePlanID: "p", SinchAPIToken: "tok", SinchFrom: "Shop"},
		},
		{
			name: "the single provider setting, the same as the chain",
			env:  map[string]string{"SMS_PROVIDERS": "simulator", "SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": "http://a"},
			want: config.SMS{Chain: []string{"simulator"}, Kind: "simulator", Timeout: 5 * time.Second, SimulatorURL: "http://a", SinchBaseURL: config.DefaultSinchBaseURL},
		},
		{name: "both settings, different", env: map[string]string{"SMS_PROVIDERS": "simulator,simulator2", "SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": "http://a", "SMS_SIMULATOR2_URL": "http://b"}, wantErr: []string{"SMS_PROVIDERS and SMS_PROVIDER are both set"}},
		{name: "a provider twice", env: map[string]string{"SMS_PROVIDERS": "simulator,Simulator", "SMS_SIMULATOR_URL": "http://a"}, wantErr: []string{"names simulator twice"}},
		{name: "second simulator without URL", env: map[string]string{"SMS_PROVIDERS": "simulator,simulator2", "SMS_SIMULATOR_URL": "http://a"}, wantErr: []string{"SMS_SIMULATOR2_URL is required"}},
		{name: "bad timeout and visibility", env: map[string]string{"SMS_PROVIDER": "simulator", "SMS_SIMULATOR_URL": "http://x", "SMS_TIMEOUT": "5", "SMS_VISIBILITY_SECONDS": "-1"}, wantErr: []string{"SMS_TIMEOUT", "SMS_VISIBILITY_SECONDS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.LoadSMS(env(tc.env))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("LoadSMS accepted: %+v", got)
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

func TestSMSNeverPrintsSecrets(t *testing.T) {
	cfg := config.SMS{Kind: config.SMSSinch, SinchAPIToken: "sinch-secret-token-0123", SimulatorToken: "sim-secret-token-0123", SinchServicePlanID: "plan",
		SinchCallbackToken: "callback-secret-token-0123", TwilioAPIKey: "SK0123:twilio-key-secret-token-0123"}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("sms", "config", cfg)
	for _, out := range []string{buf.String(), cfg.String(), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg)} {
		if strings.Contains(out, "secret-token") {
			t.Errorf("output holds a token: %s", out)
		}
		if !strings.Contains(out, "plan") {
			t.Errorf("output lost the harmless fields: %s", out)
		}
	}
}
