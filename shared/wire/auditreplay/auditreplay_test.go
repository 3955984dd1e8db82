package auditreplay_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/auditreplay"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

func TestNewReplayer(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"defaults", map[string]string{"AUDIT_TABLE": "audit", "NOTIFICATIONS_TABLE": "notif"}, ""},
		{"no notifications table", map[string]string{"AUDIT_TABLE": "audit"}, "NOTIFICATIONS_TABLE is required"},
		{"bad retention", map[string]string{"AUDIT_TABLE": "audit", "NOTIFICATIONS_TABLE": "notif", "AUDIT_RETENTION_DAYS": "0"}, "AUDIT_RETENTION_DAYS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", "us-east-1")
			var out bytes.Buffer
			r, err := wire.Build(context.Background(), auditreplay.Function, wiretest.Env(tc.env), &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Writer.Table != "audit" || r.NotificationsTable != "notif" || r.Streams == nil || r.Records == nil {
				t.Errorf("replayer = %+v", r)
			}
		})
	}
}
