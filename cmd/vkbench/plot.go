package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// ErrPlotFormat means the plot's file name asks for a format WritePlot does
// not write; only .svg and .png are supported.
var ErrPlotFormat = errors.New("vkbench: unsupported plot format")

// ErrNothingToPlot means the report has no dispatch or transfer figure that
// can go on a log axis (a positive value with its "k" or "bytes" parameter).
var ErrNothingToPlot = errors.New("vkbench: nothing to plot")

// ErrPlot wraps a failure inside the plotting library.
var ErrPlot = errors.New("vkbench: plot failed")

// panelSpec says which figures make one panel and how they are drawn.
type panelSpec struct {
	suite, param, unit string
	title, xLabel      string
	yLabel             string
	logY               bool
}

// The two panels: launch cost against launch count (log-log, so per-launch
// overhead and its amortisation both read as straight lines), and bandwidth
// against copy size (log x: sizes span from KiB to hundreds of MiB).
var plotPanels = []panelSpec{
	{suite: "dispatch", param: "k", unit: "ns/launch", title: "Per-launch time", xLabel: "launches K", yLabel: "ns per launch", logY: true},
	{suite: "transfer", param: "bytes", unit: "GB/s", title: "Bandwidth", xLabel: "bytes", yLabel: "GB/s"},
}

// plotWidth and panelHeight size the image; a panel is as tall as it is
// legible with a legend of half a dozen lines.
const (
	plotWidth   = 18 * vg.Centimeter
	panelHeight = 11 * vg.Centimeter
)

// WritePlot draws the dispatch and transfer figures of r into one image at
// path, one panel per suite present, stacked: each figure name is a line
// with points. The format follows the extension, .svg or .png. The file is
// written only when the plot is complete.
func WritePlot(path string, r *Report) (err error) {
	if err := checkPlotPath(path); err != nil {
		return err
	}
	ext := strings.ToLower(filepath.Ext(path))
	if r == nil {
		return fmt.Errorf("%w: nil report", ErrNothingToPlot)
	}
	var plots [][]*plot.Plot
	for _, spec := range plotPanels {
		p, ok := buildPanel(spec, r.Figures)
		if ok {
			plots = append(plots, []*plot.Plot{p})
		}
	}
	if len(plots) == 0 {
		return fmt.Errorf("%w: no dispatch figure with k nor transfer figure with bytes", ErrNothingToPlot)
	}

	// The plotting library panics on values a log axis cannot show; the
	// panels are built to avoid that, and this keeps any case missed an error.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPlot, p)
		}
	}()
	height := panelHeight * vg.Length(len(plots))
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if ext == ".svg" {
		canvas = vgsvg.New(plotWidth, height)
	} else {
		img := vgimg.New(plotWidth, height)
		canvas = pngCanvas{img, vgimg.PngCanvas{Canvas: img}}
	}
	tiles := draw.Tiles{
		Rows: len(plots), Cols: 1,
		PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter,
		PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter,
	}
	dc := draw.New(canvas)
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	return writeFileAtomically(path, canvas)
}

// checkPlotPath reports ErrPlotFormat unless path's extension is one
// WritePlot writes (.svg or .png, in any case), so that vkbench can refuse
// a plot before it measures anything.
func checkPlotPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
		return nil
	}
	return fmt.Errorf("%w: %q (want .svg or .png)", ErrPlotFormat, path)
}

// pngCanvas draws on an image canvas and writes it as PNG.
type pngCanvas struct {
	*vgimg.Canvas
	png vgimg.PngCanvas
}

// WriteTo encodes the canvas as PNG.
func (c pngCanvas) WriteTo(w io.Writer) (int64, error) { return c.png.WriteTo(w) }

// buildPanel makes one panel from the figures of spec's suite and unit that
// carry spec's parameter, one line per figure name in order of appearance.
// It reports false when no such figure has positive coordinates.
func buildPanel(spec panelSpec, figures []Figure) (*plot.Plot, bool) {
	var names []string
	series := map[string]plotter.XYs{}
	for _, f := range figures {
		x, ok := f.Params[spec.param]
		if f.Suite != spec.suite || f.Unit != spec.unit || !ok || x <= 0 || !(f.Value > 0) || math.IsInf(f.Value, 0) {
			continue
		}
		if _, seen := series[f.Name]; !seen {
			names = append(names, f.Name)
		}
		series[f.Name] = append(series[f.Name], plotter.XY{X: float64(x), Y: f.Value})
	}
	if len(names) == 0 {
		return nil, false
	}
	p := plot.New()
	p.Title.Text = spec.title
	p.X.Label.Text = spec.xLabel
	p.Y.Label.Text = spec.yLabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	if spec.param == "bytes" {
		p.X.Tick.Marker = byteTicks{}
	}
	if spec.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	xMin, xMax, yMin, yMax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, name := range names {
		points := series[name]
		slices.SortFunc(points, func(a, b plotter.XY) int {
			switch {
			case a.X < b.X:
				return -1
			case a.X > b.X:
				return 1
			}
			return 0
		})
		for _, pt := range points {
			xMin, xMax = math.Min(xMin, pt.X), math.Max(xMax, pt.X)
			yMin, yMax = math.Min(yMin, pt.Y), math.Max(yMax, pt.Y)
		}
		line, dots, err := plotter.NewLinePoints(points)
		if err != nil {
			continue
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		dots.Color = plotutil.Color(i)
		dots.Shape = plotutil.Shape(i)
		p.Add(line, dots)
		p.Legend.Add(name, line, dots)
	}
	// Pad the ranges so that a single point or a flat line still spans a
	// positive range on a log axis and nothing sits on the frame, and leave
	// the top of the panel to the legend (a line of it per name) so that the
	// legend does not hide data.
	p.X.Min, p.X.Max = xMin/1.5, xMax*1.5
	legendShare := min(0.07*float64(len(names)+1), 0.6)
	if spec.logY {
		lo, hi := math.Log(yMin/1.5), math.Log(yMax*1.5)
		p.Y.Min, p.Y.Max = math.Exp(lo), math.Exp(lo+(hi-lo)/(1-legendShare))
	} else {
		p.Y.Min, p.Y.Max = 0, yMax*1.05/(1-legendShare)
	}
	return p, true
}

// byteTicks marks a log axis of sizes at powers of two, labelled in IEC
// units ("4 KiB", "1 MiB"), which is how buffer sizes are chosen and read.
type byteTicks struct{}

// maxByteLabels keeps the labels of a wide size range from running together.
const maxByteLabels = 8

// Ticks labels every step-th power of two, step being the smallest even
// number of doublings that keeps the labels within maxByteLabels.
func (byteTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 0) {
		return nil
	}
	first, last := int(math.Floor(math.Log2(lo))), int(math.Ceil(math.Log2(hi)))
	step := 2
	for (last-first)/step+1 > maxByteLabels {
		step += 2
	}
	var ticks []plot.Tick
	for e := first; e <= last && e < 63; e++ {
		value := math.Ldexp(1, e)
		if e%step == 0 {
			ticks = append(ticks, plot.Tick{Value: value, Label: formatBytes(int64(value))})
		} else {
			ticks = append(ticks, plot.Tick{Value: value})
		}
	}
	return ticks
}

// writeFileAtomically writes to a temporary file beside path and renames it
// into place, so a failed write never leaves a truncated image behind.
func writeFileAtomically(path string, src io.WriterTo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if _, err := src.WriteTo(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
