package secretparam_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/secretparam"
	"github.com/resetnotify/resetnotify/shared/secretparam/secretparamtest"
)

func TestRead(t *testing.T) {
	const secret = "sinch-token-0123456789-secret"
	tests := []struct {
		name    string
		f       *secretparamtest.SSM
		wantErr bool
	}{
		{"decrypted value", &secretparamtest.SSM{Value: secret}, false},
		{"ssm fails", &secretparamtest.SSM{Err: errors.New("AccessDeniedException")}, true},
		{"too short", &secretparamtest.SSM{Value: "short-secret"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := secretparam.Read(context.Background(), tc.f, "/resetnotify/x", 16)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Read = %q, %v; want error %v", v, err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "/resetnotify/x") || strings.Contains(err.Error(), tc.f.Value) && tc.f.Value != "" {
					t.Errorf("error %q must name the parameter and not hold its value", err)
				}
				return
			}
			if string(v) != secret || aws.ToString(tc.f.Last().Name) != "/resetnotify/x" || !aws.ToBool(tc.f.Last().WithDecryption) {
				t.Errorf("Read = %q with input %+v", v, tc.f.Last())
			}
		})
	}
}
