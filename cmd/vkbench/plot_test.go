package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWritePlotWritesSVGAndPNG(t *testing.T) {
	r := sampleReport()
	r.Figures = append(r.Figures, syntheticFloor().Figures(nil)...)
	dir := t.TempDir()

	svgPath := filepath.Join(dir, "vkbench.svg")
	require.NoError(t, WritePlot(svgPath, r))
	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	for _, name := range []string{"replay", "eager", "floor-replay", "upload", "floor-memcpy"} {
		assert.Contains(t, string(svg), ">"+name+"<", "legend names %s", name)
	}

	pngPath := filepath.Join(dir, "vkbench.PNG")
	require.NoError(t, WritePlot(pngPath, r))
	raw, err := os.ReadFile(pngPath)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dy(), img.Bounds().Dx(), "two panels stacked make the image taller than wide")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left behind")
}

func TestWritePlotSkipsAbsentSuites(t *testing.T) {
	onlyDispatch := &Report{Figures: []Figure{
		{Suite: "dispatch", Name: "replay", Params: map[string]int64{"k": 1000}, Value: 1800, Unit: "ns/launch", Samples: 1},
	}}
	path := filepath.Join(t.TempDir(), "dispatch.png")
	require.NoError(t, WritePlot(path, onlyDispatch))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	assert.Less(t, img.Bounds().Dy(), img.Bounds().Dx(), "one panel is wider than tall")
}

func TestWritePlotSurvivesValuesALogAxisCannotShow(t *testing.T) {
	r := &Report{Figures: []Figure{
		{Suite: "dispatch", Name: "replay", Params: map[string]int64{"k": 0}, Value: 1800, Unit: "ns/launch", Samples: 1},
		{Suite: "dispatch", Name: "replay", Params: map[string]int64{"k": 10}, Value: 0, Unit: "ns/launch", Samples: 1},
		{Suite: "dispatch", Name: "eager", Params: map[string]int64{"k": 10}, Value: 1, Unit: "ns/launch", Samples: 1},
		{Suite: "transfer", Name: "upload", Params: map[string]int64{"bytes": 1}, Value: -3, Unit: "GB/s", Samples: 1},
		{Suite: "transfer", Name: "upload", Params: map[string]int64{"bytes": 1}, Value: 0.5, Unit: "GB/s", Samples: 1},
	}}
	path := filepath.Join(t.TempDir(), "edge.svg")
	require.NoError(t, WritePlot(path, r))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Positive(t, info.Size())
}

func TestWritePlotRefusesWhatItCannotDraw(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"plot.pdf", "plot", "plot.svg.txt"} {
		err := WritePlot(filepath.Join(dir, name), sampleReport())
		assert.ErrorIs(t, err, ErrPlotFormat, name)
	}

	noPlottable := &Report{Figures: []Figure{
		{Suite: "alloc", Name: "claim-free", Value: 1e6, Unit: "ops/s", Samples: 1},
		{Suite: "dispatch", Name: "replay", Value: 1800, Unit: "ns/launch", Samples: 1}, // no k
		{Suite: "transfer", Name: "upload", Params: map[string]int64{"bytes": 1 << 20}, Value: 3, Unit: "MB/s", Samples: 1},
	}}
	assert.ErrorIs(t, WritePlot(filepath.Join(dir, "none.svg"), noPlottable), ErrNothingToPlot)
	assert.ErrorIs(t, WritePlot(filepath.Join(dir, "nil.svg"), nil), ErrNothingToPlot)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a refused plot writes no file")
}

func TestByteTicksLabelPowersOfTwoInIECUnits(t *testing.T) {
	for _, span := range [][2]float64{{1000, 1 << 20}, {1, 1 << 40}, {64 << 20, 64 << 20}} {
		ticks := byteTicks{}.Ticks(span[0], span[1])
		labels := 0
		for _, tick := range ticks {
			exp := math.Log2(tick.Value)
			assert.Equal(t, math.Round(exp), exp, "tick %v is a power of two", tick.Value)
			if tick.Label != "" {
				labels++
				assert.Equal(t, formatBytes(int64(tick.Value)), tick.Label)
			}
		}
		assert.Positive(t, labels, "span %v", span)
		assert.LessOrEqual(t, labels, maxByteLabels, "span %v", span)
	}
	assert.Empty(t, byteTicks{}.Ticks(0, 10))
	assert.Empty(t, byteTicks{}.Ticks(10, math.Inf(1)))
}
