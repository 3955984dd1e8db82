package workercore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/archive"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore/workercoretest"
)

// emfLine is one parsed EMF line: its dimension values, its dimension sets, and each metric's
// unit and value.
type emfLine struct {
	dims   map[string]string
	sets   [][]string
	units  map[string]string
	values map[string]float64
}

// has reports whether the line publishes its metrics under exactly the dimension keys set
// (Function first, the rest sorted, as obs writes them).
func (l emfLine) has(set ...string) bool {
	return slices.ContainsFunc(l.sets, func(s []string) bool { return slices.Equal(s, set) })
}

// parseEMF parses every line of out as an EMF line in the resetnotify namespace.
func parseEMF(t *testing.T, out string) []emfLine {
	t.Helper()
	var lines []emfLine
	for _, raw := range strings.Split(strings.TrimSpace(out), "\n") {
		if raw == "" {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatalf("metric line is not JSON: %v\n%s", err, raw)
		}
		var meta struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(raw), &meta); err != nil || len(meta.AWS.CloudWatchMetrics) != 1 {
			t.Fatalf("not one EMF directive (%v):\n%s", err, raw)
		}
		d := meta.AWS.CloudWatchMetrics[0]
		if d.Namespace != obs.Namespace {
			t.Errorf("namespace %q, want %q", d.Namespace, obs.Namespace)
		}
		l := emfLine{dims: map[string]string{}, sets: d.Dimensions, units: map[string]string{}, values: map[string]float64{}}
		for _, set := range d.Dimensions {
			for _, k := range set {
				v, ok := doc[k].(string)
				if !ok {
					t.Errorf("dimension %s has no string value:\n%s", k, raw)
				}
				l.dims[k] = v
			}
		}
		for _, m := range d.Metrics {
			// A scalar, or the value array of a line folded per invocation (obs.Metrics.Hold):
			// its sum.
			v, ok := doc[m.Name].(float64)
			if vs, isArray := doc[m.Name].([]any); isArray && len(vs) > 0 {
				ok = true
				for _, x := range vs {
					f, isNum := x.(float64)
					ok = ok && isNum
					v += f
				}
			}
			if !ok {
				t.Errorf("metric %s has no numeric value:\n%s", m.Name, raw)
			}
			l.units[m.Name], l.values[m.Name] = m.Unit, v
		}
		lines = append(lines, l)
	}
	return lines
}

// withMetric returns the lines that carry the metric name.
func withMetric(lines []emfLine, name string) []emfLine {
	var out []emfLine
	for _, l := range lines {
		if _, ok := l.values[name]; ok {
			out = append(out, l)
		}
	}
	return out
}

func TestProviderCallMetrics(t *testing.T) {
	tests := []struct {
		name    string
		outcome sms.Outcome
		class   sms.Class
	}{
		{"accepted", sms.Accepted("pm-1"), sms.ClassAccepted},
		{"timeout", sms.Unknown(sms.DetailTimeout, errors.New("deadline exceeded")), sms.ClassUnknown},
		{"throttled", sms.NotAccepted(sms.DetailThrottled, time.Second, errors.New("429")), sms.ClassNotAccepted},
		{"rejected", sms.Rejected("opted_out", errors.New("400")), sms.ClassRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sender.Outcomes = []sms.Outcome{tc.outcome}
			f.dispatch(t, notify.MessageOf(f.admitKey(t, "k")))

			lines := withMetric(parseEMF(t, f.metrics.String()), workercore.MetricProviderLatency)
			if len(lines) != 1 {
				t.Fatalf("%d lines with %s, want 1 per provider call", len(lines), workercore.MetricProviderLatency)
			}
			l := lines[0]
			if !l.has(obs.DimFunction, workercore.DimProvider) {
				t.Errorf("dimension sets %v lack [Function Provider], which the dashboard reads", l.sets)
			}
			if !l.has(obs.DimFunction, "Class", "Detail", workercore.DimProvider) {
				t.Errorf("dimension sets %v lack [Function Class Detail Provider]", l.sets)
			}
			if l.dims[workercore.DimProvider] != providerSim || l.dims["Class"] != string(tc.class) {
				t.Errorf("dimensions %v, want Provider %s and Class %s", l.dims, providerSim, tc.class)
			}
			if l.units[workercore.MetricProviderLatency] != string(obs.UnitMilliseconds) || l.values[workercore.MetricProviderLatency] < 0 {
				t.Errorf("latency %v %s", l.values[workercore.MetricProviderLatency], l.units[workercore.MetricProviderLatency])
			}
			if l.values[workercore.MetricProviderCalls] != 1 {
				t.Errorf("%s = %v, want 1", workercore.MetricProviderCalls, l.values[workercore.MetricProviderCalls])
			}
			// One call opens no breaker: a zero under Function alone, which ProviderCoolDownAlarm
			// reads, so that its quiet has data.
			cool := withMetric(parseEMF(t, f.metrics.String()), workercore.MetricCoolDowns)
			if len(cool) != 1 || !cool[0].has(obs.DimFunction) || len(cool[0].sets) != 1 || cool[0].values[workercore.MetricCoolDowns] != 0 {
				t.Errorf("%s lines %+v, want one zero under [Function] alone", workercore.MetricCoolDowns, cool)
			}
		})
	}
}

// overdue returns the sweep's MetricOverdue gauge by state.
func overdue(t *testing.T, f *fixture) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, l := range withMetric(parseEMF(t, f.metrics.String()), workercore.MetricOverdue) {
		if !l.has(obs.DimFunction, workercore.DimState) {
			t.Errorf("%s dimension sets %v, want [[Function State]]", workercore.MetricOverdue, l.sets)
		}
		got[l.dims[workercore.DimState]] += l.values[workercore.MetricOverdue]
	}
	return got
}

func TestSweeperReportsOverdueByState(t *testing.T) {
	t.Run("nothing due still reports zeros", func(t *testing.T) {
		f := newFixture(t)
		f.sweep(t)
		want := map[string]float64{"accepted": 0, "retry_scheduled": 0, "dispatching": 0, "dispatch_unknown": 0}
		if diff := cmp.Diff(want, overdue(t, f)); diff != "" {
			t.Errorf("overdue (-want +got):\n%s", diff)
		}
	})
	t.Run("backlog", func(t *testing.T) {
		f := newFixture(t)
		f.admitKey(t, "lost") // accepted, its dispatch message lost
		for _, k := range []string{"u1", "u2"} {
			f.admitKey(t, k)
			f.lease(t, k)
			f.move(t, k, notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: t0.Add(time.Minute)})
		}
		// Still inside its visibility window: scheduled, not a backlog.
		f.admitKey(t, "waiting")
		f.lease(t, "waiting")
		f.move(t, "waiting", notify.Change{To: notify.StateDispatchUnknown, Reason: notify.ReasonProviderTimeout, NextActionAt: t0.Add(time.Hour)})
		f.clock.Set(t0.Add(3 * time.Minute))
		f.sweep(t)
		want := map[string]float64{"accepted": 1, "retry_scheduled": 0, "dispatching": 0, "dispatch_unknown": 2}
		if diff := cmp.Diff(want, overdue(t, f)); diff != "" {
			t.Errorf("overdue (-want +got):\n%s", diff)
		}
	})
}

// TestTimeToAcceptance: the provider's acceptance of a send is timed from the record's
// admission, once, by Function.
func TestTimeToAcceptance(t *testing.T) {
	f := newFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.Accepted("pm-1")}
	key := f.admitKey(t, "k")
	f.clock.Set(t0.Add(7 * time.Second))
	f.dispatch(t, notify.MessageOf(key))
	lines := withMetric(parseEMF(t, f.metrics.String()), workercore.MetricTimeToAcceptance)
	if len(lines) != 1 {
		t.Fatalf("%d lines with %s, want 1", len(lines), workercore.MetricTimeToAcceptance)
	}
	l := lines[0]
	if v := l.values[workercore.MetricTimeToAcceptance]; v != 7000 || l.units[workercore.MetricTimeToAcceptance] != string(obs.UnitMilliseconds) {
		t.Errorf("%s = %v %s, want 7000 Milliseconds", workercore.MetricTimeToAcceptance, v, l.units[workercore.MetricTimeToAcceptance])
	}
	if !l.has(obs.DimFunction) || len(l.sets) != 1 {
		t.Errorf("dimensions %v %v, want Function alone", l.dims, l.sets)
	}
}

func TestExpiryIsCountedByTargetState(t *testing.T) {
	f := newFixture(t)
	f.admit(t, request("late", 3*time.Minute))
	f.clock.Set(t0.Add(3 * time.Minute))
	if rep := f.sweep(t); rep.Expired != 1 {
		t.Fatalf("report %+v, want one expiry", rep)
	}
	var expired []emfLine
	for _, l := range withMetric(parseEMF(t, f.metrics.String()), obs.MetricTransitions) {
		if l.dims[obs.DimToState] == string(notify.StateExpired) {
			expired = append(expired, l)
		}
	}
	if len(expired) != 1 {
		t.Fatalf("%d expired transitions counted, want 1", len(expired))
	}
	l := expired[0]
	if !l.has(obs.DimFunction, obs.DimToState) || !l.has(obs.DimFunction, obs.DimReason, obs.DimToState) {
		t.Errorf("dimension sets %v, want [Function Reason ToState] and [Function ToState]", l.sets)
	}
	if l.dims[obs.DimReason] != string(notify.ReasonExpiredBeforeDispatch) {
		t.Errorf("reason %q", l.dims[obs.DimReason])
	}
}

// emittedSchemas runs the workers through every kind of metric they write, and obs's request
// metrics, and returns each metric name's dimension sets, as "Function,Key,..." strings.
func emittedSchemas(t *testing.T) map[string]map[string]bool {
	t.Helper()
	f := newFixture(t)
	f.sender.Outcomes = []sms.Outcome{sms.Accepted("pm-1"), sms.Unknown(sms.DetailTimeout, errors.New("timeout"))}
	f.dispatch(t, notify.MessageOf(f.admitKey(t, "sent")))
	f.dispatch(t, notify.MessageOf(f.admitKey(t, "unknown")))
	f.admit(t, request("late", 3*time.Minute))
	f.clock.Set(t0.Add(3 * time.Minute))
	f.sweep(t)
	f.clock.Set(t0.Add(time.Hour))
	f.drain(t, 20)
	emitFailoverMetrics(t, f)
	(&obs.Metrics{W: f.metrics, Function: "intake"}).Request("POST /v1/notifications", 202, time.Millisecond)
	(&obs.Metrics{W: f.metrics, Function: "intake"}).Refusal(string(notify.RefusedPrefixVelocity), "44")
	(&digest.Digester{Period: time.Minute, Metrics: &obs.Metrics{W: f.metrics, Function: "digest"}}).Report(context.Background(), 1, t0, t0)
	// The conversion guard's metrics, as Dispatcher.countSent and the intake handler emit them.
	(&obs.Metrics{W: f.metrics, Function: "dispatch"}).Conversion(obs.MetricConversionSends, "44")
	(&obs.Metrics{W: f.metrics, Function: "intake"}).Conversion(obs.MetricConversions, "44")
	(&obs.Metrics{W: f.metrics, Function: "dispatch"}).Emit(nil, obs.Metric{Name: obs.MetricPrefixBlocks, Unit: obs.UnitCount, Value: 1})
	// The archive step's metrics, in the one line archive.Archiver.Run writes after each run.
	(&obs.Metrics{W: f.metrics, Function: "digest"}).Emit(nil,
		obs.Metric{Name: archive.MetricArchivedPeriods, Unit: obs.UnitCount, Value: 1},
		obs.Metric{Name: archive.MetricArchiveLag, Unit: obs.UnitSeconds, Value: 0},
		obs.Metric{Name: archive.MetricArchiveErrors, Unit: obs.UnitCount, Value: 0})

	got := map[string]map[string]bool{}
	for _, l := range parseEMF(t, f.metrics.String()) {
		for name := range l.values {
			if got[name] == nil {
				got[name] = map[string]bool{}
			}
			for _, set := range l.sets {
				got[name][schemaKey(set)] = true
			}
		}
	}
	return got
}

// emitFailoverMetrics adds to f's metrics what a chain of two providers writes: failovers, a
// cool-down and its skips (dispatch), a receipt of another provider (reconcile), and what
// provider-events counts per receipt.
func emitFailoverMetrics(t *testing.T, base *fixture) {
	t.Helper()
	f := newChainFixture(t)
	f.metrics = base.metrics
	f.build(t)
	f.d.Chain = []workercore.Route{{Name: primary, Sender: f.sender}, {Name: secondary, Sender: f.sender2}}
	f.r.Chain = []workercore.LookupRoute{{Name: primary, Lookup: sms.OnlyLookup(f.lookup)}, {Name: secondary, Lookup: sms.OnlyLookup(f.lookup2)}}
	f.d.Health = workercore.NewHealth()
	f.sender.Outcomes = []sms.Outcome{sms.NotAccepted(sms.DetailNotWritten, 0, errors.New("refused"))}
	for i := range workercore.DefaultTripAfter + 1 {
		f.dispatch(t, notify.MessageOf(f.admitKey(t, fmt.Sprintf("failover-%d", i))))
		f.drain(t, 5)
	}
	f.d.Health = nil
	rec := f.unknownRecord(t, request("mismatch", 10*time.Minute))
	ref := sms.AttemptRef(rec.NotificationID, rec.Attempt)
	f.r.Receipts = &workercoretest.Receipts{ByRef: map[string]sms.Receipt{ref: {AttemptRef: ref, Provider: "neighbour"}}}
	f.reconcile(t, notify.MessageOf(rec))
	// Every receipt outcome is counted by the same dimensions; a dropped event is the one a
	// recorder without stores can count.
	rcd := &providerevents.Recorder{Metrics: &obs.Metrics{W: base.metrics, Function: providerevents.Component}}
	rcd.Poison(context.Background(), "simulator", providerevents.ErrPoison)
}

// schemaKey is a dimension set as "Function,Key,...", Function first and the rest sorted.
func schemaKey(dims []string) string {
	if len(dims) == 0 {
		// No dimension at all (obs.NoDimensions), not even Function.
		return ""
	}
	rest := slices.DeleteFunc(slices.Clone(dims), func(d string) bool { return d == obs.DimFunction })
	slices.Sort(rest)
	return strings.Join(append([]string{obs.DimFunction}, rest...), ",")
}

// functionNames are the Function dimension values the wiring gives each function's Metrics.
var functionNames = map[string]bool{
	"intake": true, "dispatch": true, "reconcile": true, "sweeper": true, "audit": true, "provider-events": true,
	"digest": true,
}

// yamlPlain turns a template node into plain Go values; a scalar with a short-form intrinsic
// function tag becomes "!Ref SmsProvider" and the like.
func yamlPlain(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		return yamlPlain(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = yamlPlain(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		var s []any
		for _, c := range n.Content {
			s = append(s, yamlPlain(c))
		}
		return s
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return n.Tag + " " + n.Value
	}
	return n.Value
}

// TestTemplateReadsEmittedMetrics checks every resetnotify metric that template.yaml's alarms
// and dashboard read against what the code writes: CloudWatch treats each set of dimension
// names as a separate metric, so an alarm on a set nobody emits would never leave
// INSUFFICIENT_DATA (or, treating missing data as not breaching, never fire).
func TestTemplateReadsEmittedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parse template.yaml: %v", err)
	}
	tmpl, _ := yamlPlain(&doc).(map[string]any)
	resources, _ := tmpl["Resources"].(map[string]any)
	emitted := emittedSchemas(t)

	// The stack's metrics live in its own namespace: every function is told it, and every
	// alarm and the dashboard read it, never the shared default.
	stackNS := "!Sub " + obs.StackNamespace("${AWS::StackName}")
	globals, _ := samtemplate.Lookup(tmpl, "Globals", "Function", "Environment", "Variables")
	globalEnv, _ := globals.(map[string]any)
	if got := globalEnv[config.EnvMetricsNamespace]; got != stackNS {
		t.Errorf("Globals set %s to %v, want %q", config.EnvMetricsNamespace, got, stackNS)
	}
	ours := func(where string, ns any) bool {
		str, _ := ns.(string)
		if str == stackNS || str == obs.StackNamespace("0") {
			return true
		}
		if strings.Contains(str, obs.Namespace) {
			t.Errorf("%s reads namespace %q, not the stack's %q", where, str, stackNS)
		}
		return false
	}

	check := func(where, name string, dims map[string]string) {
		t.Helper()
		keys := make([]string, 0, len(dims))
		for k := range dims {
			keys = append(keys, k)
		}
		key := schemaKey(keys)
		if !emitted[name][key] {
			t.Errorf("%s reads %s by [%s]; the code emits it by %q", where, name, key, slices.Sorted(maps.Keys(emitted[name])))
		}
		if fn, ok := dims[obs.DimFunction]; ok && !functionNames[fn] {
			t.Errorf("%s reads %s of Function %q, which no function is", where, name, fn)
		}
	}
	dimsOf := func(v any) map[string]string {
		out := map[string]string{}
		list, _ := v.([]any)
		for _, d := range list {
			d, _ := d.(map[string]any)
			name, _ := d["Name"].(string)
			value, _ := d["Value"].(string)
			out[name] = value
		}
		return out
	}

	alarmed := map[string]bool{}
	var dashboards int
	for id, r := range resources {
		r, _ := r.(map[string]any)
		props, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::CloudWatch::Alarm":
			stats := []map[string]any{props}
			metrics, _ := props["Metrics"].([]any)
			for _, m := range metrics {
				m, _ := m.(map[string]any)
				if ms, ok := m["MetricStat"].(map[string]any); ok {
					metric, _ := ms["Metric"].(map[string]any)
					stats = append(stats, metric)
				}
			}
			for _, m := range stats {
				if !ours(id, m["Namespace"]) {
					continue
				}
				name, _ := m["MetricName"].(string)
				check(id, name, dimsOf(m["Dimensions"]))
				alarmed[name] = true
			}
		case "AWS::CloudWatch::Dashboard":
			dashboards++
			body, _ := props["DashboardBody"].(string)
			body, ok := strings.CutPrefix(body, "!Sub ")
			if !ok {
				t.Fatalf("%s: DashboardBody is not a !Sub string", id)
			}
			checkDashboard(t, id, regexp.MustCompile(`\$\{[^}]*\}`).ReplaceAllString(body, "0"), check, ours)
		}
	}
	for _, name := range []string{workercore.MetricOverdue, digest.MetricDigestLag, workercore.MetricExpirations, workercore.MetricCoolDowns} {
		if !alarmed[name] {
			t.Errorf("no alarm reads %s", name)
		}
	}
	if dashboards != 1 {
		t.Errorf("%d dashboards, want 1", dashboards)
	}
}

var (
	searchSchema = regexp.MustCompile(`\{([^}]*)\}`)
	searchName   = regexp.MustCompile(`MetricName="([^"]+)"`)
)

// checkDashboard checks the resetnotify metrics of a dashboard body: metrics written in full
// (namespace, name, dimension pairs, options) and the schemas of SEARCH expressions.
func checkDashboard(t *testing.T, id, body string, check func(where, name string, dims map[string]string), ours func(where string, ns any) bool) {
	t.Helper()
	var dash struct {
		Widgets []struct {
			Properties struct {
				Title   string
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("%s: dashboard body is not JSON: %v", id, err)
	}
	for _, w := range dash.Widgets {
		where := id + " " + strconv.Quote(w.Properties.Title)
		for _, m := range w.Properties.Metrics {
			if len(m) == 0 {
				continue
			}
			if opts, ok := m[0].(map[string]any); ok {
				expr, _ := opts["expression"].(string)
				schema := searchSchema.FindStringSubmatch(expr)
				name := searchName.FindStringSubmatch(expr)
				if schema == nil || name == nil {
					continue
				}
				parts := strings.Split(schema[1], ",")
				if !ours(where, parts[0]) {
					continue
				}
				dims := map[string]string{}
				for _, d := range parts[1:] {
					dims[strings.TrimSpace(d)] = "intake" // any function: SEARCH matches them all
				}
				check(where, name[1], dims)
				continue
			}
			var s []string
			for _, v := range m {
				if str, ok := v.(string); ok {
					s = append(s, str)
				}
			}
			if len(s) > 0 && (s[0] == "." || s[0] == "...") {
				t.Errorf("%s: write metrics in full, not with %q, so this test can read them", where, s[0])
				continue
			}
			if len(s) < 2 || !ours(where, s[0]) {
				continue
			}
			if len(s)%2 != 0 {
				t.Errorf("%s: %v has a dimension without a value", where, s)
				continue
			}
			dims := map[string]string{}
			for i := 2; i+1 < len(s); i += 2 {
				dims[s[i]] = s[i+1]
			}
			check(where, s[1], dims)
		}
	}
}

// TestDispatchBatchFoldsItsMetrics checks that a dispatch batch writes one EMF line per
// distinct metric and dimensions (obs.Metrics.Hold in HandleBatch), with every sample, and
// that the happy path's transitions are logged at debug level only (the audit trail has them).
func TestDispatchBatchFoldsItsMetrics(t *testing.T) {
	f := newFixture(t)
	var recs []events.SQSMessage
	for i := range 5 {
		rec := f.admitKey(t, fmt.Sprintf("batch-%d", i))
		recs = append(recs, events.SQSMessage{MessageId: fmt.Sprint(i), Body: body(notify.MessageOf(rec))})
	}
	metricsBefore, logsBefore := len(f.metrics.String()), len(f.logs.String())
	if _, err := f.d.Handle(context.Background(), events.SQSEvent{Records: recs}); err != nil {
		t.Fatal(err)
	}
	emf, logs := f.metrics.String()[metricsBefore:], f.logs.String()[logsBefore:]
	lines := parseEMF(t, emf)
	transitions := withMetric(lines, obs.MetricTransitions)
	if len(transitions) != 2 {
		t.Fatalf("%d Transitions lines for 5 notifications, want 2 (dispatching and sent, 5 samples each):\n%s", len(transitions), emf)
	}
	for _, l := range transitions {
		if l.values[obs.MetricTransitions] != 5 {
			t.Errorf("Transitions to %s: %v, want 5", l.dims[obs.DimToState], l.values[obs.MetricTransitions])
		}
	}
	if calls := withMetric(lines, workercore.MetricProviderCalls); len(calls) != 1 || calls[0].values[workercore.MetricProviderCalls] != 5 {
		t.Errorf("ProviderCalls lines %+v, want one with 5 samples", calls)
	}
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if strings.Contains(l, `"msg":"transition"`) && !strings.Contains(l, `"level":"DEBUG"`) {
			t.Errorf("a happy-path transition logged above debug: %s", l)
		}
	}
}
