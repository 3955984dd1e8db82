// Package awscount counts the AWS API calls that clients make, per service and operation, for
// the benchmarks' cost figures and the fault tests; no Lambda links it.
package awscount

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Op names one AWS API operation, e.g. {"DynamoDB", "UpdateItem"}.
type Op struct {
	Service   string
	Operation string
}

// String is "Service.Operation".
func (o Op) String() string { return o.Service + "." + o.Operation }

// Counter counts the API calls made by every client built from an aws.Config it was added to
// (Instrument), per service and operation. Each call counts once, whatever the SDK's retries
// do underneath: it is the count the code asked for, the one a bill per request follows. A
// call the SDK refuses before sending anything (parameter validation) is not counted. It is
// safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[Op]int64
}

// NewCounter returns a counter at zero.
func NewCounter() *Counter { return &Counter{counts: map[Op]int64{}} }

// counterID names the middleware in the SDK's stack.
const counterID = "resetnotify.CountCalls"

// Instrument adds the counting middleware to cfg's APIOptions, so every client built from cfg
// afterwards (awsclient.DynamoDB, awsclient.SQS, ...) is counted.
func (c *Counter) Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), c.addTo)
}

// addTo registers the middleware at the end of the initialize step, where the SDK has already
// put the service and operation names in the context.
func (c *Counter) addTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(counterID,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.add(Op{Service: awsmiddleware.GetServiceID(ctx), Operation: awsmiddleware.GetOperationName(ctx)})
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

func (c *Counter) add(op Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[op]++
}

// Counts returns a copy of the counts so far.
func (c *Counter) Counts() map[Op]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Op]int64, len(c.counts))
	for op, n := range c.counts {
		out[op] = n
	}
	return out
}

// Total returns the number of calls counted so far.
func (c *Counter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t int64
	for _, n := range c.counts {
		t += n
	}
	return t
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

// FormatCounts renders counts as "Service.Operation:value" pairs sorted by name and joined by
// commas, each value divided by per (1 for raw counts) with two decimals, e.g.
// "DynamoDB.GetItem:1.00,SQS.SendMessage:1.50".
func FormatCounts(counts map[Op]int64, per float64) string {
	ops := make([]Op, 0, len(counts))
	for op := range counts {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b Op) int { return strings.Compare(a.String(), b.String()) })
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s:%.2f", op, float64(counts[op])/per)
	}
	return strings.Join(parts, ",")
}
