package samtemplate

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// Function is what a local run needs of an AWS::Serverless::Function: its timeout and memory,
// Globals applied, and SAM's defaults (3 s, 128 MB) where neither says.
type Function struct {
	ID       string
	Timeout  time.Duration
	MemoryMB int
}

// Function returns the settings of function id.
func (t *Template) Function(id string) (Function, error) {
	r, ok := t.Resources[id]
	if !ok || r.Type != "AWS::Serverless::Function" {
		return Function{}, fmt.Errorf("samtemplate: no function %s", id)
	}
	timeout, err := t.functionInt(r, "Timeout", 3)
	if err != nil {
		return Function{}, fmt.Errorf("samtemplate: %s Timeout: %w", id, err)
	}
	memory, err := t.functionInt(r, "MemorySize", 128)
	if err != nil {
		return Function{}, fmt.Errorf("samtemplate: %s MemorySize: %w", id, err)
	}
	return Function{ID: id, Timeout: time.Duration(timeout) * time.Second, MemoryMB: memory}, nil
}

func (t *Template) functionInt(r Resource, key string, def int) (int, error) {
	if v, ok := r.Properties[key]; ok {
		return t.Int(v)
	}
	if v, ok := t.Globals["Function"][key]; ok {
		return t.Int(v)
	}
	return def, nil
}

// Queue is an AWS::SQS::Queue's settings as CreateQueue attributes, and its dead-letter queue.
type Queue struct {
	ID string
	// Attributes holds the template's VisibilityTimeout, MessageRetentionPeriod,
	// DelaySeconds, ReceiveMessageWaitTimeSeconds and MaximumMessageSize, where set.
	Attributes map[string]string
	// DeadLetterQueue is the logical ID of the RedrivePolicy's target; empty without one.
	DeadLetterQueue string
	MaxReceiveCount int
}

// queueAttributes are the queue properties that are CreateQueue attributes of the same name.
var queueAttributes = []string{"VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds", "MaximumMessageSize"}

// Queues returns every queue of the template, by logical ID.
func (t *Template) Queues() ([]Queue, error) {
	var qs []Queue
	for _, id := range t.Of("AWS::SQS::Queue") {
		props := t.Resources[id].Properties
		q := Queue{ID: id, Attributes: map[string]string{}}
		for _, a := range queueAttributes {
			if v, ok := props[a]; ok {
				n, err := t.Int(v)
				if err != nil {
					return nil, fmt.Errorf("samtemplate: %s %s: %w", id, a, err)
				}
				q.Attributes[a] = strconv.Itoa(n)
			}
		}
		if rp, ok := props["RedrivePolicy"].(map[string]any); ok {
			dlq, ok := getAttTarget(rp["deadLetterTargetArn"], "Arn")
			if !ok {
				return nil, fmt.Errorf("samtemplate: %s RedrivePolicy.deadLetterTargetArn is not !GetAtt <Queue>.Arn", id)
			}
			n, err := t.Int(rp["maxReceiveCount"])
			if err != nil {
				return nil, fmt.Errorf("samtemplate: %s maxReceiveCount: %w", id, err)
			}
			q.DeadLetterQueue, q.MaxReceiveCount = dlq, n
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// getAttTarget returns X of a !GetAtt X.<attr>.
func getAttTarget(v any, attr string) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	args, ok := m["Fn::GetAtt"].([]any)
	if !ok || len(args) != 2 || args[1] != attr {
		return "", false
	}
	id, ok := args[0].(string)
	return id, ok
}

// Source is an event source of a function: an SQS queue, a DynamoDB stream or a schedule.
type Source struct {
	Function string
	Event    string
	Type     string // SQS, DynamoDB, Schedule
	// Resource is the logical ID of the queue or table.
	Resource string
	// BatchSize and Window are the mapping's BatchSize and MaximumBatchingWindowInSeconds,
	// with Lambda's defaults (10 for SQS, 100 for DynamoDB; no window).
	BatchSize int
	Window    time.Duration
	// MaxRetries is a stream mapping's MaximumRetryAttempts: how often a failing record is
	// retried before the batch goes to the on-failure destination; -1 (Lambda's default) is
	// until the record expires.
	MaxRetries int
	// Every is a schedule's rate.
	Every time.Duration
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// Sources returns the SQS, DynamoDB and Schedule events of every function, sorted by function
// and event name.
func (t *Template) Sources() ([]Source, error) {
	var out []Source
	for _, fn := range t.Of("AWS::Serverless::Function") {
		evs, _ := t.Resources[fn].Properties["Events"].(map[string]any)
		names := make([]string, 0, len(evs))
		for name := range evs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ev, _ := evs[name].(map[string]any)
			s, ok, err := t.source(fn, name, ev)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// source reads the event name of function fn; false for an event of another type.
func (t *Template) source(fn, name string, ev map[string]any) (Source, bool, error) {
	props, _ := ev["Properties"].(map[string]any)
	s := Source{Function: fn, Event: name, MaxRetries: -1}
	s.Type, _ = ev["Type"].(string)
	var ok bool
	switch s.Type {
	case "SQS":
		s.Resource, ok = getAttTarget(props["Queue"], "Arn")
		s.BatchSize = 10
	case "DynamoDB":
		s.Resource, ok = getAttTarget(props["Stream"], "StreamArn")
		s.BatchSize = 100
	case "Schedule":
		every, err := scheduleRate(fn, name, props)
		s.Every = every
		return s, err == nil, err
	default:
		return Source{}, false, nil
	}
	if !ok {
		return Source{}, false, fmt.Errorf("samtemplate: %s.%s: the %s source is not a !GetAtt of a template resource", fn, name, s.Type)
	}
	if err := t.pollerSettings(fn, name, props, &s); err != nil {
		return Source{}, false, err
	}
	return s, true, nil
}

// scheduleRate reads a Schedule event's rate(N unit).
func scheduleRate(fn, name string, props map[string]any) (time.Duration, error) {
	expr, _ := props["Schedule"].(string)
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("samtemplate: %s.%s: schedule %q is not rate(N unit)", fn, name, expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[singular(m[2])]
	return time.Duration(n) * unit, nil
}

// pollerSettings reads the batch size, retries and batching window an SQS or DynamoDB event
// sets over the defaults in s.
func (t *Template) pollerSettings(fn, name string, props map[string]any, s *Source) error {
	for _, f := range []struct {
		prop string
		set  func(int)
	}{
		{"BatchSize", func(n int) { s.BatchSize = n }},
		{"MaximumRetryAttempts", func(n int) { s.MaxRetries = n }},
		{"MaximumBatchingWindowInSeconds", func(n int) { s.Window = time.Duration(n) * time.Second }},
	} {
		v, has := props[f.prop]
		if !has {
			continue
		}
		n, err := t.Int(v)
		if err != nil {
			return fmt.Errorf("samtemplate: %s.%s %s: %w", fn, name, f.prop, err)
		}
		f.set(n)
	}
	return nil
}

// singular drops a plural s: "minutes" -> "minute".
func singular(unit string) string {
	if len(unit) > 1 && unit[len(unit)-1] == 's' {
		return unit[:len(unit)-1]
	}
	return unit
}
