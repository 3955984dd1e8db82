// Package emfbridge turns the CloudWatch Embedded Metric Format (EMF) lines the functions write
// into CloudWatch metrics in a local emulator, with PutMetricData: what CloudWatch Logs does in
// AWS. It is dev-only machinery (no Lambda links dev/).
//
// Each line's every directive (_aws.CloudWatchMetrics) is carried: its namespace, every
// dimension set (an empty set publishes the metrics with no dimension), each metric's unit and
// StorageResolution, the line's timestamp (_aws.Timestamp, milliseconds), and a metric's value
// whether a number or an array of numbers (published as Values with Counts). Lines that are not
// JSON objects with an _aws member are ordinary log lines, skipped and counted; an EMF line
// that breaks the specification (no timestamp, a dimension without a string value, a metric
// without a numeric value, an unknown unit, more than 30 dimensions in a set, a
// StorageResolution other than 1 or 60) is dropped whole and counted, as CloudWatch Logs drops
// it; neither ever fails the bridge.
//
// A Bridge batches the datums by namespace (at most MaxBatch per PutMetricData) and sends them
// every FlushInterval (Run) or on Flush. It is fed lines by a Tailer, which polls an emulator's
// CloudWatch Logs, or directly, as an io.Writer, by make local (infra/local), which already
// reads every bootstrap's output.
//
// Where MiniStack 1.5.33 puts a function's output (LAMBDA_EXECUTOR=local, provided.al2023; read
// in its lambda_svc.py and core/lambda_runtime.py): the bootstrap's stdout and stderr, merged,
// are drained after each invocation and written to the log group /aws/lambda/<function name>
// (LoggingConfig.LogGroup when set), created on first write, in a new stream per invocation
// (yyyy/mm/dd/[$LATEST]<uuid>) between START and END/REPORT lines, every line stamped with the
// time the invocation ended (the EMF lines carry their own timestamps, which the bridge uses).
// Lines written between invocations go with the next one; at most 10,000 lines are kept per
// drain. Nothing goes to MiniStack's own log.
package emfbridge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// ErrNotEMF is returned by Parse for a line that is not an EMF document (an ordinary log line).
var ErrNotEMF = errors.New("emfbridge: not an EMF line")

// maxDimensions is CloudWatch's limit of dimensions per metric (and per EMF dimension set).
const maxDimensions = 30

// maxValues is EMF's limit of values in one metric's array.
const maxValues = 100

// Batch is the datums of one namespace.
type Batch struct {
	Namespace string
	Data      []types.MetricDatum
}

// directive is one entry of _aws.CloudWatchMetrics.
type directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []struct {
		Name              string `json:"Name"`
		Unit              string `json:"Unit"`
		StorageResolution *int32 `json:"StorageResolution"`
	} `json:"Metrics"`
}

// Parse returns the datums one EMF line publishes, one Batch per directive. A line that is
// not a JSON object with an _aws member gives ErrNotEMF; an EMF line that breaks the
// specification gives another error and no datum.
func Parse(line []byte) ([]Batch, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, ErrNotEMF
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(line, &doc); err != nil {
		return nil, ErrNotEMF
	}
	rawMeta, ok := doc["_aws"]
	if !ok {
		return nil, ErrNotEMF
	}
	var meta struct {
		Timestamp         *float64    `json:"Timestamp"`
		CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
	}
	if err := json.Unmarshal(rawMeta, &meta); err != nil {
		return nil, fmt.Errorf("emfbridge: _aws: %w", err)
	}
	if meta.Timestamp == nil {
		return nil, errors.New("emfbridge: _aws.Timestamp missing")
	}
	if len(meta.CloudWatchMetrics) == 0 {
		return nil, errors.New("emfbridge: _aws.CloudWatchMetrics missing or empty")
	}
	ts := time.UnixMilli(int64(*meta.Timestamp)).UTC()
	var out []Batch
	for _, d := range meta.CloudWatchMetrics {
		b, err := d.batch(doc, ts)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// batch returns the datums of the directive d of the line doc, stamped ts: each metric under
// each dimension set.
func (d directive) batch(doc map[string]json.RawMessage, ts time.Time) (Batch, error) {
	if d.Namespace == "" || len(d.Namespace) > 255 {
		return Batch{}, fmt.Errorf("emfbridge: bad namespace %q", d.Namespace)
	}
	dimSets, err := dimensionSets(d.Dimensions, doc)
	if err != nil {
		return Batch{}, err
	}
	b := Batch{Namespace: d.Namespace}
	for _, m := range d.Metrics {
		if m.Name == "" {
			return Batch{}, errors.New("emfbridge: metric without a name")
		}
		unit := types.StandardUnit(cmp.Or(m.Unit, string(types.StandardUnitNone)))
		if !slices.Contains(unit.Values(), unit) {
			return Batch{}, fmt.Errorf("emfbridge: metric %s: unknown unit %q", m.Name, m.Unit)
		}
		if r := m.StorageResolution; r != nil && *r != 1 && *r != 60 {
			return Batch{}, fmt.Errorf("emfbridge: metric %s: StorageResolution %d, want 1 or 60", m.Name, *r)
		}
		values, counts, err := metricValues(doc[m.Name])
		if err != nil {
			return Batch{}, fmt.Errorf("emfbridge: metric %s: %w", m.Name, err)
		}
		for _, dims := range dimSets {
			datum := types.MetricDatum{
				MetricName: aws.String(m.Name), Dimensions: slices.Clone(dims), Unit: unit,
				Timestamp: aws.Time(ts), StorageResolution: m.StorageResolution,
			}
			if len(values) == 1 && counts[0] == 1 {
				datum.Value = aws.Float64(values[0])
			} else {
				datum.Values, datum.Counts = slices.Clone(values), slices.Clone(counts)
			}
			b.Data = append(b.Data, datum)
		}
	}
	return b, nil
}

// dimensionSets returns the dimensions of each set, their values read from doc; no set at all
// is the empty set (the metrics with no dimension).
func dimensionSets(sets [][]string, doc map[string]json.RawMessage) ([][]types.Dimension, error) {
	if len(sets) == 0 {
		sets = [][]string{{}}
	}
	var out [][]types.Dimension
	for _, set := range sets {
		if len(set) > maxDimensions {
			return nil, fmt.Errorf("emfbridge: %d dimensions in one set, at most %d", len(set), maxDimensions)
		}
		dims := make([]types.Dimension, 0, len(set))
		for _, k := range set {
			raw, ok := doc[k]
			if !ok {
				return nil, fmt.Errorf("emfbridge: dimension %s has no value", k)
			}
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("emfbridge: dimension %s is not a string", k)
			}
			dims = append(dims, types.Dimension{Name: aws.String(k), Value: aws.String(v)})
		}
		out = append(out, dims)
	}
	return out, nil
}

// metricValues reads a metric's value: a number, or an array of numbers (each distinct value
// once, with its count).
func metricValues(raw json.RawMessage) (values, counts []float64, err error) {
	if raw == nil {
		return nil, nil, errors.New("no value")
	}
	var one float64
	if err := json.Unmarshal(raw, &one); err == nil {
		if math.IsNaN(one) || math.IsInf(one, 0) {
			return nil, nil, errors.New("value is not finite")
		}
		return []float64{one}, []float64{1}, nil
	}
	var many []float64
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, nil, errors.New("value is neither a number nor an array of numbers")
	}
	if len(many) == 0 || len(many) > maxValues {
		return nil, nil, fmt.Errorf("%d values, want 1 to %d", len(many), maxValues)
	}
	for _, v := range many {
		if i := slices.Index(values, v); i >= 0 {
			counts[i]++
			continue
		}
		values = append(values, v)
		counts = append(counts, 1)
	}
	return values, counts, nil
}
