package stacktest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/resetnotify/resetnotify/infra/awscount"
)

// CommitThenFail is SDK middleware (for aws.Config.APIOptions) that lets the first try of each
// matching call reach the service and commit, then reports a connection reset instead of the
// response, so the SDK's retryer sends the same request again: the way a response lost on
// the wire makes a committed conditional write fail its condition on the retry. Ops names the
// matching calls; empty matches every call.
type CommitThenFail struct {
	Ops []awscount.Op

	mu       sync.Mutex
	injected map[awscount.Op]int
}

type tryCount struct{}

// Add registers the middleware on stack; pass it in APIOptions.
func (f *CommitThenFail) Add(stack *middleware.Stack) error {
	err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("stacktest.MarkCall",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awscount.Op{Service: awsmiddleware.GetServiceID(ctx), Operation: awsmiddleware.GetOperationName(ctx)}
			if f.matches(op) {
				ctx = middleware.WithStackValue(ctx, tryCount{}, new(atomic.Int32))
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	if err != nil {
		return err
	}
	// After the retry middleware, so it runs once per try.
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("stacktest.CommitThenFail",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			tries, ok := middleware.GetStackValue(ctx, tryCount{}).(*atomic.Int32)
			if !ok || err != nil || tries.Add(1) != 1 {
				return out, md, err
			}
			f.count(awscount.Op{Service: awsmiddleware.GetServiceID(ctx), Operation: awsmiddleware.GetOperationName(ctx)})
			return out, md, &smithyhttp.RequestSendError{Err: errors.New("read tcp 127.0.0.1: connection reset by peer (injected after the call committed)")}
		}), "Retry", middleware.After)
}

func (f *CommitThenFail) matches(op awscount.Op) bool {
	if len(f.Ops) == 0 {
		return true
	}
	for _, o := range f.Ops {
		if o == op {
			return true
		}
	}
	return false
}

func (f *CommitThenFail) count(op awscount.Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.injected == nil {
		f.injected = map[awscount.Op]int{}
	}
	f.injected[op]++
}

// Injected returns how many committed calls of op were reported as failed.
func (f *CommitThenFail) Injected(op awscount.Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[op]
}
