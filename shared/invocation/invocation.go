// Package invocation names the function invocation that makes a transition, the
// notify.Actor every transition writes onto the record (and the audit trail copies from
// there), from the Lambda runtime's context.
//
// The function is the Lambda function's name and version as the runtime sets them
// (AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_VERSION, read by lambdacontext at start);
// the request ID is the invocation's, from the context. Outside Lambda (unit tests, the local
// stack's in-process runtime) there is no function name, and the component's own name
// ("intake", "dispatch", ...) stands in for it.
package invocation

import (
	"context"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// Of returns the actor of the invocation ctx belongs to, for the component named component.
func Of(ctx context.Context, component string) notify.Actor {
	return of(ctx, component, lambdacontext.FunctionName, lambdacontext.FunctionVersion)
}

// For returns a function that gives Of(ctx, component), as notify.Service.Actor wants it.
func For(component string) func(context.Context) notify.Actor {
	return func(ctx context.Context) notify.Actor { return Of(ctx, component) }
}

func of(ctx context.Context, component, function, version string) notify.Actor {
	a := notify.Actor{Function: function, Version: version}
	if a.Function == "" {
		a.Function = component
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		a.RequestID = lc.AwsRequestID
	}
	return a
}
