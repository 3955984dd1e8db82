package secretparam_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/adapters/secretparam"
	"github.com/resetnotify/resetnotify/shared/adapters/secretparam/secretparamtest"
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

func TestResolve(t *testing.T) {
	const (
		inline = "inline-secret-0123456789"
		stored = "stored-secret-0123456789"
	)
	tests := []struct {
		name    string
		inline  string
		param   string
		want    string
		wantErr error
		reads   int
	}{
		{name: "inline wins and reads nothing", inline: inline, param: "/p", want: inline},
		{name: "parameter when not inline", param: "/p", want: stored, reads: 1},
		{name: "neither", wantErr: secretparam.ErrUnset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &secretparamtest.SSM{Value: stored}
			v, err := secretparam.Resolve(context.Background(), f, []byte(tc.inline), tc.param, 16)
			if !errors.Is(err, tc.wantErr) || string(v) != tc.want || len(f.Inputs) != tc.reads {
				t.Fatalf("Resolve = %q, %v after %d reads; want %q, %v after %d", v, err, len(f.Inputs), tc.want, tc.wantErr, tc.reads)
			}
			if tc.reads > 0 && (aws.ToString(f.Last().Name) != tc.param || !aws.ToBool(f.Last().WithDecryption)) {
				t.Errorf("read %+v", f.Last())
			}
		})
	}
	// A stored secret is held to the minimum length, and the error names the parameter only.
	_, err := secretparam.Resolve(context.Background(), &secretparamtest.SSM{Value: "short"}, nil, "/p", 16)
	if err == nil || errors.Is(err, secretparam.ErrUnset) || strings.Contains(err.Error(), "short") {
		t.Errorf("short stored secret: %v", err)
	}
}
