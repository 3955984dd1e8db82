// Package secretparamtest is a fake SSM Parameter Store for the tests of code that reads its
// secrets through secretparam.
package secretparamtest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/resetnotify/resetnotify/shared/adapters/secretparam"
)

// SSM answers GetParameter with Value, or with Err when it is set, and records every input.
// With ByName set, a parameter's value is ByName[name] instead, and a name it does not hold
// is not found. It is not safe for concurrent use.
type SSM struct {
	Value  string
	ByName map[string]string
	Err    error
	Inputs []*ssm.GetParameterInput
}

var _ secretparam.API = (*SSM)(nil)

// GetParameter records in and answers with the parameter in.Name holding Value, or with Err.
func (f *SSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.Inputs = append(f.Inputs, in)
	if f.Err != nil {
		return nil, f.Err
	}
	v := f.Value
	if f.ByName != nil {
		var ok bool
		if v, ok = f.ByName[aws.ToString(in.Name)]; !ok {
			return nil, &ssmtypes.ParameterNotFound{Message: aws.String("not found")}
		}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

// Last returns the latest input, or nil when GetParameter was never called.
func (f *SSM) Last() *ssm.GetParameterInput {
	if len(f.Inputs) == 0 {
		return nil
	}
	return f.Inputs[len(f.Inputs)-1]
}
