package gameday

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// dashboardCols is the PNG's columns: the dashboard's 8-wide widgets, three to a row.
const dashboardCols = 3

// legendMax bounds a widget's legend; a SEARCH can match many metrics.
const legendMax = 6

// drawWidgets draws each widget's series as one panel, laid out as the dashboard orders them,
// minutes since the scenario began on the x axis, the fault's window shaded and horizontal
// annotations dashed; an empty tile has its title in red, a widget's lines without a datapoint
// are named under its title.
func drawWidgets(data []widgetData, res *Result, dir string) error {
	if len(data) == 0 {
		return nil
	}
	minutes := func(t time.Time) float64 { return t.Sub(res.Start).Minutes() }
	var plots []*plot.Plot
	for _, wd := range data {
		p, err := widgetPlot(wd, res, minutes)
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	rows := (len(plots) + dashboardCols - 1) / dashboardCols
	const w = 42 * vg.Centimeter
	img := vgimg.New(w, vg.Length(rows)*9*vg.Centimeter)
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: dashboardCols, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadX: vg.Points(10), PadY: vg.Points(10)}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, dashboardCols)
	}
	for i, p := range plots {
		grid[i/dashboardCols][i%dashboardCols] = p
	}
	canvases := plot.Align(grid, t, dc)
	for i, p := range plots {
		p.Draw(canvases[i/dashboardCols][i%dashboardCols])
	}
	name := "dashboard-" + res.Name + ".png"
	if err := writePNG(filepath.Join(dir, name), img); err != nil {
		return err
	}
	res.Dashboard = name
	return nil
}

// widgetPlot is one widget's panel.
func widgetPlot(wd widgetData, res *Result, minutes func(time.Time) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = wd.w.Title
	if i := slices.IndexFunc(res.Widgets, func(r WidgetResult) bool { return r.Title == wd.w.Title }); i >= 0 && res.Widgets[i].EmptyTile() {
		p.Title.Text = "EMPTY TILE: " + p.Title.Text
		p.Title.TextStyle.Color = color.NRGBA{R: 200, A: 255}
	} else if i >= 0 && len(res.Widgets[i].Empty) > 0 {
		p.Title.Text += fmt.Sprintf("\n(no datapoint: %s)", strings.Join(res.Widgets[i].Empty, "; "))
	}
	p.Title.TextStyle.Font.Size = vg.Points(8)
	p.X.Label.Text = fmt.Sprintf("minutes since %s UTC (period %d s)", res.Start.Format("15:04:05"), wd.w.Period)
	p.X.Label.TextStyle.Font.Size = vg.Points(7)
	p.Legend.TextStyle.Font.Size = vg.Points(6)
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Min, p.X.Max = -1, minutes(res.End)+1
	top := 1.0
	for _, s := range wd.series {
		for j, v := range s.val {
			top = math.Max(top, v)
			p.X.Min = math.Min(p.X.Min, minutes(s.at[j]))
		}
	}
	for _, a := range wd.w.Annotations {
		top = math.Max(top, a)
	}
	top *= 1.2
	p.Y.Min, p.Y.Max = 0, top
	if err := decorate(p, wd.w, res, minutes); err != nil {
		return nil, err
	}
	shown := 0
	for k, s := range wd.series {
		if len(s.at) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(s.at))
		for j := range s.at {
			xy[j] = plotter.XY{X: minutes(s.at[j]), Y: s.val[j]}
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color = plotutil.Color(k), plotutil.Color(k)
		pts.Shape, pts.Radius = draw.CircleGlyph{}, vg.Points(1.5)
		p.Add(l, pts)
		if shown++; shown <= legendMax {
			p.Legend.Add(s.label, l)
		}
	}
	if shown > legendMax {
		p.Title.Text += fmt.Sprintf(" (%d series, legend: first %d)", shown, legendMax)
	}
	return p, nil
}

// decorate adds a panel's grid, the fault's window shaded and the widget's horizontal
// annotations dashed, once its axes are set.
func decorate(p *plot.Plot, w Widget, res *Result, minutes func(time.Time) float64) error {
	p.Add(plotter.NewGrid())
	if res.FaultEnd.After(res.FaultStart) {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: minutes(res.FaultStart), Y: 0}, {X: minutes(res.FaultEnd), Y: 0},
			{X: minutes(res.FaultEnd), Y: p.Y.Max}, {X: minutes(res.FaultStart), Y: p.Y.Max}})
		if err != nil {
			return err
		}
		poly.Color = color.NRGBA{R: 255, G: 170, B: 170, A: 90}
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	for _, a := range w.Annotations {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: a}, {X: p.X.Max, Y: a}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.NRGBA{R: 200, A: 255}
		p.Add(l)
	}
	return nil
}
