package main

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleReport has every suite, several parameter shapes, a ratio on each
// side of its limit, an informational one and notes.
func sampleReport() *Report {
	lp := map[string]string{"LP_NUM_THREADS": "0"}
	return &Report{
		Device:  DeviceDesc{Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Type: "cpu", Driver: "Mesa 22.3.6", API: "1.3.230", MemoryBytes: 24 << 30},
		Started: time.Date(2026, 11, 30, 3, 24, 5, 0, time.UTC),
		Figures: []Figure{
			{Suite: "dispatch", Name: "replay", Params: map[string]int64{"k": 1000}, Value: 1843.5, Unit: "ns/launch", Samples: 5, Runs: []float64{1850, 1843.5, 1790, 1843.5, 1900}, Env: lp},
			{Suite: "dispatch", Name: "eager", Params: map[string]int64{"k": 1000}, Value: 45653, Unit: "ns/launch", Samples: 5, Env: lp},
			{Suite: "dispatch", Name: "floor-replay", Params: map[string]int64{"k": 1000}, Value: 1781, Unit: "ns/launch", Samples: 5, Env: lp},
			{Suite: "dispatch", Name: "replay", Params: map[string]int64{"k": 10}, Value: 2950.25, Unit: "ns/launch", Samples: 5, Env: lp},
			{Suite: "transfer", Name: "upload", Params: map[string]int64{"bytes": 1 << 20}, Value: 12.5, Unit: "GB/s", Samples: 8},
			{Suite: "transfer", Name: "upload", Params: map[string]int64{"bytes": 64 << 20}, Value: 17.25, Unit: "GB/s", Samples: 8},
			{Suite: "transfer", Name: "floor-memcpy", Params: map[string]int64{"bytes": 64 << 20}, Value: 19.13, Unit: "GB/s", Samples: 8},
			{Suite: "matmul", Name: "matmul-tiled", Params: map[string]int64{"m": 512, "n": 512, "k": 512}, Value: 0.44, Unit: "GFLOP/s", Samples: 5},
			{Suite: "alloc", Name: "claim-free", Value: 2.5e7, Unit: "ops/s", Samples: 3, Runs: []float64{2.5e7, 2.4e7, 2.75e7}},
			{Suite: "startup", Name: "warm", Params: map[string]int64{"m": 256, "n": 256, "k": 256}, Value: 199.6, Unit: "ms", Samples: 3, Runs: []float64{199.6, 190, 210}},
			{Suite: "kernels", Name: "compile-cold", Value: 1.05, Unit: "ms", Samples: 3, Runs: []float64{1.05, 0.98, 1.2}},
			{Suite: "decode", Name: "replay", Params: map[string]int64{"d": 256, "layers": 4}, Value: 7336, Unit: "us/step", Samples: 5},
		},
		Ratios: []Ratio{
			NewRatio("dispatch", "replay/floor-replay", map[string]int64{"k": 1000}, 1843.5, 1781, 1.15),
			NewRatio("dispatch", "eager/floor-eager", map[string]int64{"k": 1000}, 45653, 20000, 1.5),
			NewInfoRatio("dispatch", "replay/c-replay-bound", map[string]int64{"k": 1000}, 1843.5, 1700),
		},
		Notes: []string{"bandwidth runs with lavapipe's default threads"},
	}
}

func TestWriteTableShowsEveryFigureGroupedBySuite(t *testing.T) {
	r := sampleReport()
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	out := buf.String()

	lines := strings.Split(out, "\n")
	for _, f := range r.Figures {
		want := []string{f.Name, formatParams(f.Params), formatValue(f.Value), f.Unit}
		found := false
		for _, line := range lines {
			if containsAll(line, want) {
				found = true
				break
			}
		}
		assert.Truef(t, found, "no line holds %q in\n%s", want, out)
	}
	// Suites appear once each, the headline suite first.
	prev := -1
	for _, suite := range suiteOrder {
		header := "== " + suite + " =="
		require.Equal(t, 1, strings.Count(out, header), header)
		idx := strings.Index(out, header)
		assert.Greater(t, idx, prev, "suite %s out of order", suite)
		prev = idx
	}
	assert.Contains(t, out, r.Device.Name)
	assert.Contains(t, out, r.Notes[0])
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestWriteTableMarksRatiosAgainstTheirLimits(t *testing.T) {
	r := sampleReport()
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	_, ratios, found := strings.Cut(buf.String(), "== ratios ==")
	require.True(t, found)
	info := 0
	for _, ratio := range r.Ratios {
		line := lineContaining(ratios, ratio.Name)
		require.NotEmpty(t, line, ratio.Name)
		assert.Contains(t, line, strconv.FormatFloat(ratio.Value, 'f', 3, 64))
		if ratio.Info {
			info++
			assert.Regexp(t, `\s-\s+INFO\s*$`, line, "no limit, no verdict")
			assert.NotContains(t, line, "PASS")
			assert.NotContains(t, line, "OVER LIMIT")
			continue
		}
		verdict := "PASS"
		if !ratio.OK {
			verdict = "OVER LIMIT"
		}
		assert.Contains(t, line, verdict)
		assert.Contains(t, line, strconv.FormatFloat(ratio.Limit, 'f', 3, 64))
	}
	assert.Positive(t, info, "the sample has an informational ratio")
}

func lineContaining(text, part string) string {
	for line := range strings.Lines(text) {
		if strings.Contains(line, part) {
			return line
		}
	}
	return ""
}

func TestNewRatioDecidesOKFromTheLimit(t *testing.T) {
	under := NewRatio("dispatch", "a/b", nil, 110, 100, 1.15)
	assert.InDelta(t, 1.1, under.Value, 1e-12)
	assert.True(t, under.OK)

	over := NewRatio("dispatch", "a/b", nil, 120, 100, 1.15)
	assert.False(t, over.OK)

	assert.False(t, NewRatio("dispatch", "a/b", nil, 120, -100, 1.15).OK, "a negative ratio measures nothing")
	assert.False(t, NewRatio("dispatch", "a/b", nil, 0, 100, 1.15).OK, "nor does a zero one")

	byZero := NewRatio("dispatch", "a/b", nil, 120, 0, 1.15)
	assert.False(t, byZero.OK)
	assert.ErrorIs(t, (&Report{Ratios: []Ratio{byZero}}).Validate(), ErrInvalidReport, "an infinite ratio cannot be written")

	info := NewInfoRatio("dispatch", "a/b", nil, 250, 100)
	assert.InDelta(t, 2.5, info.Value, 1e-12)
	assert.True(t, info.Info)
	assert.True(t, info.OK, "no limit to miss")
	assert.Zero(t, info.Limit)
	assert.ErrorIs(t, (&Report{Ratios: []Ratio{NewInfoRatio("dispatch", "a/b", nil, 1, 0)}}).Validate(), ErrInvalidReport)
}

func TestFormatParamsIsHumanReadable(t *testing.T) {
	assert.Equal(t, "1 MiB", formatParams(map[string]int64{"bytes": 1 << 20}))
	assert.Equal(t, "1.5 KiB", formatParams(map[string]int64{"bytes": 1536}))
	assert.Equal(t, "100 B", formatParams(map[string]int64{"bytes": 100}))
	assert.Equal(t, "K=1000", formatParams(map[string]int64{"k": 1000}))
	assert.Equal(t, "M=512 N=256 K=128", formatParams(map[string]int64{"k": 128, "n": 256, "m": 512}))
	assert.Equal(t, "K=10 streams=4", formatParams(map[string]int64{"streams": 4, "k": 10}))
	assert.Equal(t, "-", formatParams(nil))
}

func TestWriteJSONRoundTripsThroughTheDocumentedFields(t *testing.T) {
	r := sampleReport()
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, r))

	var back Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, *r, back)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	assert.ElementsMatch(t, []string{"device", "started", "figures", "ratios", "notes"}, keys(doc))
	assert.ElementsMatch(t, []string{"name", "type", "driver", "api", "memory_bytes"}, keys(doc["device"].(map[string]any)))
	figure := doc["figures"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"suite", "name", "params", "value", "unit", "samples", "runs", "env"}, keys(figure))
	floor := doc["figures"].([]any)[2].(map[string]any)
	assert.Equal(t, "floor-replay", floor["name"])
	assert.NotContains(t, floor, "runs", "left out where only the median is known")
	ratio := doc["ratios"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"suite", "name", "params", "value", "limit", "ok"}, keys(ratio), "info is left out when false")
	for _, rr := range doc["ratios"].([]any) {
		if rr := rr.(map[string]any); rr["name"] == "replay/c-replay-bound" {
			assert.Equal(t, true, rr["info"])
			assert.Equal(t, true, rr["ok"])
			assert.InDelta(t, 0.0, rr["limit"], 0)
		}
	}
	assert.Equal(t, r.Started.Format(time.RFC3339), doc["started"])
}

func TestWriteJSONWritesEmptyListsNotNull(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, &Report{}))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	for _, key := range []string{"figures", "ratios", "notes"} {
		assert.Equal(t, []any{}, doc[key], key)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

var benchLine = regexp.MustCompile(`^Benchmark[^\s]+\s+\d+(\s+[0-9.e+-]+\s+\S+)+$`)

func TestWriteBenchFollowsTheGoBenchmarkGrammar(t *testing.T) {
	r := sampleReport()
	// A name with a space must still give one field.
	r.Figures = append(r.Figures, Figure{Suite: "alloc", Name: "claim free", Value: 1e-9, Unit: "ops/s", Samples: 1})
	var buf bytes.Buffer
	require.NoError(t, WriteBench(&buf, r))

	var results []string
	config := map[string]string{}
	for line := range strings.Lines(buf.String()) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "Benchmark") {
			assert.Regexp(t, benchLine, line)
			results = append(results, line)
			continue
		}
		key, value, ok := strings.Cut(line, ": ")
		require.Truef(t, ok, "line is neither a result nor configuration: %q", line)
		config[key] = value
	}
	assert.Equal(t, benchPackage, config["pkg"])
	for _, key := range []string{"goos", "goarch", "cpu"} {
		assert.NotEmpty(t, config[key], key)
	}
	// One line per timed run, so that benchstat sees every sample; a
	// figure with its median alone (the floor's) is one line.
	var want []float64
	var of []Figure
	for _, f := range r.Figures {
		runs := f.Runs
		if len(runs) == 0 {
			runs = []float64{f.Value}
		}
		for _, v := range runs {
			want, of = append(want, v), append(of, f)
		}
	}
	assert.Greater(t, len(want), len(r.Figures), "the sample report has figures with runs")
	require.Len(t, results, len(want))
	for i, f := range of {
		fields := strings.Fields(results[i])
		require.Len(t, fields, 4)
		assert.True(t, strings.HasPrefix(fields[0], "Benchmark"+strings.ToUpper(f.Suite[:1])+f.Suite[1:]+"/"), fields[0])
		for k, v := range f.Params {
			assert.Contains(t, fields[0], "/"+k+"="+strconv.FormatInt(v, 10))
		}
		assert.Equal(t, "1", fields[1], "a line is one run")
		value, err := strconv.ParseFloat(fields[2], 64)
		require.NoError(t, err)
		assert.Equal(t, want[i], value)
		assert.Equal(t, f.Unit, fields[3])
	}
}

func TestWritersRefuseAnInvalidReportAndWriteNothing(t *testing.T) {
	good := sampleReport().Figures[0]
	cases := map[string]func(f *Figure){
		"no suite":         func(f *Figure) { f.Suite = " " },
		"no name":          func(f *Figure) { f.Name = "" },
		"unit with spaces": func(f *Figure) { f.Unit = "ns per launch" },
		"no unit":          func(f *Figure) { f.Unit = "" },
		"NaN":              func(f *Figure) { f.Value = math.NaN() },
		"infinity":         func(f *Figure) { f.Value = math.Inf(1) },
		"no samples":       func(f *Figure) { f.Samples = 0 },
		"runs not samples": func(f *Figure) { f.Runs = f.Runs[1:] },
		"infinite run":     func(f *Figure) { f.Runs = slices.Clone(f.Runs); f.Runs[0] = math.Inf(1) },
	}
	writers := map[string]func(*bytes.Buffer, *Report) error{
		"table": func(b *bytes.Buffer, r *Report) error { return WriteTable(b, r) },
		"json":  func(b *bytes.Buffer, r *Report) error { return WriteJSON(b, r) },
		"bench": func(b *bytes.Buffer, r *Report) error { return WriteBench(b, r) },
	}
	for name, spoil := range cases {
		bad := good
		spoil(&bad)
		r := &Report{Figures: []Figure{good, bad}}
		for writer, write := range writers {
			var buf bytes.Buffer
			err := write(&buf, r)
			assert.ErrorIsf(t, err, ErrInvalidReport, "%s via %s", name, writer)
			assert.Zerof(t, buf.Len(), "%s via %s wrote %q", name, writer, buf.String())
		}
	}
	for writer, write := range writers {
		assert.ErrorIs(t, write(&bytes.Buffer{}, nil), ErrInvalidReport, writer)
	}
}
