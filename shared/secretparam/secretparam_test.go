package secretparam_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/resetnotify/resetnotify/shared/secretparam"
)

// fakeSSM answers GetParameter with value or err and remembers the input.
type fakeSSM struct {
	value string
	err   error
	got   *ssm.GetParameterInput
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.got = in
	if f.err != nil {
		return nil, f.err
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String(f.value)}}, nil
}

func TestRead(t *testing.T) {
	const secret = "sinch-token-0123456789-secret"
	tests := []struct {
		name    string
		f       *fakeSSM
		wantErr bool
	}{
		{"decrypted value", &fakeSSM{value: secret}, false},
		{"ssm fails", &fakeSSM{err: errors.New("AccessDeniedException")}, true},
		{"too short", &fakeSSM{value: "short-secret"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := secretparam.Read(context.Background(), tc.f, "/resetnotify/x", 16)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Read = %q, %v; want error %v", v, err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "/resetnotify/x") || strings.Contains(err.Error(), tc.f.value) && tc.f.value != "" {
					t.Errorf("error %q must name the parameter and not hold its value", err)
				}
				return
			}
			if string(v) != secret || aws.ToString(tc.f.got.Name) != "/resetnotify/x" || !aws.ToBool(tc.f.got.WithDecryption) {
				t.Errorf("Read = %q with input %+v", v, tc.f.got)
			}
		})
	}
}
