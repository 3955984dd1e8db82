// Package secretparam reads the functions' secrets from SSM Parameter Store SecureStrings,
// once, at cold start. In AWS no secret is an environment variable: a variable names the
// parameter, and its value is decrypted in memory. Locally a secret may be given inline
// instead; Resolve is the one place that chooses between the two. Errors name the parameter,
// never its value.
package secretparam

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// API is the part of the SSM client that Read uses; *ssm.Client satisfies it.
type API interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ API = (*ssm.Client)(nil)

// Read returns the decrypted value of the parameter name, which must hold at least minLen
// bytes.
func Read(ctx context.Context, api API, name string, minLen int) ([]byte, error) {
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("secretparam.read %s: %w", name, err)
	}
	if out.Parameter == nil || len(aws.ToString(out.Parameter.Value)) < minLen {
		return nil, fmt.Errorf("secretparam.read %s: the parameter must hold at least %d bytes", name, minLen)
	}
	return []byte(aws.ToString(out.Parameter.Value)), nil
}

// ErrUnset means a secret was given neither inline nor by parameter.
var ErrUnset = errors.New("the secret is given neither inline nor by an SSM parameter")

// Resolve returns a secret as configuration gives it, the one rule every function follows:
// the inline value when set (local runs; configuration checked it when it read it), else the
// SSM SecureString named param, read with decryption and holding at least minLen bytes (AWS).
// With neither it returns ErrUnset, which a caller whose secret is optional (a webhook that is
// off without its token) tells apart with errors.Is. It never reads SSM for an inline secret.
func Resolve(ctx context.Context, api API, inline []byte, param string, minLen int) ([]byte, error) {
	switch {
	case len(inline) > 0:
		return inline, nil
	case param == "":
		return nil, ErrUnset
	}
	return Read(ctx, api, param, minLen)
}
