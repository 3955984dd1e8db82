package config_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/config"
)

const token = "simulator-webhook-token-0123"

func TestAuditRetention(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", config.DefaultAuditRetention, false},
		{"400", 400 * 24 * time.Hour, false},
		{" 30 ", 30 * 24 * time.Hour, false},
		{"0", 0, true},
		{"-1", 0, true},
		{"1.5", 0, true},
		{"forever", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := config.AuditRetention(env(map[string]string{config.EnvAuditRetentionDays: tc.in}))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("AuditRetention(%q) = %s, %v; want %s, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), config.EnvAuditRetentionDays) {
				t.Errorf("error %q does not name the variable", err)
			}
		})
	}
}

func TestLoadReceipts(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		needTable bool
		want      config.Receipts
		wantErr   []string
	}{
		{name: "defaults", env: map[string]string{config.EnvReceiptsTable: "r"}, needTable: true,
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention}},
		{name: "everything", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvReceiptRetentionDays: "3", config.EnvSimulatorWebhookToken: token},
			want: config.Receipts{Table: "r", Retention: 72 * time.Hour, WebhookToken: []byte(token)}},
		{name: "table optional for readers", want: config.Receipts{Retention: config.DefaultReceiptRetention}},
		// In AWS the token is an SSM SecureString: the variable names it.
		{name: "token parameter", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvSimulatorWebhookTokenParam: "/resetnotify/simulator-webhook-token"},
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention, WebhookTokenParam: "/resetnotify/simulator-webhook-token"}},
		{name: "a local token wins over the parameter", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvSimulatorWebhookToken: token, config.EnvSimulatorWebhookTokenParam: "/p"},
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention, WebhookToken: []byte(token)}},
		{name: "sinch callback token", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvSinchCallbackToken: token, config.EnvSinchCallbackTokenParam: "/p"},
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention, SinchToken: []byte(token)}},
		{name: "sinch callback token parameter", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvSinchCallbackTokenParam: "/resetnotify/sinch-callback-token"},
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention, SinchTokenParam: "/resetnotify/sinch-callback-token"}},
		// A rotation: the token being retired, locally or as a parameter.
		{name: "sinch previous token", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvSinchCallbackTokenParam: "/new", config.EnvSinchCallbackTokenPrevious: token},
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention, SinchTokenParam: "/new", SinchPreviousToken: []byte(token)}},
		{name: "sinch previous token parameter", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvSinchCallbackTokenParam: "/new", config.EnvSinchCallbackTokenPreviousParam: "/old"},
			want: config.Receipts{Table: "r", Retention: config.DefaultReceiptRetention, SinchTokenParam: "/new", SinchPreviousTokenParam: "/old"}},
		{name: "missing table", needTable: true, wantErr: []string{config.EnvReceiptsTable}},
		{name: "bad values", env: map[string]string{config.EnvReceiptsTable: "r", config.EnvReceiptRetentionDays: "0", config.EnvSimulatorWebhookToken: "tiny", config.EnvSinchCallbackToken: "tiny", config.EnvSinchCallbackTokenPrevious: "tiny"},
			wantErr: []string{config.EnvReceiptRetentionDays, config.EnvSimulatorWebhookToken, config.EnvSinchCallbackToken, config.EnvSinchCallbackTokenPrevious}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.LoadReceipts(func(k string) string { return tc.env[k] }, tc.needTable)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("LoadReceipts = %+v, want an error", got)
				}
				for _, name := range tc.wantErr {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("error %q does not name %s", err, name)
					}
				}
				if strings.Contains(err.Error(), "tiny") {
					t.Errorf("error %q quotes the token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Table != tc.want.Table || got.Retention != tc.want.Retention || string(got.WebhookToken) != string(tc.want.WebhookToken) ||
				string(got.SinchToken) != string(tc.want.SinchToken) || got.SinchTokenParam != tc.want.SinchTokenParam || got.WebhookTokenParam != tc.want.WebhookTokenParam {
				t.Errorf("LoadReceipts = %+v, want %+v", got, tc.want)
			}
			if strings.Contains(got.String(), token) {
				t.Errorf("String() shows the token: %s", got)
			}
		})
	}
}

func TestLoadLogLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"DEBUG", slog.LevelDebug, false},
		{"warn", slog.LevelWarn, false},
		{" error ", slog.LevelError, false},
		{"verbose", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			c, err := config.Load(env(map[string]string{config.EnvLogLevel: tc.in}), 0)
			if (err != nil) != tc.wantErr || c.LogLevel != tc.want {
				t.Errorf("LOG_LEVEL %q: %v, %v", tc.in, c.LogLevel, err)
			}
			if err != nil && !strings.Contains(err.Error(), config.EnvLogLevel) {
				t.Errorf("error %q does not name %s", err, config.EnvLogLevel)
			}
		})
	}
}

// TestLoadDigestLagBound: the lag bound defaults to 15 minutes, takes 0 to 86400 seconds and
// refuses anything else, naming the variable.
func TestLoadDigestLagBound(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", config.DefaultDigestLagBound, false},
		{"0", 0, false},
		{"120", 2 * time.Minute, false},
		{"86400", 24 * time.Hour, false},
		{"86401", 0, true},
		{"-1", 0, true},
		{"2m", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := config.LoadDigest(env(map[string]string{config.EnvAuditDigestLagBoundSeconds: tc.in}))
			if (err != nil) != tc.wantErr || (err == nil && got.LagBound != tc.want) {
				t.Errorf("LoadDigest(%s=%q) = %s, %v; want %s, error %v", config.EnvAuditDigestLagBoundSeconds, tc.in, got.LagBound, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), config.EnvAuditDigestLagBoundSeconds) {
				t.Errorf("error %q does not name the variable", err)
			}
		})
	}
}

func TestAuditHot(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false}, {"0", 0, false}, {"35", 35 * 24 * time.Hour, false}, {"1", 24 * time.Hour, false},
		{"-1", 0, true}, {"1.5", 0, true}, {"forever", 0, true},
	} {
		got, err := config.AuditHot(env(map[string]string{config.EnvAuditHotDays: tc.in}))
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("AuditHot(%q) = %s, %v; want %s, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), config.EnvAuditHotDays) {
			t.Errorf("AuditHot(%q): the error does not name %s: %v", tc.in, config.EnvAuditHotDays, err)
		}
	}
}
