package intake_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/wire/intake"
)

type fakeParams struct {
	value string
	err   error
	got   *ssm.GetParameterInput
}

func (f *fakeParams) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.got = in
	if f.err != nil {
		return nil, f.err
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String(f.value)}}, nil
}

func TestPepper(t *testing.T) {
	ctx := context.Background()
	local := config.Config{DestinationPepper: []byte("local-pepper-0123456"), DestinationPepperParam: "/ignored"}
	f := &fakeParams{value: "from-ssm-0123456789"}
	if p, err := intake.Pepper(ctx, local, f); err != nil || string(p) != "local-pepper-0123456" || f.got != nil {
		t.Errorf("local pepper: %q %v (ssm called: %v)", p, err, f.got != nil)
	}
	remote := config.Config{DestinationPepperParam: "/resetnotify/destination-pepper"}
	p, err := intake.Pepper(ctx, remote, f)
	if err != nil || string(p) != "from-ssm-0123456789" {
		t.Fatalf("ssm pepper: %q %v", p, err)
	}
	if aws.ToString(f.got.Name) != "/resetnotify/destination-pepper" || !aws.ToBool(f.got.WithDecryption) {
		t.Errorf("GetParameter input %+v", f.got)
	}
	for name, tc := range map[string]struct {
		cfg config.Config
		f   *fakeParams
	}{
		"none":     {config.Config{}, &fakeParams{}},
		"ssm down": {remote, &fakeParams{err: errors.New("throttled")}},
		"short":    {remote, &fakeParams{value: "short"}},
	} {
		if _, err := intake.Pepper(ctx, tc.cfg, tc.f); err == nil {
			t.Errorf("%s: no error", name)
		} else if tc.f.value != "" && strings.Contains(err.Error(), tc.f.value) {
			t.Errorf("%s: error %q shows the parameter value", name, err)
		}
	}
}

func TestFingerprintKey(t *testing.T) {
	ctx := context.Background()
	local := config.Config{FingerprintKey: []byte("local-fingerprint-key-0123456789abcdef"), FingerprintKeyParam: "/ignored"}
	f := &fakeParams{value: "fingerprint-key-from-ssm-0123456789abc"}
	if k, err := intake.FingerprintKey(ctx, local, f); err != nil || string(k) != "local-fingerprint-key-0123456789abcdef" || f.got != nil {
		t.Errorf("local key: %q %v (ssm called: %v)", k, err, f.got != nil)
	}
	remote := config.Config{FingerprintKeyParam: "/resetnotify/request-fingerprint-key"}
	k, err := intake.FingerprintKey(ctx, remote, f)
	if err != nil || string(k) != "fingerprint-key-from-ssm-0123456789abc" {
		t.Fatalf("ssm key: %q %v", k, err)
	}
	if aws.ToString(f.got.Name) != "/resetnotify/request-fingerprint-key" || !aws.ToBool(f.got.WithDecryption) {
		t.Errorf("GetParameter input %+v", f.got)
	}
	for _, tc := range []struct {
		name string
		cfg  config.Config
		f    *fakeParams
	}{
		{"none", config.Config{}, &fakeParams{}},
		{"ssm down", remote, &fakeParams{err: errors.New("throttled")}},
		{"shorter than 32 bytes", remote, &fakeParams{value: "fingerprint-key-too-short"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := intake.FingerprintKey(ctx, tc.cfg, tc.f)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.f.value != "" && strings.Contains(err.Error(), tc.f.value) {
				t.Errorf("error %q shows the parameter value", err)
			}
		})
	}
}
