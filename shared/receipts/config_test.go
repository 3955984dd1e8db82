package receipts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/receipts"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		needTable bool
		want      receipts.Config
		wantErr   []string
	}{
		{name: "defaults", env: map[string]string{receipts.EnvTable: "r"}, needTable: true,
			want: receipts.Config{Table: "r", Retention: receipts.DefaultRetention}},
		{name: "everything", env: map[string]string{receipts.EnvTable: "r", receipts.EnvRetentionDays: "3", receipts.EnvWebhookToken: token},
			want: receipts.Config{Table: "r", Retention: 72 * time.Hour, WebhookToken: []byte(token)}},
		{name: "table optional for readers", want: receipts.Config{Retention: receipts.DefaultRetention}},
		// In AWS the token is an SSM SecureString: the variable names it.
		{name: "token parameter", env: map[string]string{receipts.EnvTable: "r", receipts.EnvWebhookTokenParam: "/resetnotify/simulator-webhook-token"},
			want: receipts.Config{Table: "r", Retention: receipts.DefaultRetention, WebhookTokenParam: "/resetnotify/simulator-webhook-token"}},
		{name: "a local token wins over the parameter", env: map[string]string{receipts.EnvTable: "r", receipts.EnvWebhookToken: token, receipts.EnvWebhookTokenParam: "/p"},
			want: receipts.Config{Table: "r", Retention: receipts.DefaultRetention, WebhookToken: []byte(token)}},
		{name: "missing table", needTable: true, wantErr: []string{receipts.EnvTable}},
		{name: "bad values", env: map[string]string{receipts.EnvTable: "r", receipts.EnvRetentionDays: "0", receipts.EnvWebhookToken: "tiny"},
			wantErr: []string{receipts.EnvRetentionDays, receipts.EnvWebhookToken}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := receipts.ConfigFromEnv(func(k string) string { return tc.env[k] }, tc.needTable)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ConfigFromEnv = %+v, want an error", got)
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
			if got.Table != tc.want.Table || got.Retention != tc.want.Retention || string(got.WebhookToken) != string(tc.want.WebhookToken) {
				t.Errorf("ConfigFromEnv = %+v, want %+v", got, tc.want)
			}
			if strings.Contains(got.String(), token) {
				t.Errorf("String() shows the token: %s", got)
			}
		})
	}
}
