package invocation

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/resetnotify/resetnotify/shared/notify"
)

func TestOf(t *testing.T) {
	inLambda := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	cases := []struct {
		name              string
		ctx               context.Context
		function, version string
		want              notify.Actor
		text              string
	}{
		{"in Lambda", inLambda, "stack-DispatchFunction-X", "7",
			notify.Actor{Function: "stack-DispatchFunction-X", Version: "7", RequestID: "req-1"}, "stack-DispatchFunction-X:7/req-1"},
		{"no function name: the component", inLambda, "", "",
			notify.Actor{Function: "dispatch", RequestID: "req-1"}, "dispatch:/req-1"},
		{"no invocation", context.Background(), "", "",
			notify.Actor{Function: "dispatch"}, "dispatch:/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := of(tc.ctx, "dispatch", tc.function, tc.version)
			if got != tc.want {
				t.Fatalf("of = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.text {
				t.Errorf("String = %q, want %q", got.String(), tc.text)
			}
			if back := notify.ParseActor(got.String()); back != got {
				t.Errorf("ParseActor(String) = %+v, want %+v", back, got)
			}
		})
	}
}
