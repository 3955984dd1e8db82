package digest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/wire"
	digestwire "github.com/resetnotify/resetnotify/shared/wire/digest"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

func TestNewDigester(t *testing.T) {
	_, pemKey, err := digest.NewLocalKey()
	if err != nil {
		t.Fatal(err)
	}
	local := string(pemKey)
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		period  time.Duration
		kms     bool
	}{
		{"local key, defaults", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_DIGEST_LOCAL_KEY": local}, "", time.Hour, false},
		{"kms, a minute", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_DIGEST_KMS_KEY_ID": "arn:aws:kms:us-east-1:111122223333:key/k", "AUDIT_DIGEST_PERIOD_MINUTES": "1"}, "", time.Minute, true},
		{"no key", map[string]string{"AUDIT_TABLE": "audit"}, "AUDIT_DIGEST_KMS_KEY_ID (in AWS) or AUDIT_DIGEST_LOCAL_KEY (locally) is required", 0, false},
		{"both keys", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_DIGEST_LOCAL_KEY": local, "AUDIT_DIGEST_KMS_KEY_ID": "k"}, "set only one", 0, false},
		{"bad key", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_DIGEST_LOCAL_KEY": "not a key"}, "AUDIT_DIGEST_LOCAL_KEY: not a PEM block", 0, false},
		{"bad period", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_DIGEST_LOCAL_KEY": local, "AUDIT_DIGEST_PERIOD_MINUTES": "7"}, "divides a day", 0, false},
		{"no table", map[string]string{"AUDIT_DIGEST_LOCAL_KEY": local}, "AUDIT_TABLE is required", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", "us-east-1")
			var out bytes.Buffer
			d, err := wire.Build(context.Background(), digestwire.Function, wiretest.Env(tc.env), &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "PRIVATE KEY") {
					t.Errorf("error quotes the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, isKMS := d.Signer.(digest.KMSSigner)
			if d.Table != "audit" || d.Period != tc.period || d.Grace != config.DefaultDigestGrace || isKMS != tc.kms {
				t.Errorf("digester = %+v", d)
			}
			if strings.Contains(out.String(), "PRIVATE KEY") {
				t.Errorf("the log holds the key: %s", out.String())
			}
		})
	}
}
