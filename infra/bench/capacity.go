package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/resetnotify/resetnotify/shared/tables"
)

// capacityMeter asks DynamoDB for the capacity of every call made by clients built from a
// config it instruments (ReturnConsumedCapacity=INDEXES, set here in the benchmark wiring only,
// never in the functions), and adds up what each call consumed per table and index. A write
// on the notifications table is labelled with the state it writes, so a transition's cost can
// be told from another's.
type capacityMeter struct {
	mu    sync.Mutex
	units map[capacityKey]*capacityUnits
}

// capacityKey names one share: an operation (with its label), a table, and an index ("" for
// the table itself).
type capacityKey struct {
	Op, Table, Index string
}

type capacityUnits struct {
	Calls       int64
	Read, Write float64
}

func newCapacityMeter() *capacityMeter {
	return &capacityMeter{units: map[capacityKey]*capacityUnits{}}
}

// Instrument adds the meter to cfg's APIOptions.
func (m *capacityMeter) Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), m.addTo)
}

func (m *capacityMeter) addTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("resetnotify.bench.ConsumedCapacity",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := requestCapacity(in.Parameters)
			out, md, err := next.HandleInitialize(ctx, in)
			if op != "" && err == nil {
				for _, c := range consumed(out.Result) {
					m.add(op, c)
				}
			}
			return out, md, err
		}), middleware.After)
}

// requestCapacity sets ReturnConsumedCapacity=INDEXES on a DynamoDB input and returns its
// operation's label, or "" for an input that reports no capacity.
func requestCapacity(params any) string {
	indexes := ddbtypes.ReturnConsumedCapacityIndexes
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		in.ReturnConsumedCapacity = indexes
		return "PutItem"
	case *dynamodb.UpdateItemInput:
		in.ReturnConsumedCapacity = indexes
		return "UpdateItem" + updateLabel(in)
	case *dynamodb.DeleteItemInput:
		in.ReturnConsumedCapacity = indexes
		return "DeleteItem"
	case *dynamodb.GetItemInput:
		in.ReturnConsumedCapacity = indexes
		if aws.ToBool(in.ConsistentRead) {
			return "GetItem(consistent)"
		}
		return "GetItem"
	case *dynamodb.QueryInput:
		in.ReturnConsumedCapacity = indexes
		if in.IndexName != nil {
			return "Query(" + aws.ToString(in.IndexName) + ")"
		}
		return "Query"
	case *dynamodb.ScanInput:
		in.ReturnConsumedCapacity = indexes
		return "Scan"
	case *dynamodb.BatchWriteItemInput:
		in.ReturnConsumedCapacity = indexes
		return "BatchWriteItem"
	case *dynamodb.BatchGetItemInput:
		in.ReturnConsumedCapacity = indexes
		return "BatchGetItem"
	case *dynamodb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = indexes
		return "TransactWriteItems"
	}
	return ""
}

// updateLabel is "->state" for an update that SETs the notifications table's state attribute
// (a transition), and "" for any other update (a reschedule, a held receipt).
func updateLabel(in *dynamodb.UpdateItemInput) string {
	for alias, name := range in.ExpressionAttributeNames {
		if name != tables.AttrState {
			continue
		}
		re := regexp.MustCompile(regexp.QuoteMeta(alias) + `\s*=\s*(:[A-Za-z0-9_]+)`)
		match := re.FindStringSubmatch(aws.ToString(in.UpdateExpression))
		if match == nil {
			return ""
		}
		if v, ok := in.ExpressionAttributeValues[match[1]].(*ddbtypes.AttributeValueMemberS); ok {
			return "->" + v.Value
		}
	}
	return ""
}

// consumed returns the capacity reports an output carries.
func consumed(result any) []ddbtypes.ConsumedCapacity {
	one := func(c *ddbtypes.ConsumedCapacity) []ddbtypes.ConsumedCapacity {
		if c == nil {
			return nil
		}
		return []ddbtypes.ConsumedCapacity{*c}
	}
	switch out := result.(type) {
	case *dynamodb.PutItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.GetItemOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(out.ConsumedCapacity)
	case *dynamodb.BatchWriteItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.BatchGetItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.TransactWriteItemsOutput:
		return out.ConsumedCapacity
	}
	return nil
}

func (m *capacityMeter) add(op string, c ddbtypes.ConsumedCapacity) {
	write := strings.HasPrefix(op, "PutItem") || strings.HasPrefix(op, "UpdateItem") ||
		strings.HasPrefix(op, "DeleteItem") || strings.HasPrefix(op, "Batch") && strings.Contains(op, "Write") ||
		strings.HasPrefix(op, "TransactWrite")
	table := aws.ToString(c.TableName)
	m.mu.Lock()
	defer m.mu.Unlock()
	put := func(index string, cap *ddbtypes.Capacity, total *float64) {
		k := capacityKey{Op: op, Table: table, Index: index}
		u := m.units[k]
		if u == nil {
			u = &capacityUnits{}
			m.units[k] = u
		}
		if index == "" {
			u.Calls++
		}
		var units float64
		switch {
		case cap != nil && write && cap.WriteCapacityUnits != nil:
			units = *cap.WriteCapacityUnits
		case cap != nil && !write && cap.ReadCapacityUnits != nil:
			units = *cap.ReadCapacityUnits
		case cap != nil && cap.CapacityUnits != nil:
			units = *cap.CapacityUnits
		case total != nil:
			units = *total
		}
		if write {
			u.Write += units
		} else {
			u.Read += units
		}
	}
	if c.Table == nil && len(c.GlobalSecondaryIndexes) == 0 {
		// No per-index split: the total is the table's.
		put("", nil, c.CapacityUnits)
		return
	}
	put("", c.Table, nil)
	for name, gsi := range c.GlobalSecondaryIndexes {
		put(name, &gsi, nil)
	}
}

// Reset forgets everything counted so far.
func (m *capacityMeter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.units)
}

// Snapshot returns a copy of the shares counted so far.
func (m *capacityMeter) Snapshot() capacityReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(capacityReport, len(m.units))
	for k, u := range m.units {
		out[k] = *u
	}
	return out
}

// capacityReport is what a meter counted over one phase of a benchmark.
type capacityReport map[capacityKey]capacityUnits

// total returns the read and write units of the shares that keep says to.
func (r capacityReport) total(keep func(capacityKey) bool) (read, write float64) {
	for k, u := range r {
		if keep == nil || keep(k) {
			read += u.Read
			write += u.Write
		}
	}
	return read, write
}

// add returns r and o summed.
func (r capacityReport) add(o capacityReport) capacityReport {
	out := make(capacityReport, len(r)+len(o))
	for _, src := range []capacityReport{r, o} {
		for k, u := range src {
			s := out[k]
			s.Calls += u.Calls
			s.Read += u.Read
			s.Write += u.Write
			out[k] = s
		}
	}
	return out
}

// format renders every share as "<role>[/<index>] <op>:W<write>/R<read>" pairs, each divided by
// per, sorted, with role naming the table through roles (a table's physical name is a
// benchmark's own, and says nothing).
func (r capacityReport) format(roles map[string]string, per float64) string {
	keys := make([]capacityKey, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	label := func(k capacityKey) string {
		role := roles[k.Table]
		if role == "" {
			role = k.Table
		}
		if k.Index != "" {
			role += "/" + k.Index
		}
		return role + " " + k.Op
	}
	sort.Slice(keys, func(i, j int) bool { return label(keys[i]) < label(keys[j]) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		u := r[k]
		if u.Read == 0 && u.Write == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s:W%.2f/R%.2f", label(k), u.Write/per, u.Read/per))
	}
	return strings.Join(parts, ",")
}

// byIndex returns the write units of r per "<role>" or "<role>/<index>", divided by per.
func (r capacityReport) byIndex(roles map[string]string, per float64) map[string]float64 {
	out := map[string]float64{}
	for k, u := range r {
		name := roles[k.Table]
		if name == "" {
			name = k.Table
		}
		if k.Index != "" {
			name += "/" + k.Index
		}
		out[name] += u.Write / per
	}
	return out
}
