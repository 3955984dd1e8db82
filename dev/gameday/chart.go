package gameday

import (
	"context"
	"fmt"
	"image/color"
	"math"
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
			ms = append(ms, ChartMetric{Label: fmt.Sprintf("%s (%s %s)", d.Metric, d.Stat, name), Namespace: d.Namespace,
				Metric: d.Metric, Stat: d.Stat, Dimensions: d.Dimensions})
		}
	}
	return append(ms, sc.Charts...)
}

// DrawChart writes the scenario's chart into dir and names it in res: its key metrics, one
// point a minute, with the fault's window shaded and each alarm's time in ALARM drawn as a bar.
func (r *Run) DrawChart(ctx context.Context, sc Scenario, res *Result, dir string) error {
	ss, err := r.fetch(ctx, r.chartMetrics(sc), res.Start.Add(-time.Minute), res.End.Add(time.Minute))
	if err != nil {
		return err
	}
	p := plot.New()
	p.Add(plotter.NewGrid())
	p.Title.Text = fmt.Sprintf("%s: fault %s to %s UTC", sc.Name, res.FaultStart.Format("15:04:05"), res.FaultEnd.Format("15:04:05"))
	p.X.Label.Text = "minutes since the scenario began"
	p.Y.Label.Text = "per minute (the alarm's statistic)"
	p.Legend.Top = true
	minutes := func(t time.Time) float64 { return t.Sub(res.Start).Minutes() }
	top := 1.0
	for _, s := range ss {
		for _, v := range s.val {
			top = math.Max(top, v)
		}
	}
	top *= 1.25
	// The fault's window, shaded.
	shade, err := plotter.NewPolygon(plotter.XYs{{X: minutes(res.FaultStart), Y: 0}, {X: minutes(res.FaultEnd), Y: 0},
		{X: minutes(res.FaultEnd), Y: top}, {X: minutes(res.FaultStart), Y: top}})
	if err != nil {
		return err
	}
	shade.Color = color.NRGBA{R: 255, G: 170, B: 170, A: 90}
	shade.LineStyle.Width = 0
	p.Add(shade)
	p.Legend.Add("fault in force", shade)
	for i, s := range ss {
		xy := make(plotter.XYs, len(s.at))
		for j := range s.at {
			xy[j] = plotter.XY{X: minutes(s.at[j]), Y: s.val[j]}
		}
		if len(xy) == 0 {
			xy = plotter.XYs{{X: 0, Y: 0}}
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		pts.Shape = draw.CircleGlyph{}
		l.Width = vg.Points(1.5)
		p.Add(l, pts)
		p.Legend.Add(s.label, l, pts)
	}
	// Each alarm that fired: a bar near the top for its time in ALARM.
	for i, a := range res.Alarms {
		if a.AlarmAt == nil {
			continue
		}
		end := res.End
		if a.OKAt != nil {
			end = *a.OKAt
		}
		y := top * (0.97 - 0.04*float64(i))
		bar, err := plotter.NewLine(plotter.XYs{{X: minutes(*a.AlarmAt), Y: y}, {X: minutes(end), Y: y}})
		if err != nil {
			return err
		}
		bar.Width = vg.Points(5)
		bar.Color = color.RGBA{R: 200, A: 255}
		if !a.Expected {
			bar.Color = color.RGBA{R: 120, G: 60, B: 160, A: 255}
		}
		p.Add(bar)
		p.Legend.Add(a.Name+" in ALARM", bar)
	}
	p.Y.Min, p.Y.Max = 0, top
	p.X.Min, p.X.Max = -1, minutes(res.End)+1
	name := sc.Name + ".png"
	if err := p.Save(26*vg.Centimeter, 14*vg.Centimeter, filepath.Join(dir, name)); err != nil {
		return err
	}
	res.Chart = name
	return nil
}
