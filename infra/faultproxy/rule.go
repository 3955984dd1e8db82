package faultproxy

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Kind is what a rule does to a request it applies to.
type Kind string

// The fault kinds. Of the rules that match a request and whose rate roll fires, in the order
// set, every modifier (KindLatency, KindSQSDelay, KindNoCondition) applies, and the first of the
// other kinds, the outcome, if any: a request can be delayed, have its condition dropped and
// be forwarded twice, but never be both throttled and reset.
const (
	// KindThrottle answers the service's throttling error in its protocol's shape without
	// forwarding: DynamoDB ProvisionedThroughputExceededException (400), S3 SlowDown (503),
	// every other service ThrottlingException (400). The SDK classifies each as a throttle
	// and retries it.
	KindThrottle Kind = "throttle"
	// KindError500 answers 500 InternalServerError (S3 and SQS query: InternalError) without
	// forwarding. The SDK retries it.
	KindError500 Kind = "error500"
	// KindLatency waits Latency before forwarding (After: after the answer came back, before
	// it is written to the caller).
	KindLatency Kind = "latency"
	// KindDropResponse forwards the request, lets it commit, and closes the caller's
	// connection without an answer: committed, yet unknown to the caller.
	KindDropResponse Kind = "drop-response"
	// KindReset resets the caller's connection (TCP RST) without forwarding; with After, once
	// the request was forwarded and committed.
	KindReset Kind = "reset"
	// KindSQSDuplicate forwards an SQS SendMessage or SendMessageBatch twice: every message it
	// carries is delivered twice. The caller gets the first answer.
	KindSQSDuplicate Kind = "sqs-duplicate"
	// KindSQSDelay adds Latency, in whole seconds (at least 1, at most SQS's 900 in all), to the
	// DelaySeconds of an SQS SendMessage or of every entry of a SendMessageBatch: the message
	// becomes visible late.
	KindSQSDelay Kind = "sqs-delay"
	// KindKill sends SIGKILL to the Lambda function process that made the request (its
	// AWS_LAMBDA_FUNCTION_NAME must match Function). Without After the request is never
	// forwarded. With After it is forwarded and committed, and the process is killed before the
	// answer reaches it, or, with a Latency, that long after the answer was written (so the
	// function dies in its next step, e.g. the provider call after its lease).
	KindKill Kind = "kill"
	// KindNoCondition is no platform fault but the negative control of a game day: it forwards
	// a DynamoDB PutItem, UpdateItem or DeleteItem with its ConditionExpression made always true
	// (OR-ed with attribute_not_exists of an attribute no item has; every placeholder stays in
	// use), so the conditional writes the design relies on no longer guard anything.
	KindNoCondition Kind = "no-condition"
)

// Kinds lists every Kind.
var Kinds = []Kind{KindThrottle, KindError500, KindLatency, KindDropResponse, KindReset, KindSQSDuplicate, KindSQSDelay, KindKill, KindNoCondition}

// Rule scripts one fault. A request matches a rule when every field that is set matches; the
// zero value of a field matches everything.
type Rule struct {
	// Service is the service as the proxy identifies it: the SigV4 signing name of the
	// request (dynamodb, sqs, kms, ssm, s3, sts, lambda, monitoring, logs, events,
	// execute-api...), except that DynamoDB Streams requests are "dynamodbstreams". Empty:
	// every service.
	Service string
	// Operations are the operation names (PutItem, SendMessage, Sign...). Empty: every one.
	Operations []string
	// Function matches the Lambda function that made the request: its process's
	// AWS_LAMBDA_FUNCTION_NAME equals Function or contains it ("DispatchFunction" matches
	// "resetnotify-e2e-DispatchFunction-1A2B"). A request from a process that is no Lambda
	// function does not match a rule that names one. Required for KindKill.
	Function string
	// Match, when set, must occur in the request body (e.g. a table name, or a value only the
	// lease's UpdateItem carries).
	Match string
	// Kind is the fault.
	Kind Kind
	// Rate is the share of matching requests the fault is applied to, in (0, 1]; 0 means 1.
	Rate float64
	// For is how long the rule stays in force, from when it was set; 0 means until cleared.
	For time.Duration
	// Latency is the added latency (KindLatency), the added visibility delay (KindSQSDelay), or
	// the wait between the answer and the kill (KindKill with After).
	Latency time.Duration
	// After applies the fault once the request was forwarded (KindLatency, KindReset,
	// KindKill); other kinds ignore it.
	After bool
	// Limit, when above 0, is the most times the rule's fault is applied.
	Limit int
	// All (KindKill) kills, with the requester, every other process of its function: a
	// function's whole pool of warm processes, whose caches all go with it.
	All bool
}

// ruleJSON is Rule on the wire: durations as Go duration strings ("2m0s"), as a person types
// them in curl.
type ruleJSON struct {
	Service    string   `json:"service,omitempty"`
	Operations []string `json:"operations,omitempty"`
	Function   string   `json:"function,omitempty"`
	Match      string   `json:"match,omitempty"`
	Kind       Kind     `json:"kind"`
	Rate       float64  `json:"rate,omitempty"`
	For        string   `json:"for,omitempty"`
	Latency    string   `json:"latency,omitempty"`
	After      bool     `json:"after,omitempty"`
	Limit      int      `json:"limit,omitempty"`
	All        bool     `json:"all,omitempty"`
}

// MarshalJSON writes r with its durations as strings.
func (r Rule) MarshalJSON() ([]byte, error) {
	w := ruleJSON{Service: r.Service, Operations: r.Operations, Function: r.Function, Match: r.Match,
		Kind: r.Kind, Rate: r.Rate, After: r.After, Limit: r.Limit, All: r.All}
	if r.For != 0 {
		w.For = r.For.String()
	}
	if r.Latency != 0 {
		w.Latency = r.Latency.String()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a rule whose durations are strings such as "90s".
func (r *Rule) UnmarshalJSON(b []byte) error {
	var w ruleJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Rule{Service: w.Service, Operations: w.Operations, Function: w.Function, Match: w.Match,
		Kind: w.Kind, Rate: w.Rate, After: w.After, Limit: w.Limit, All: w.All}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"for", w.For, &r.For}, {"latency", w.Latency, &r.Latency}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return fmt.Errorf("rule %s: %w", d.name, err)
		}
		*d.to = v
	}
	return nil
}

// Validate reports what makes r unusable.
func (r Rule) Validate() error {
	if !slices.Contains(Kinds, r.Kind) {
		return fmt.Errorf("rule: unknown kind %q (one of %v)", r.Kind, Kinds)
	}
	if r.Rate < 0 || r.Rate > 1 {
		return fmt.Errorf("rule: rate %v is not in [0, 1]", r.Rate)
	}
	if r.For < 0 || r.Latency < 0 || r.Limit < 0 {
		return fmt.Errorf("rule: negative for, latency or limit")
	}
	switch r.Kind {
	case KindLatency, KindSQSDelay:
		if r.Latency <= 0 {
			return fmt.Errorf("rule: %s needs a latency", r.Kind)
		}
	case KindKill:
		if r.Function == "" {
			return fmt.Errorf("rule: kill needs a function")
		}
	}
	if r.All && r.Kind != KindKill {
		return fmt.Errorf("rule: all applies to kill only")
	}
	if (r.Kind == KindSQSDuplicate || r.Kind == KindSQSDelay) && r.Service != "" && r.Service != "sqs" {
		return fmt.Errorf("rule: %s applies to sqs only", r.Kind)
	}
	if r.Kind == KindNoCondition && r.Service != "" && r.Service != "dynamodb" {
		return fmt.Errorf("rule: %s applies to dynamodb only", r.Kind)
	}
	return nil
}

// Counts is what the proxy did since it started (or since its counts were reset).
type Counts struct {
	// Requests counts the AWS requests received, by service and operation.
	Requests []OpCount `json:"requests"`
	// Forwarded counts the requests sent to the emulator, duplicates included.
	Forwarded []OpCount `json:"forwarded"`
	// Faults counts the faults injected, by service, operation, kind and function.
	Faults []FaultCount `json:"faults"`
}

// OpCount is a count of requests of one operation.
type OpCount struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
	Count     int64  `json:"count"`
}

// FaultCount is a count of faults of one kind injected into one operation's requests, from
// one function ("" when the request came from no Lambda function or was not attributed).
type FaultCount struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
	Kind      Kind   `json:"kind"`
	Function  string `json:"function,omitempty"`
	Count     int64  `json:"count"`
}

// ByKind sums the faults by kind.
func (c Counts) ByKind() map[Kind]int64 {
	m := map[Kind]int64{}
	for _, f := range c.Faults {
		m[f.Kind] += f.Count
	}
	return m
}

// TotalFaults is the number of faults injected.
func (c Counts) TotalFaults() int64 {
	var n int64
	for _, f := range c.Faults {
		n += f.Count
	}
	return n
}

// RequestsOf is the number of requests received for service and operation ("" for every
// operation).
func (c Counts) RequestsOf(service, operation string) int64 {
	return sumOps(c.Requests, service, operation)
}

// ForwardedOf is the number of requests forwarded for service and operation ("" for every
// operation).
func (c Counts) ForwardedOf(service, operation string) int64 {
	return sumOps(c.Forwarded, service, operation)
}

func sumOps(ops []OpCount, service, operation string) int64 {
	var n int64
	for _, o := range ops {
		if o.Service == service && (operation == "" || o.Operation == operation) {
			n += o.Count
		}
	}
	return n
}
