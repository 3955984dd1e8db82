package gameday

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// chartPeriod is the charts' period: one point a minute, the dashboard's finest.
const chartPeriod = 60

// series is one metric over the scenario, from GetMetricData.
type series struct {
	label string
	at    []time.Time
	val   []float64
}

// fetch reads metrics over [from, to) at one-minute periods, as the dashboard's widgets read
// them.
func (r *Run) fetch(ctx context.Context, ms []ChartMetric, from, to time.Time) ([]series, error) {
	var q []cwtypes.MetricDataQuery
	for i, m := range ms {
		ns := m.Namespace
		if ns == "" {
			ns = r.S.Namespace
		}
		var dims []cwtypes.Dimension
		for k, v := range m.Dimensions {
			dims = append(dims, cwtypes.Dimension{Name: aws.String(k), Value: aws.String(v)})
		}
		q = append(q, cwtypes.MetricDataQuery{
			Id: aws.String(fmt.Sprintf("m%d", i)), Label: aws.String(m.Label),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String(ns), MetricName: aws.String(m.Metric), Dimensions: dims},
				Period: aws.Int32(chartPeriod), Stat: aws.String(m.Stat),
			},
		})
	}
	if len(q) == 0 {
		return nil, nil
	}
	out, err := r.S.CW.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		MetricDataQueries: q, StartTime: aws.Time(from), EndTime: aws.Time(to),
	})
	if err != nil {
		return nil, err
	}
	byID := map[string]cwtypes.MetricDataResult{}
	for _, res := range out.MetricDataResults {
		byID[aws.ToString(res.Id)] = res
	}
	var ss []series
	for i, m := range ms {
		res := byID[fmt.Sprintf("m%d", i)]
		s := series{label: m.Label}
		type pt struct {
			t time.Time
			v float64
		}
		var pts []pt
		for j := range res.Timestamps {
			if j < len(res.Values) {
				pts = append(pts, pt{res.Timestamps[j], res.Values[j]})
			}
		}
		sort.Slice(pts, func(a, b int) bool { return pts[a].t.Before(pts[b].t) })
		for _, p := range pts {
			s.at = append(s.at, p.t)
			s.val = append(s.val, p.v)
		}
		ss = append(ss, s)
	}
	return ss, nil
}

// chartMetrics are the lines of a scenario's chart: the metric of each alarm its runbook names
// (with the alarm's statistic), the scenario's own, and the admissions.
func (r *Run) chartMetrics(sc Scenario) []ChartMetric {
	ms := []ChartMetric{{Label: "admitted (Requests, 202)", Metric: "Requests", Stat: "Sum",
		Dimensions: map[string]string{"Function": "intake", "Route": "POST /v1/notifications", "Status": "202"}}}
	for _, name := range sc.Expect {
		if d, ok := r.Defs[name]; ok {
			ms = append(ms, ChartMetric{Label: fmt.Sprintf("%s %s %v: %s's metric", d.Metric, d.Stat, d.Dimensions, name), Namespace: d.Namespace,
				Metric: d.Metric, Stat: d.Stat, Dimensions: d.Dimensions, alarm: name})
		}
	}
	return append(ms, sc.Charts...)
}

// DrawChart writes the scenario's chart into dir and names it in res: one panel per key
// metric, one point a minute as the dashboard draws it (an expected alarm's metric with its
// threshold dashed), and a last panel with each alarm's time in ALARM; the fault's window is
// shaded in every panel.
func (r *Run) DrawChart(ctx context.Context, sc Scenario, res *Result, dir string) error {
	ms := r.chartMetrics(sc)
	ss, err := r.fetch(ctx, ms, res.Start.Add(-time.Minute), res.End.Add(time.Minute))
	if err != nil {
		return err
	}
	return r.drawChart(sc, ms, ss, res, dir)
}

// drawChart draws the series ss of the metrics ms.
// It is long because it lays out the whole picture in one place (the metric panels, the alarm
// panel and their tiling), so that every panel shares one time axis.
//
//revive:disable-next-line:function-length
func (r *Run) drawChart(sc Scenario, ms []ChartMetric, ss []series, res *Result, dir string) error {
	minutes := func(t time.Time) float64 { return t.Sub(res.Start).Minutes() }
	xmax := minutes(res.End) + 1
	shade := func(p *plot.Plot, top float64) error {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: minutes(res.FaultStart), Y: 0}, {X: minutes(res.FaultEnd), Y: 0},
			{X: minutes(res.FaultEnd), Y: top}, {X: minutes(res.FaultStart), Y: top}})
		if err != nil {
			return err
		}
		poly.Color = color.NRGBA{R: 255, G: 170, B: 170, A: 90}
		poly.LineStyle.Width = 0
		p.Add(poly)
		return nil
	}
	var plots []*plot.Plot
	for i, s := range ss {
		p := plot.New()
		p.Title.Text = s.label
		p.Title.TextStyle.Font.Size = vg.Points(9)
		p.X.Min, p.X.Max = -1, xmax
		top := 1.0
		for _, v := range s.val {
			top = math.Max(top, v)
		}
		var threshold *float64
		if m := ms[i]; m.alarm != "" {
			if d, ok := r.Defs[m.alarm]; ok {
				threshold = &d.Threshold
				top = math.Max(top, d.Threshold)
			}
		}
		top *= 1.2
		p.Y.Min, p.Y.Max = 0, top
		p.Add(plotter.NewGrid())
		if err := shade(p, top); err != nil {
			return err
		}
		xy := make(plotter.XYs, len(s.at))
		for j := range s.at {
			xy[j] = plotter.XY{X: minutes(s.at[j]), Y: s.val[j]}
		}
		if len(xy) > 0 {
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
			l.Width = vg.Points(1.5)
			pts.Shape = draw.CircleGlyph{}
			p.Add(l, pts)
		}
		if threshold != nil {
			th, err := plotter.NewLine(plotter.XYs{{X: -1, Y: *threshold}, {X: xmax, Y: *threshold}})
			if err != nil {
				return err
			}
			th.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			th.Color = color.NRGBA{R: 200, A: 255}
			p.Add(th)
			p.Legend.Add(fmt.Sprintf("threshold %g", *threshold), th)
			p.Legend.Top = true
		}
		plots = append(plots, p)
	}
	// The alarms: one row each, a bar while in ALARM.
	p := plot.New()
	p.Title.Text = "alarms in ALARM (red: expected; purple: others) - shaded: the fault"
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = fmt.Sprintf("minutes since the scenario began (%s UTC)", res.Start.Format("15:04:05"))
	p.X.Min, p.X.Max = -1, xmax
	rows := len(res.Alarms) + len(res.AlarmAtStart)
	p.Y.Min, p.Y.Max = -0.5, math.Max(float64(rows)-0.5, 0.5)
	if err := shade(p, p.Y.Max); err != nil {
		return err
	}
	var ticks []plot.Tick
	row := 0.0
	bar := func(name string, from, to time.Time, c color.Color) error {
		l, err := plotter.NewLine(plotter.XYs{{X: minutes(from), Y: row}, {X: minutes(to), Y: row}})
		if err != nil {
			return err
		}
		l.Width, l.Color = vg.Points(7), c
		p.Add(l)
		ticks = append(ticks, plot.Tick{Value: row, Label: name})
		row++
		return nil
	}
	for _, a := range res.Alarms {
		from, to := res.End, res.End
		if a.AlarmAt != nil {
			from = *a.AlarmAt
		}
		if a.OKAt != nil {
			to = *a.OKAt
		}
		c := color.Color(color.NRGBA{R: 200, A: 255})
		if !a.Expected {
			c = color.NRGBA{R: 120, G: 60, B: 160, A: 255}
		}
		if err := bar(a.Name, from, to, c); err != nil {
			return err
		}
	}
	for _, name := range res.AlarmAtStart {
		if err := bar(name+" (from before)", res.Start, res.Start, color.NRGBA{R: 150, G: 150, B: 150, A: 255}); err != nil {
			return err
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	plots = append(plots, p)

	const w = 24 * vg.Centimeter
	h := vg.Length(len(plots)) * 5 * vg.Centimeter
	img := vgimg.New(w, h)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(6)}
	grid := make([][]*plot.Plot, len(plots))
	for i := range plots {
		grid[i] = []*plot.Plot{plots[i]}
	}
	canvases := plot.Align(grid, t, dc)
	for i := range plots {
		plots[i].Draw(canvases[i][0])
	}
	name := sc.Name + ".png"
	if err := writePNG(filepath.Join(dir, name), img); err != nil {
		return err
	}
	res.Chart = name
	return nil
}

// writePNG writes img to path as a PNG.
func writePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
