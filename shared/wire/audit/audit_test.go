package audit_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/audit"
	"github.com/resetnotify/resetnotify/shared/wire/wiretest"
)

func TestNewHandler(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"defaults", map[string]string{"AUDIT_TABLE": "audit"}, ""},
		{"retention", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_RETENTION_DAYS": "30"}, ""},
		{"no table", map[string]string{}, "AUDIT_TABLE is required"},
		{"bad retention", map[string]string{"AUDIT_TABLE": "audit", "AUDIT_RETENTION_DAYS": "soon"}, "AUDIT_RETENTION_DAYS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", "us-east-1")
			var out bytes.Buffer
			h, err := wire.Build(context.Background(), audit.Function, wiretest.Env(tc.env), &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Writer.Table != "audit" || h.Retention < 24*time.Hour {
				t.Errorf("handler = %+v", h)
			}
		})
	}
}

// TestActorIsTheLambdaFunction checks that the entries' actor is the function's name and
// version as Lambda sets them.
func TestActorIsTheLambdaFunction(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	env := map[string]string{"AUDIT_TABLE": "audit", "AWS_LAMBDA_FUNCTION_NAME": "stack-AuditFunction-1", "AWS_LAMBDA_FUNCTION_VERSION": "7"}
	h, err := wire.Build(context.Background(), audit.Function, wiretest.Env(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if h.Function != "stack-AuditFunction-1" || h.FunctionVersion != "7" {
		t.Errorf("actor %q version %q", h.Function, h.FunctionVersion)
	}
}
