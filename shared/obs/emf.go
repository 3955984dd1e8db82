package obs

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of the project's metrics where no stack names its own:
// local runs and tests.
const Namespace = "resetnotify"

// StackNamespace is the namespace of stack's metrics. template.yaml sets METRICS_NAMESPACE to
// it for every function, so that two stacks in one account never mix their metrics, and its
// alarms and dashboard read that namespace; config.Load reads the variable into
// Config.MetricsNamespace, which each function's wiring gives Metrics.Namespace.
func StackNamespace(stack string) string { return Namespace + "/" + stack }

// Unit is a CloudWatch metric unit.
type Unit string

// The units the project uses.
const (
	UnitCount        Unit = "Count"
	UnitMilliseconds Unit = "Milliseconds"
	UnitSeconds      Unit = "Seconds"
)

// Metric is one value in an EMF line.
type Metric struct {
	Name  string
	Unit  Unit
	Value float64
}

// Metrics writes CloudWatch Embedded Metric Format lines, one JSON object per line, to W (the
// function's stdout in Lambda, where CloudWatch Logs extracts them). A nil *Metrics discards
// everything, so callers need no checks. Dimension values must never be secrets: they are
// routes, states, reasons and status codes only.
type Metrics struct {
	// W receives the lines.
	W io.Writer
	// Function is the Function dimension on every metric, e.g. "intake".
	Function string
	// Namespace is the CloudWatch namespace of every line (config.Config.MetricsNamespace);
	// empty means Namespace.
	Namespace string
	// Now stamps each line; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
	// holds counts the Hold calls not yet matched by Flush; while it is above zero, lines are
	// kept in held (in order of first emission) and folded, see Hold.
	holds int
	held  []*heldLine
}

// heldLine is one folded EMF line: the line of its first emission, and every value of each
// of its metrics since, in order.
type heldLine struct {
	key    string
	line   map[string]any
	names  []string
	values map[string][]float64
}

// MaxValuesPerLine is how many values of one metric one EMF line carries at most (CloudWatch
// takes up to 100 values in a metric's array).
const MaxValuesPerLine = 100

// Hold starts folding: until the matching Flush, lines with the same namespace, dimensions
// (names and values), dimension sets and metric names and units are not written but merged
// into one line whose metrics hold every value as an EMF value array, in order. CloudWatch
// extracts from an array the same samples as from as many lines (Sum, SampleCount, Average
// and percentiles are unchanged), so a function calls Hold at the start of an invocation and
// Flush at its end to write one line per distinct metric instead of one per event (a stream
// batch of 100 audit entries: one AuditEntries line, not 100). Holds nest (concurrent
// invocations of one process share the lines): the last Flush writes everything held. The
// line's timestamp is its first emission's.
func (m *Metrics) Hold() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds++
}

// Flush ends a Hold; the last one writes every line held, each metric's values split into
// lines of at most MaxValuesPerLine.
func (m *Metrics) Flush() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds > 0 {
		m.holds--
	}
	if m.holds > 0 {
		return
	}
	held := m.held
	m.held = nil
	for _, h := range held {
		for start := 0; ; start += MaxValuesPerLine {
			more := false
			for _, name := range h.names {
				vs := h.values[name]
				end := min(start+MaxValuesPerLine, len(vs))
				switch {
				case start >= len(vs):
					delete(h.line, name)
				case end-start == 1:
					h.line[name] = vs[start]
				default:
					h.line[name] = vs[start:end]
				}
				more = more || end < len(vs)
			}
			m.write(h.line)
			if !more {
				break
			}
		}
	}
}

// write marshals one line and writes it; m.mu is held.
func (m *Metrics) write(line map[string]any) {
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	_, _ = m.W.Write(b)
}

// The metric names and dimension keys this package emits. template.yaml's alarms and
// dashboard name them too: CloudWatch keeps each combination of dimension keys as a metric of
// its own, so a dimension set read there must be one emitted here.
const (
	// MetricRequests counts HTTP requests by DimRoute and DimStatus, and by DimRoute alone;
	// MetricLatency times them.
	MetricRequests = "Requests"
	MetricLatency  = "Latency"
	// MetricTransitions counts state transitions by DimToState and DimReason, and by
	// DimToState alone (see Transition).
	MetricTransitions = "Transitions"

	// MetricRefusals counts admissions the abuse guards refused, by DimReason and
	// DimCountryCode, and by DimReason alone (see Refusal).
	MetricRefusals = "Refusals"
	// MetricGuardDecisionLate counts admissions whose creator decided after the decision
	// bound and lost to a duplicate's settle: admitted whatever the guard said.
	MetricGuardDecisionLate = "GuardDecisionLate"

	// DimFunction is on every metric: the function that emitted it (Metrics.Function).
	DimFunction = "Function"
	DimRoute    = "Route"
	DimStatus   = "Status"
	DimToState  = "ToState"
	DimReason   = "Reason"
	// DimCountryCode is an ISO 3166-1 alpha-2 country ("JM"; "ZZ" for a number in none),
	// never more of a number.
	DimCountryCode = "CountryCode"
)

// Refusal records one refused admission by reason and country, by reason alone (the
// prefix alarm and the dashboard read it) and by Function alone (the dashboard).
func (m *Metrics) Refusal(reason, countryCode string) {
	m.EmitRollup(map[string]string{DimReason: reason, DimCountryCode: countryCode}, [][]string{{DimReason}, {}},
		Metric{Name: MetricRefusals, Unit: UnitCount, Value: 1})
}

// NotRefused records an admission the guards let through as a zero Refusals by reason, for
// the one reason an alarm reads (PrefixVelocityAlarm): its quiet then has data. With the
// number's country, the zero is also by reason and country, so the dashboard's refusals by
// country show the countries admitted from, not an empty tile.
func (m *Metrics) NotRefused(reason, countryCode string) {
	if countryCode == "" {
		m.Emit(map[string]string{DimReason: reason}, Metric{Name: MetricRefusals, Unit: UnitCount, Value: 0})
		return
	}
	m.EmitRollup(map[string]string{DimReason: reason, DimCountryCode: countryCode}, [][]string{{DimReason}},
		Metric{Name: MetricRefusals, Unit: UnitCount, Value: 0})
}

// GuardDecisionLate records one admission decided too late to refuse (see
// MetricGuardDecisionLate).
func (m *Metrics) GuardDecisionLate() {
	m.Emit(nil, Metric{Name: MetricGuardDecisionLate, Unit: UnitCount, Value: 1})
}

// Request records one HTTP request: a Requests count and its Latency, by route and status,
// and by route alone: the admission-availability objective's denominator, whose 500 and 503
// by route and status are the numerator (the burn-rate alarms read both without SEARCH).
func (m *Metrics) Request(route string, status int, latency time.Duration) {
	m.EmitRollup(map[string]string{DimRoute: route, DimStatus: strconv.Itoa(status)}, [][]string{{DimRoute}},
		Metric{Name: MetricRequests, Unit: UnitCount, Value: 1},
		Metric{Name: MetricLatency, Unit: UnitMilliseconds, Value: float64(latency.Microseconds()) / 1000})
}

// Transition records one state transition as a Transitions count by target state and reason.
// The pair names the edge of the transition table (ADMITTED is ∅→accepted, CANCELLED is a
// caller's cancellation), so no source state is needed, and callers that do not know it
// exactly can still count. The count is also published by target state alone, so one metric
// per function counts, say, every expiry whatever its reason (the delivery page reads it).
func (m *Metrics) Transition(to, reason string) {
	m.EmitRollup(map[string]string{DimToState: to, DimReason: reason}, [][]string{{DimToState}},
		Metric{Name: MetricTransitions, Unit: UnitCount, Value: 1})
}

// Emit writes one EMF line with the Function dimension plus dims, and the metrics. All of
// dims form a single dimension set. Write errors are dropped: metrics must never fail a
// request.
func (m *Metrics) Emit(dims map[string]string, metrics ...Metric) {
	m.EmitRollup(dims, nil, metrics...)
}

func (m *Metrics) namespace() string {
	if m.Namespace != "" {
		return m.Namespace
	}
	return Namespace
}

// NoDimensions, in a rollup of EmitRollup, publishes the metrics with no dimension at all, not
// even Function: their sum over every function that emits them, which an alarm can read
// without metric math.
const NoDimensions = "<none>"

// EmitRollup is Emit that also publishes the metrics under each of rollups, a list of
// dimension sets made of some of dims' keys (Function is added to each; a key not in dims is
// ignored; a rollup holding NoDimensions is the empty set). CloudWatch never aggregates across dimension sets, so a rollup is how a reader
// gets, for example, provider latency per provider whatever the outcome class: the line is
// written once and CloudWatch extracts one metric per set.
func (m *Metrics) EmitRollup(dims map[string]string, rollups [][]string, metrics ...Metric) {
	if m == nil || m.W == nil || len(metrics) == 0 {
		return
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	type metricDef struct {
		Name string `json:"Name"`
		Unit Unit   `json:"Unit"`
	}
	type directive struct {
		Namespace  string      `json:"Namespace"`
		Dimensions [][]string  `json:"Dimensions"`
		Metrics    []metricDef `json:"Metrics"`
	}
	line := map[string]any{}
	names := []string{DimFunction}
	line[DimFunction] = m.Function
	for k, v := range dims {
		if k == DimFunction {
			continue
		}
		names = append(names, k)
		line[k] = v
	}
	slices.Sort(names[1:])
	sets := dimensionSets(names, dims, rollups)
	defs := make([]metricDef, 0, len(metrics))
	for _, mt := range metrics {
		defs = append(defs, metricDef{Name: mt.Name, Unit: mt.Unit})
		line[mt.Name] = mt.Value
	}
	cw := []directive{{Namespace: m.namespace(), Dimensions: sets, Metrics: defs}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds > 0 {
		m.hold(line, cw, metrics, now)
		return
	}
	line["_aws"] = map[string]any{"Timestamp": now().UnixMilli(), "CloudWatchMetrics": cw}
	m.write(line)
}

// hold folds line (its directive cw, its metrics) into the held line of the same identity, or
// holds it as a new one stamped now; m.mu is held.
func (m *Metrics) hold(line map[string]any, cw any, metrics []Metric, now func() time.Time) {
	// The line's identity: everything but the values and the timestamp.
	id := map[string]any{"_aws": cw}
	for k, v := range line {
		if _, isMetric := line[k].(float64); !isMetric {
			id[k] = v
		}
	}
	kb, err := json.Marshal(id)
	if err != nil {
		return
	}
	key := string(kb)
	var h *heldLine
	for _, c := range m.held {
		if c.key == key {
			h = c
			break
		}
	}
	if h == nil {
		h = &heldLine{key: key, line: line, values: map[string][]float64{}}
		line["_aws"] = map[string]any{"Timestamp": now().UnixMilli(), "CloudWatchMetrics": cw}
		m.held = append(m.held, h)
	}
	for _, mt := range metrics {
		if _, ok := h.values[mt.Name]; !ok {
			h.names = append(h.names, mt.Name)
		}
		h.values[mt.Name] = append(h.values[mt.Name], mt.Value)
	}
}

// dimensionSets returns the dimension sets of a line: all (Function and every key of dims,
// sorted), then each rollup's set, each once.
func dimensionSets(all []string, dims map[string]string, rollups [][]string) [][]string {
	sets := [][]string{all}
	for _, r := range rollups {
		set := []string{}
		if !slices.Contains(r, NoDimensions) {
			set = append(set, DimFunction)
			for _, k := range r {
				if _, ok := dims[k]; ok && k != DimFunction && !slices.Contains(set, k) {
					set = append(set, k)
				}
			}
			slices.Sort(set[1:])
		}
		if !slices.ContainsFunc(sets, func(s []string) bool { return slices.Equal(s, set) }) {
			sets = append(sets, set)
		}
	}
	return sets
}
