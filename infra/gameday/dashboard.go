package gameday

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// BaselineScenario is the scenario in which every line of every metric widget of the deployed
// dashboard must have a datapoint: a tile that stays empty under normal load is always empty.
const BaselineScenario = "baseline"

// Widget is one widget of a dashboard body, as CloudWatch's dashboard JSON defines it.
type Widget struct {
	Type, Title, Region string
	X, Y                int
	// Stat and Period are the widget's defaults for its lines.
	Stat   string
	Period int32
	Lines  []WidgetLine
	// Annotations are the values of its horizontal annotations.
	Annotations []float64
}

// WidgetLine is one entry of a metric widget's metrics array: a metric ("." repeats already
// expanded), or a SEARCH expression, which expands to every metric it matches.
type WidgetLine struct {
	Label, Stat string
	Period      int32
	Namespace   string
	Metric      string
	Dimensions  [][2]string
	// Search is a SEARCH expression's parsed form; nil for a metric.
	Search *Search
	// Unsupported says why the renderer cannot draw the line (another math expression).
	Unsupported string
}

// Search is a SEARCH('{Namespace,Dim,...} Key="value" ...', 'Stat', Period) expression: the
// metrics of the namespace whose dimension names are exactly Schema and that match Terms.
type Search struct {
	Namespace string
	Schema    []string
	Terms     map[string]string
	Stat      string
	Period    int32
}

var (
	searchRe = regexp.MustCompile(`^SEARCH\(\s*'(.*)'\s*,\s*'([^']+)'\s*,\s*(\d+)\s*\)$`)
	schemaRe = regexp.MustCompile(`^\{([^}]*)\}\s*(.*)$`)
	termRe   = regexp.MustCompile(`^([A-Za-z0-9_]+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))\s*`)
)

// ParseSearch parses a SEARCH expression of the form the dashboard uses: a schema and
// Key="value" terms; other search syntax (bare words, OR, partial match) is an error.
func ParseSearch(expr string) (*Search, error) {
	m := searchRe.FindStringSubmatch(strings.TrimSpace(expr))
	if m == nil {
		return nil, fmt.Errorf("not SEARCH('{...} terms', 'stat', period): %s", expr)
	}
	period, err := strconv.ParseInt(m[3], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("SEARCH period %s: %w", m[3], err)
	}
	s := &Search{Stat: m[2], Period: int32(period), Terms: map[string]string{}}
	sm := schemaRe.FindStringSubmatch(m[1])
	if sm == nil {
		return nil, fmt.Errorf("SEARCH without a {namespace,dimensions} schema: %s", expr)
	}
	for i, part := range strings.Split(sm[1], ",") {
		part = strings.Trim(strings.TrimSpace(part), `"`)
		if i == 0 {
			s.Namespace = part
		} else if part != "" {
			s.Schema = append(s.Schema, part)
		}
	}
	for rest := sm[2]; rest != ""; {
		t := termRe.FindStringSubmatch(rest)
		if t == nil {
			return nil, fmt.Errorf("SEARCH term %q: only Key=\"value\" terms are understood", rest)
		}
		v := t[3]
		if t[2] != "" || t[3] == "" {
			v = strings.ReplaceAll(t[2], `\"`, `"`)
		}
		s.Terms[t[1]] = v
		rest = rest[len(t[0]):]
	}
	return s, nil
}

// Matches says m is one of the search's metrics: its namespace, exactly its schema's dimension
// names, and every term (MetricName or a dimension) equal.
func (s *Search) Matches(m cwtypes.Metric) bool {
	if aws.ToString(m.Namespace) != s.Namespace || len(m.Dimensions) != len(s.Schema) {
		return false
	}
	dims := map[string]string{"MetricName": aws.ToString(m.MetricName)}
	for _, d := range m.Dimensions {
		if !slices.Contains(s.Schema, aws.ToString(d.Name)) {
			return false
		}
		dims[aws.ToString(d.Name)] = aws.ToString(d.Value)
	}
	for k, v := range s.Terms {
		if dims[k] != v {
			return false
		}
	}
	return true
}

type rawWidget struct {
	Type       string `json:"type"`
	X          int    `json:"x"`
	Y          int    `json:"y"`
	Properties struct {
		Title       string            `json:"title"`
		Region      string            `json:"region"`
		Stat        string            `json:"stat"`
		Period      int32             `json:"period"`
		Metrics     []json.RawMessage `json:"metrics"`
		Annotations struct {
			Horizontal []struct {
				Value float64 `json:"value"`
			} `json:"horizontal"`
		} `json:"annotations"`
	} `json:"properties"`
}

type lineOptions struct {
	ID         string `json:"id"`
	Expression string `json:"expression"`
	Label      string `json:"label"`
	Stat       string `json:"stat"`
	Period     int32  `json:"period"`
}

// ParseDashboard parses a dashboard body into its widgets, sorted as they are laid out (top
// to bottom, left to right). A metric widget's line that is not a metric nor a SEARCH it
// understands is kept with the reason it cannot be drawn.
func ParseDashboard(body string) ([]Widget, error) {
	var raw struct {
		Widgets []rawWidget `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		return nil, fmt.Errorf("dashboard body: %w", err)
	}
	var out []Widget
	for i, rw := range raw.Widgets {
		p := rw.Properties
		w := Widget{Type: rw.Type, Title: p.Title, Region: p.Region, X: rw.X, Y: rw.Y, Stat: p.Stat, Period: p.Period}
		if w.Title == "" {
			w.Title = fmt.Sprintf("widget %d (%s)", i+1, rw.Type)
		}
		if w.Stat == "" {
			w.Stat = "Average"
		}
		if w.Period == 0 {
			w.Period = 300
		}
		for _, a := range p.Annotations.Horizontal {
			w.Annotations = append(w.Annotations, a.Value)
		}
		if rw.Type == "metric" {
			lines, err := parseLines(w, p.Metrics)
			if err != nil {
				return nil, fmt.Errorf("widget %q: %w", w.Title, err)
			}
			w.Lines = lines
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Y != out[b].Y {
			return out[a].Y < out[b].Y
		}
		return out[a].X < out[b].X
	})
	return out, nil
}

// parseLines reads a metric widget's metrics array: each entry is [Namespace, MetricName,
// DimName, DimValue, ..., {options}] where "." repeats the previous metric's value in that
// position, or [{"expression": ...}].
func parseLines(w Widget, metrics []json.RawMessage) ([]WidgetLine, error) {
	var lines []WidgetLine
	var prev []string
	for n, m := range metrics {
		var items []json.RawMessage
		if err := json.Unmarshal(m, &items); err != nil {
			return nil, fmt.Errorf("metrics[%d]: %w", n, err)
		}
		var parts []string
		var opt lineOptions
		for _, it := range items {
			var s string
			if err := json.Unmarshal(it, &s); err == nil {
				parts = append(parts, s)
				continue
			}
			if err := json.Unmarshal(it, &opt); err != nil {
				return nil, fmt.Errorf("metrics[%d]: neither a string nor an options object: %s", n, it)
			}
		}
		l := WidgetLine{Label: opt.Label, Stat: cmp.Or(opt.Stat, w.Stat), Period: w.Period}
		if opt.Period != 0 {
			l.Period = opt.Period
		}
		if opt.Expression != "" {
			if l.Label == "" {
				l.Label = cmp.Or(opt.ID, opt.Expression)
			}
			s, err := ParseSearch(opt.Expression)
			if err != nil {
				l.Unsupported = err.Error()
			}
			l.Search = s
			lines = append(lines, l)
			continue
		}
		for i := range parts {
			if parts[i] == "." {
				if i >= len(prev) {
					return nil, fmt.Errorf("metrics[%d]: \".\" in position %d with nothing above it", n, i)
				}
				parts[i] = prev[i]
			}
		}
		if len(parts) < 2 || len(parts)%2 != 0 {
			return nil, fmt.Errorf("metrics[%d]: want namespace, metric name and dimension pairs, got %q", n, parts)
		}
		prev = parts
		l.Namespace, l.Metric = parts[0], parts[1]
		for i := 2; i < len(parts); i += 2 {
			l.Dimensions = append(l.Dimensions, [2]string{parts[i], parts[i+1]})
		}
		if l.Label == "" {
			l.Label = strings.TrimSpace(l.Metric + " " + dimValues(l.Dimensions))
		}
		lines = append(lines, l)
	}
	return lines, nil
}

func dimValues(dims [][2]string) string {
	var vs []string
	for _, d := range dims {
		vs = append(vs, d[1])
	}
	return strings.Join(vs, " ")
}

// DashboardAPI is what the renderer needs of CloudWatch.
type DashboardAPI interface {
	GetDashboard(ctx context.Context, in *cloudwatch.GetDashboardInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetDashboardOutput, error)
	ListMetrics(ctx context.Context, in *cloudwatch.ListMetricsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.ListMetricsOutput, error)
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// WidgetResult is one widget of the deployed dashboard in a scenario's window.
type WidgetResult struct {
	Title string `json:"title"`
	Type  string `json:"type"`
	// Drawn: the widget is in the scenario's dashboard PNG; NotDrawn says why not (a text,
	// alarm or logs widget, an expression the renderer does not evaluate).
	Drawn    bool   `json:"drawn"`
	NotDrawn string `json:"not_drawn,omitempty"`
	// Lines is the number of its lines; Series the number of series drawn (a SEARCH's matching
	// metrics count one each).
	Lines  int `json:"lines"`
	Series int `json:"series"`
	// Empty are its lines with no datapoint in the window (a SEARCH: no matching metric with one).
	Empty []string `json:"empty_lines,omitempty"`
}

// EmptyTile says no line of the drawn widget had a datapoint: the tile shows nothing.
func (w WidgetResult) EmptyTile() bool { return w.Drawn && len(w.Empty) == w.Lines }

// widgetData is a drawn widget's series.
type widgetData struct {
	w      Widget
	series []series
}

// readWidgets queries every drawable metric widget over [from, to): each metric line with its
// stat and period, each SEARCH as the metrics ListMetrics finds for it.
func readWidgets(ctx context.Context, cw DashboardAPI, ws []Widget, from, to time.Time) ([]WidgetResult, []widgetData, error) {
	var results []WidgetResult
	var data []widgetData
	for _, w := range ws {
		wr := WidgetResult{Title: w.Title, Type: w.Type}
		if w.Type != "metric" {
			wr.NotDrawn = fmt.Sprintf("a %s widget: nothing to draw", w.Type)
			results = append(results, wr)
			continue
		}
		if i := slices.IndexFunc(w.Lines, func(l WidgetLine) bool { return l.Unsupported != "" }); i >= 0 {
			wr.NotDrawn = w.Lines[i].Unsupported
			results = append(results, wr)
			continue
		}
		wd := widgetData{w: w}
		for _, l := range w.Lines {
			ss, err := readLine(ctx, cw, l, from, to)
			if err != nil {
				return nil, nil, fmt.Errorf("widget %q, %s: %w", w.Title, l.Label, err)
			}
			has := false
			for _, s := range ss {
				has = has || len(s.val) > 0
			}
			if !has {
				wr.Empty = append(wr.Empty, l.Label)
			}
			wd.series = append(wd.series, ss...)
		}
		wr.Drawn, wr.Lines, wr.Series = true, len(w.Lines), len(wd.series)
		results = append(results, wr)
		data = append(data, wd)
	}
	return results, data, nil
}

// readLine reads one line's series: one for a metric, one per matching metric for a SEARCH.
func readLine(ctx context.Context, cw DashboardAPI, l WidgetLine, from, to time.Time) ([]series, error) {
	if l.Search == nil {
		var dims []cwtypes.Dimension
		for _, d := range l.Dimensions {
			dims = append(dims, cwtypes.Dimension{Name: aws.String(d[0]), Value: aws.String(d[1])})
		}
		m := cwtypes.Metric{Namespace: aws.String(l.Namespace), MetricName: aws.String(l.Metric), Dimensions: dims}
		return metricSeries(ctx, cw, []cwtypes.Metric{m}, []string{l.Label}, l.Stat, l.Period, from, to)
	}
	s := l.Search
	in := &cloudwatch.ListMetricsInput{Namespace: aws.String(s.Namespace)}
	if name, ok := s.Terms["MetricName"]; ok {
		in.MetricName = aws.String(name)
	}
	var ms []cwtypes.Metric
	var labels []string
	for p := cloudwatch.NewListMetricsPaginator(cw, in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, m := range out.Metrics {
			if s.Matches(m) {
				ms = append(ms, m)
				labels = append(labels, searchLabel(m, s))
			}
		}
	}
	return metricSeries(ctx, cw, ms, labels, s.Stat, s.Period, from, to)
}

// searchLabel names a SEARCH's metric by its dimension values, in the schema's order.
func searchLabel(m cwtypes.Metric, s *Search) string {
	var vs []string
	for _, name := range s.Schema {
		for _, d := range m.Dimensions {
			if aws.ToString(d.Name) == name {
				vs = append(vs, aws.ToString(d.Value))
			}
		}
	}
	return aws.ToString(m.MetricName) + " " + strings.Join(vs, " ")
}

// metricSeries reads metrics with one stat and period, 100 queries a call.
func metricSeries(ctx context.Context, cw DashboardAPI, ms []cwtypes.Metric, labels []string, stat string, period int32, from, to time.Time) ([]series, error) {
	var out []series
	for start := 0; start < len(ms); start += 100 {
		end := min(start+100, len(ms))
		var q []cwtypes.MetricDataQuery
		for i := start; i < end; i++ {
			q = append(q, cwtypes.MetricDataQuery{Id: aws.String(fmt.Sprintf("q%d", i)), Label: aws.String(labels[i]),
				MetricStat: &cwtypes.MetricStat{Metric: &ms[i], Period: aws.Int32(period), Stat: aws.String(stat)}})
		}
		byID := map[string]*series{}
		in := &cloudwatch.GetMetricDataInput{MetricDataQueries: q, StartTime: aws.Time(from), EndTime: aws.Time(to)}
		for {
			res, err := cw.GetMetricData(ctx, in)
			if err != nil {
				return nil, err
			}
			for _, r := range res.MetricDataResults {
				s := byID[aws.ToString(r.Id)]
				if s == nil {
					s = &series{}
					byID[aws.ToString(r.Id)] = s
				}
				for j := range r.Timestamps {
					if j < len(r.Values) {
						s.at, s.val = append(s.at, r.Timestamps[j]), append(s.val, r.Values[j])
					}
				}
			}
			if res.NextToken == nil {
				break
			}
			in.NextToken = res.NextToken
		}
		for i := start; i < end; i++ {
			s := series{label: labels[i]}
			if got := byID[fmt.Sprintf("q%d", i)]; got != nil {
				s.at, s.val = got.at, got.val
			}
			sortSeries(&s)
			out = append(out, s)
		}
	}
	return out, nil
}

func sortSeries(s *series) {
	idx := make([]int, len(s.at))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.at[idx[a]].Before(s.at[idx[b]]) })
	at, val := make([]time.Time, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		at[i], val[i] = s.at[j], s.val[j]
	}
	s.at, s.val = at, val
}

// judgeDashboard fails the baseline for each drawn widget none of whose lines had a datapoint,
// naming the widget and its lines. A line of a rare event (an expiry, a failover, an idle
// worker's Lambda metrics) may be empty under normal load beside others that are not: it is
// listed in the report, not failed.
func judgeDashboard(res *Result) {
	if res.Name != BaselineScenario {
		return
	}
	for _, w := range res.Widgets {
		if w.EmptyTile() {
			res.Errors = append(res.Errors, fmt.Sprintf("dashboard: widget %q had no datapoint during the baseline, an always-empty tile: %s",
				w.Title, strings.Join(w.Empty, "; ")))
			res.Passed = false
		}
	}
}

// DrawDashboard reads the deployed dashboard's body (the stack's Dashboard resource), draws its
// widgets over the scenario's window into dir as dashboard-<scenario>.png, lists the widgets it
// cannot draw and the lines without a datapoint, and fails the baseline for an empty tile. Not reading it fails the scenario.
func (r *Run) DrawDashboard(ctx context.Context, sc Scenario, res *Result, dir string) {
	if err := drawDashboard(ctx, r.S.CW, r.S.Dashboard, res, dir); err != nil {
		res.Errors = append(res.Errors, "dashboard: "+err.Error())
		res.Passed = false
	}
}

func drawDashboard(ctx context.Context, cw DashboardAPI, name string, res *Result, dir string) error {
	if name == "" {
		return fmt.Errorf("the stack has no Dashboard resource")
	}
	out, err := cw.GetDashboard(ctx, &cloudwatch.GetDashboardInput{DashboardName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("GetDashboard %s: %w", name, err)
	}
	ws, err := ParseDashboard(aws.ToString(out.DashboardBody))
	if err != nil {
		return err
	}
	results, data, err := readWidgets(ctx, cw, ws, res.Start, res.End.Add(time.Minute))
	if err != nil {
		return err
	}
	res.Widgets = results
	judgeDashboard(res)
	return drawWidgets(data, res, dir)
}
