package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// quickSettings are the smallest settings that still run every code path.
func quickSettings() settings {
	return settings{count: 1, minTime: 0, quick: true, validate: os.Getenv("VKC_VALIDATION") == "1"}
}

// requireFigures checks that res holds exactly the named figures of suite,
// each positive and in unit.
func requireFigures(t *testing.T, res *suiteResult, suite, unit string, names ...string) {
	t.Helper()
	require.Empty(t, res.Failures)
	seen := map[string]bool{}
	for _, f := range res.Figures {
		assert.Equal(t, suite, f.Suite)
		assert.Equal(t, unit, f.Unit, f.Name)
		assert.Positive(t, f.Value, f.Name)
		assert.Equal(t, 1, f.Samples)
		assert.Equal(t, []float64{f.Value}, f.Runs, f.Name)
		seen[f.Name] = true
	}
	for _, n := range names {
		assert.True(t, seen[n], "figure %s missing", n)
	}
	assert.Len(t, seen, len(names))
	assert.NotEmpty(t, res.Device.Name)
}

func TestSuitesInProcess(t *testing.T) {
	cfg := quickSettings()
	t.Run("dispatch", func(t *testing.T) {
		res, err := runDispatch(cfg)
		require.NoError(t, err)
		names := []string{"eager", "eager-batched", "replay", "raw", "raw-batched",
			"c-eager", "c-batched", "c-record", "c-replay", "c-batched-bound", "c-record-bound", "c-replay-bound",
			"c-replay-empty", "c-replay-bound-vec4", "record", "replay-dynamic", "recapture",
			"ops-replay", "ops-replay-dynamic"}
		dev, err := vkc.Open()
		require.NoError(t, err)
		info := dev.Info()
		require.NoError(t, dev.Close())
		if info.Type == vkc.TypeCPU && info.Features.Has(vkc.FeatureInt64) {
			names = append(names, "c-replay-bound-wide") // the kernel vkc runs there, in plain C
		}
		requireFigures(t, res, "dispatch", "ns/launch", names...)
		assert.Len(t, res.Figures, len(names)*len(dispatchKs(true)))
		for _, f := range res.Figures {
			if _, timed := deviceTimed[f.Name]; timed {
				assert.Positive(t, f.Device, "%s K=%d carries the device's time per launch", f.Name, f.Params["k"])
			} else {
				assert.Zero(t, f.Device, "%s is not timed on the device", f.Name)
			}
		}
	})
	t.Run("transfer", func(t *testing.T) {
		res, err := runTransfer(cfg)
		require.NoError(t, err)
		requireFigures(t, res, "transfer", "GB/s", "upload", "download", "copy", "memcpy", "c-copy-buffer", "c-memcpy", "sum", "upload-f16")
	})
	t.Run("matmul", func(t *testing.T) {
		res, err := runMatmul(cfg)
		require.NoError(t, err)
		names := []string{"matmul", "c-naive", "c-blocked", "matmul-f16"}
		if res.Device.Type == vkc.TypeCPU.String() {
			names = append(names, "c-texel") // the kernel vkc runs there, in plain C
		}
		// The bandwidth-bound shapes (m=1 among the quick ones) also give
		// ops.Matmul's bytes read per second.
		read := *res
		read.Figures = nil
		flops := *res
		flops.Figures = nil
		for _, f := range res.Figures {
			if f.Name == "matmul-read" {
				read.Figures = append(read.Figures, f)
			} else {
				flops.Figures = append(flops.Figures, f)
			}
		}
		requireFigures(t, &flops, "matmul", "GFLOP/s", names...)
		requireFigures(t, &read, "matmul", "GB/s", "matmul-read")
		batched := false
		for _, f := range res.Figures {
			batched = batched || f.Params["b"] > 0
		}
		assert.True(t, batched, "a batched shape is measured")
	})
	t.Run("alloc", func(t *testing.T) {
		res, err := runAlloc(cfg)
		require.NoError(t, err)
		requireFigures(t, res, "alloc", "ops/s", "suballoc", "vkallocate", "reclaim")
	})
}

func TestTimedFigureKeepsEveryRun(t *testing.T) {
	f := timedFigure(Figure{Suite: "transfer", Name: "copy", Unit: "GB/s"}, []float64{1e-9, 0.5e-9, 0.25e-9, 2e-9},
		func(s float64) float64 { return 1 / s / 1e9 })
	assert.InDeltaSlice(t, []float64{1, 2, 4, 0.5}, f.Runs, 1e-12, "converted, in the order they ran")
	assert.InDelta(t, 1.5, f.Value, 1e-12, "the median of the converted runs")
	assert.Equal(t, 4, f.Samples)
	require.NoError(t, (&Report{Figures: []Figure{f}}).Validate())
}

func TestChecksCatchWrongResults(t *testing.T) {
	xs := dispatchX()
	ys := make([]float32, len(xs))
	for i, x := range xs {
		ys[i] = 3 * x
	}
	require.NoError(t, checkChain("eager", 3, xs, ys, 3))
	ys[1]++
	err := checkChain("eager", 3, xs, ys, 3)
	require.ErrorIs(t, err, ErrMismatch)
	assert.Contains(t, err.Error(), "y[1]")

	sh := matmulShape{m: 3, n: 2, k: 4}
	a, b := make([]float32, sh.m*sh.k), make([]float32, sh.k*sh.n)
	matmulInputs(a, b)
	c := make([]float32, sh.m*sh.n)
	for r := range sh.m {
		for col := range sh.n {
			for q := range sh.k {
				c[r*sh.n+col] += a[r*sh.k+q] * b[q*sh.n+col]
			}
		}
	}
	require.NoError(t, checkMatmul(sh, a, b, c))
	c[0] += 1
	require.ErrorIs(t, checkMatmul(sh, a, b, c), ErrMismatch)

	want := make([]uint32, 1000)
	transferPattern(want, 1)
	got := append([]uint32(nil), want...)
	require.NoError(t, sampleDiff("copy", want, got))
	got[len(got)-1]++
	require.ErrorIs(t, sampleDiff("copy", want, got), ErrMismatch)
}

func TestComputeRatios(t *testing.T) {
	k1 := map[string]int64{"k": 1}
	k := map[string]int64{"k": 1000}
	big := map[string]int64{"bytes": 64 << 20}
	small := map[string]int64{"bytes": 1 << 20}
	sq := map[string]int64{"m": 512, "n": 512, "k": 512}
	small3 := map[string]int64{"m": 64, "n": 64, "k": 64}
	figs := []Figure{
		{Suite: "dispatch", Name: "eager", Params: k, Value: 9000},
		{Suite: "dispatch", Name: "eager-batched", Params: k, Value: 1200},
		{Suite: "dispatch", Name: "replay", Params: k, Value: 1000},
		{Suite: "dispatch", Name: "raw", Params: k, Value: 950},
		{Suite: "dispatch", Name: "c-eager", Params: k, Value: 8000},
		{Suite: "dispatch", Name: "c-batched", Params: k, Value: 1000},
		{Suite: "dispatch", Name: "c-record", Params: k, Value: 300},
		{Suite: "dispatch", Name: "c-replay", Params: k, Value: 900},
		{Suite: "dispatch", Name: "c-batched-bound", Params: k, Value: 800},
		{Suite: "dispatch", Name: "c-record-bound", Params: k, Value: 100},
		{Suite: "dispatch", Name: "c-replay-bound", Params: k, Value: 850},
		{Suite: "dispatch", Name: "c-replay-empty", Params: k, Value: 300}, // a note, no ratio
		{Suite: "dispatch", Name: "c-replay-bound-vec4", Params: k, Value: 600},
		{Suite: "dispatch", Name: "c-replay-bound-wide", Params: k, Value: 500},
		{Suite: "dispatch", Name: "record", Params: k, Value: 250},
		{Suite: "dispatch", Name: "replay-dynamic", Params: k, Value: 1100},
		{Suite: "dispatch", Name: "ops-replay", Params: k, Value: 1500},
		{Suite: "dispatch", Name: "ops-replay-dynamic", Params: k, Value: 1700},
		{Suite: "dispatch", Name: "recapture", Params: k, Value: 5000},
		{Suite: "dispatch", Name: "replay", Params: k1, Value: 30000},
		{Suite: "dispatch", Name: "c-replay", Params: k1, Value: 20000},
		{Suite: "dispatch", Name: "record", Params: k1, Value: 3000}, // no ratio: the window's fixed cost at K=1
		{Suite: "dispatch", Name: "c-record", Params: k1, Value: 300},
		{Suite: "dispatch", Name: "c-replay-bound", Params: k1, Value: 19000},
		{Suite: "dispatch", Name: "c-record-bound", Params: k1, Value: 200}, // no ratio at K=1, as for c-record
		{Suite: "dispatch", Name: "floor-replay", Params: k, Value: 800},
		{Suite: "transfer", Name: "upload", Params: big, Value: 8},
		{Suite: "transfer", Name: "download", Params: big, Value: 9},
		{Suite: "transfer", Name: "copy", Params: big, Value: 6},
		{Suite: "transfer", Name: "memcpy", Params: big, Value: 10},
		{Suite: "transfer", Name: "c-memcpy", Params: big, Value: 7},
		{Suite: "transfer", Name: "c-copy-buffer", Params: big, Value: 6.5},
		{Suite: "transfer", Name: "sum", Params: big, Value: 4},
		{Suite: "transfer", Name: "upload", Params: small, Value: 1},
		{Suite: "transfer", Name: "copy", Params: small, Value: 5},
		{Suite: "transfer", Name: "c-memcpy", Params: small, Value: 50},
		{Suite: "transfer", Name: "c-copy-buffer", Params: small, Value: 4},
		{Suite: "transfer", Name: "floor-memcpy", Params: big, Value: 7},
		{Suite: "matmul", Name: "matmul", Params: sq, Value: 30},
		{Suite: "matmul", Name: "c-naive", Params: sq, Value: 12},
		{Suite: "matmul", Name: "matmul", Params: small3, Value: 3},
		{Suite: "matmul", Name: "c-naive", Params: small3, Value: 2},
		{Suite: "matmul", Name: "c-blocked", Params: sq, Value: 27},
		{Suite: "matmul", Name: "c-texel", Params: sq, Value: 29},
	}
	value := func(suite, name string, p map[string]int64) float64 {
		for _, f := range figs {
			if f.Suite == suite && f.Name == name && figureKey(suite, name, f.Params) == figureKey(suite, name, p) {
				return f.Value
			}
		}
		t.Fatalf("no figure %s/%s", suite, name)
		return 0
	}
	ratios, notes := computeRatios(figs)
	assert.Len(t, notes, 14, "one note per kind of ratio, three for dispatch, one for the bind-once baseline, one for the empty-kernel figure, one for the wide kernel, one for the external reference")
	assert.Contains(t, strings.Join(notes, "\n"), "c-replay-empty is")
	got := map[string]Ratio{}
	for _, r := range ratios {
		got[figureKey(r.Suite, r.Name, r.Params)] = r
		switch {
		case r.Name == "replay-dynamic/replay": // vkc's dynamic graph against its own static replay
		case strings.HasPrefix(r.Name, "ops-"): // the op library's chains against the kernels'
		case strings.Contains(r.Name, "/floor-"): // the external reference, where its figure is there
			assert.Equal(t, "replay/floor-replay", r.Name, "only the floor figure the run has")
		default:
			assert.Contains(t, r.Name, "c-", "every other ratio uses the C baseline")
		}
	}
	cases := []struct {
		name      string
		suite     string
		params    map[string]int64
		num, den  string
		wantLimit float64 // 0: informational, no limit
	}{
		{"eager/c-eager", "dispatch", k, "eager", "c-eager", 1},
		{"eager-batched/c-batched", "dispatch", k, "eager-batched", "c-batched", 0.8},
		{"replay/c-replay", "dispatch", k, "replay", "c-replay", 0.9},
		{"raw/c-replay", "dispatch", k, "raw", "c-replay", 1.1},
		{"record/c-record", "dispatch", k, "record", "c-record", 1.5},
		{"replay-dynamic/replay", "dispatch", k, "replay-dynamic", "replay", 1.2},
		{"ops-replay/replay", "dispatch", k, "ops-replay", "replay", 0},
		{"ops-replay-dynamic/replay-dynamic", "dispatch", k, "ops-replay-dynamic", "replay-dynamic", 0},
		{"replay/floor-replay", "dispatch", k, "replay", "floor-replay", 0.8},
		{"replay/c-replay", "dispatch", k1, "replay", "c-replay", 1.15},
		{"eager-batched/c-batched-bound", "dispatch", k, "eager-batched", "c-batched-bound", 0},
		{"replay/c-replay-bound", "dispatch", k, "replay", "c-replay-bound", 0.65},
		{"replay/c-replay-bound-vec4", "dispatch", k, "replay", "c-replay-bound-vec4", 1.05},
		{"replay/c-replay-bound-wide", "dispatch", k, "replay", "c-replay-bound-wide", 1.05},
		{"raw/c-replay-bound", "dispatch", k, "raw", "c-replay-bound", 0},
		{"record/c-record-bound", "dispatch", k, "record", "c-record-bound", 0},
		{"replay/c-replay-bound", "dispatch", k1, "replay", "c-replay-bound", 0},
		{"c-memcpy/upload", "transfer", big, "c-memcpy", "upload", 1.25},
		{"c-memcpy/download", "transfer", big, "c-memcpy", "download", 1.25},
		{"c-memcpy/copy", "transfer", big, "c-memcpy", "copy", 1 / 0.85},
		{"c-memcpy/sum", "transfer", big, "c-memcpy", "sum", 1.25},
		{"c-copy-buffer/copy", "transfer", big, "c-copy-buffer", "copy", 1.1},
		{"c-copy-buffer/copy", "transfer", small, "c-copy-buffer", "copy", 1.1},
		{"c-naive/matmul", "matmul", sq, "c-naive", "matmul", 1.0 / 3},
		{"c-naive/matmul", "matmul", small3, "c-naive", "matmul", 1.0 / 3},
		{"c-blocked/matmul", "matmul", sq, "c-blocked", "matmul", 1.1},
		{"c-texel/matmul", "matmul", sq, "c-texel", "matmul", 1.1},
	}
	for _, c := range cases {
		r, ok := got[figureKey(c.suite, c.name, c.params)]
		if !assert.True(t, ok, "ratio %s %v missing", c.name, c.params) {
			continue
		}
		want := value(c.suite, c.num, c.params) / value(c.suite, c.den, c.params)
		assert.InDelta(t, want, r.Value, 1e-12, c.name)
		assert.InDelta(t, c.wantLimit, r.Limit, 1e-12, c.name)
		if c.wantLimit == 0 {
			assert.True(t, r.Info, "%s is informational", c.name)
			assert.True(t, r.OK, "%s has no limit to miss", c.name)
			continue
		}
		assert.False(t, r.Info, c.name)
		assert.Equal(t, want <= c.wantLimit, r.OK, c.name)
	}
	assert.Len(t, ratios, len(cases), "no memcpy ratio at 1 MiB, none where a side is missing")

	none, notes := computeRatios([]Figure{{Suite: "dispatch", Name: "replay", Params: k, Value: 1}})
	assert.Empty(t, none, "no baseline, no ratio")
	assert.Empty(t, notes)
}

// Every flag vkbench defines appears in -h with a help text that says
// something, and -h exits 0.
func TestHelpListsEveryFlag(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &bytes.Buffer{}, &stderr))
	help := stderr.String()
	assert.True(t, strings.HasPrefix(help, "Usage: vkbench"), help)
	var o options
	var suite, plots string
	fs := newFlagSet(&o, &suite, &plots, io.Discard)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		assert.Regexp(t, regexp.MustCompile(`(?m)^  -`+regexp.QuoteMeta(f.Name)+`\b`), help, "-h lists -%s", f.Name)
		assert.GreaterOrEqual(t, len(strings.Fields(f.Usage)), 5, "-%s has a help text that explains it: %q", f.Name, f.Usage)
	})
	assert.GreaterOrEqual(t, n, 11)
	for _, name := range []string{"suite", "format", "plot", "device", "devices", "validate", "count", "time", "quick", "floor"} {
		assert.NotNil(t, fs.Lookup(name), "-%s", name)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, suiteOrder, o.suites)
	assert.Equal(t, "table", o.format)
	assert.Equal(t, 5, o.count)
	assert.Empty(t, o.floorDir, "no external reference unless asked for")

	for _, bad := range [][]string{
		{"-suite", "nope"}, {"-format", "xml"}, {"-count", "0"}, {"-time", "-1s"}, {"stray"}, {"-child", "nope"}, {"-startup-probe", "maybe"},
	} {
		_, err := parseOptions(bad, &bytes.Buffer{})
		assert.ErrorIs(t, err, ErrUsage, "%q", bad)
	}
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-format", "xml"}, &bytes.Buffer{}, &stderr))
	assert.Contains(t, stderr.String(), "xml")
}

// A -plot path in a format vkbench cannot write is a usage error, found
// before anything runs or is written.
func TestParseOptionsRefusesAPlotFormatBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.svg"), filepath.Join(dir, "bad.txt")
	for _, plot := range []string{bad, good + "," + bad, filepath.Join(dir, "noext"), good + ",x.svg.gz"} {
		_, err := parseOptions([]string{"-plot", plot}, &bytes.Buffer{})
		assert.ErrorIs(t, err, ErrUsage, plot)
		assert.ErrorIs(t, err, ErrPlotFormat, plot)

		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), []string{"-suite", "alloc", "-quick", "-plot", plot}, &stdout, &stderr), plot)
		assert.Empty(t, stdout.String(), "nothing ran")
		assert.Contains(t, stderr.String(), "plot format")
		assert.NoFileExists(t, good, "no plot is written")
	}
	_, err := parseOptions([]string{"-plot", good + ",b.PNG,"}, &bytes.Buffer{})
	assert.NoError(t, err, "either format, any case; an empty entry is skipped")
}

// Each suite runs once however often -suite names it, "all" may stand
// beside the names, and the suites run in the order the report prints them.
func TestParseOptionsSuiteList(t *testing.T) {
	for list, want := range map[string][]string{
		"alloc,alloc":             {"alloc"},
		"all,alloc":               suiteOrder,
		"alloc,all":               suiteOrder,
		"alloc,dispatch,alloc":    {"dispatch", "alloc"},
		"matmul,transfer":         {"transfer", "matmul"},
		"dispatch":                {"dispatch"},
		"transfer,matmul,all,all": suiteOrder,
	} {
		o, err := parseOptions([]string{"-suite", list}, &bytes.Buffer{})
		if assert.NoError(t, err, list) {
			assert.Equal(t, want, o.suites, list)
		}
	}
	for _, bad := range []string{"", "alloc,", "alloc,nope", "All"} {
		_, err := parseOptions([]string{"-suite", bad}, &bytes.Buffer{})
		assert.ErrorIs(t, err, ErrUsage, "%q", bad)
	}
}

func TestTransferSizesStopAtTheDeviceLimit(t *testing.T) {
	all, capped := transferSizes(false, 1<<31)
	assert.False(t, capped)
	assert.Equal(t, []int64{1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20}, all)
	cut, capped := transferSizes(false, 128<<20)
	assert.True(t, capped)
	assert.Equal(t, []int64{1 << 20, 4 << 20, 16 << 20, 64 << 20, 128 << 20}, cut)
	for _, size := range cut {
		assert.LessOrEqual(t, size, int64(128<<20))
	}
}

func TestSuiteEnvSetsThreadsForDispatchOnly(t *testing.T) {
	t.Setenv("LP_NUM_THREADS", "")
	require.NoError(t, os.Unsetenv("LP_NUM_THREADS"))
	assert.Contains(t, suiteEnv("dispatch"), "LP_NUM_THREADS=0")
	assert.NotContains(t, suiteEnv("matmul"), "LP_NUM_THREADS=0")
	t.Setenv("LP_NUM_THREADS", "3")
	assert.NotContains(t, suiteEnv("dispatch"), "LP_NUM_THREADS=0", "the user's setting wins")
}

func TestLavapipeThreadsNoteNamesTheSuitesThatRan(t *testing.T) {
	assert.Empty(t, lavapipeThreadsNote([]string{"alloc"}), "no dispatch, nothing to tell apart")
	assert.Equal(t, "lavapipe: dispatch ran with LP_NUM_THREADS=0 (work on the submitting thread) (see ENV)", lavapipeThreadsNote([]string{"dispatch"}))
	assert.Equal(t, "lavapipe: dispatch ran with LP_NUM_THREADS=0 (work on the submitting thread); alloc with the driver's default threads (see ENV)",
		lavapipeThreadsNote([]string{"dispatch", "alloc"}))
	assert.Equal(t, "lavapipe: dispatch ran with LP_NUM_THREADS=0 (work on the submitting thread); transfer, matmul, alloc, startup, kernels and decode with the driver's default threads (see ENV)",
		lavapipeThreadsNote(suiteOrder))
}

// buildVkbench builds the command into a temporary directory, so the
// child-process re-exec runs as it does for a user.
func buildVkbench(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "vkbench")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return exe
}

func runVkbench(t *testing.T, exe string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	require.NoError(t, err, "vkbench %q: %s", args, e.String())
	return o.String(), e.String()
}

func TestBinaryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	exe := buildVkbench(t)
	quick := []string{"-quick", "-count", "1", "-time", "0s"}

	t.Run("json and plot", func(t *testing.T) {
		dir := t.TempDir()
		plotPaths := []string{filepath.Join(dir, "out.svg"), filepath.Join(dir, "out.png")}
		stdout, stderr := runVkbench(t, exe, append(quick, "-format", "json", "-plot", strings.Join(plotPaths, ","))...)
		assert.Empty(t, stderr, "progress only on a terminal")
		var rep Report
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&rep))
		assert.NotEmpty(t, rep.Device.Name)
		assert.False(t, rep.Started.IsZero())
		suites := map[string]int{}
		for _, f := range rep.Figures {
			suites[f.Suite]++
			assert.Positive(t, f.Value)
			assert.Len(t, f.Runs, f.Samples, "%s/%s: every timed run", f.Suite, f.Name)
			assert.Equal(t, median(f.Runs), f.Value, "%s/%s: the figure is its runs' median", f.Suite, f.Name)
			if isLavapipe(rep.Device.Name) {
				want := "default"
				if f.Suite == "dispatch" {
					want = "0"
				}
				if v, set := os.LookupEnv("LP_NUM_THREADS"); set {
					want = v
				}
				assert.Equal(t, want, f.Env["LP_NUM_THREADS"], "%s/%s", f.Suite, f.Name)
			}
		}
		for _, s := range suiteOrder {
			assert.Positive(t, suites[s], "suite %s has no figures", s)
		}
		assert.NotEmpty(t, rep.Ratios)
		ratioSuites := map[string]bool{}
		for _, r := range rep.Ratios {
			// vkc's dynamic graph against its own static replay, the op
			// library's chains against the kernels', and the
			// kernels suite's targets and WGSL-over-GLSL ratios, and the
			// decode suite's replay over eager, compare vkc with itself or
			// a number, the ops rows with vkc's own kernels, and the matmul
			// targets (full sizes only) a shape with a figure read
			// elsewhere; every other with the C baseline.
			if r.Name != "replay-dynamic/replay" && !strings.HasPrefix(r.Name, "ops-") && r.Suite != "kernels" && r.Suite != "decode" && !strings.Contains(r.Name, "[") {
				assert.Contains(t, r.Name, "c-", "every other ratio compares with the C baseline")
			}
			assert.Positive(t, r.Value, r.Name)
			ratioSuites[r.Suite] = true
		}
		for _, s := range []string{"dispatch", "transfer", "matmul"} {
			assert.True(t, ratioSuites[s], "no %s ratio", s)
		}
		for _, path := range plotPaths {
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Positive(t, info.Size(), path)
		}
	})

	t.Run("bench", func(t *testing.T) {
		stdout, _ := runVkbench(t, exe, append(quick, "-suite", "alloc", "-format", "bench")...)
		line := regexp.MustCompile(`^Benchmark\S+ \d+ \S+ \S+$`)
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				assert.Regexp(t, line, l)
				n++
			}
		}
		assert.Equal(t, 2*len(allocSizes())+1, n, "suballoc and vkallocate per size, and reclaim at the largest")
	})

	t.Run("bench samples for benchstat", func(t *testing.T) {
		const runs = 6 // benchstat's fewest for a confidence interval
		stdout, _ := runVkbench(t, exe, "-quick", "-count", strconv.Itoa(runs), "-time", "0s", "-suite", "alloc", "-format", "bench")
		perName := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if !strings.HasPrefix(l, "Benchmark") {
				continue
			}
			// BenchmarkName  iterations  value unit
			fields := strings.Fields(l)
			require.Len(t, fields, 4, l)
			_, err := strconv.Atoi(fields[1])
			require.NoError(t, err, l)
			v, err := strconv.ParseFloat(fields[2], 64)
			require.NoError(t, err, l)
			assert.Positive(t, v, l)
			assert.Equal(t, "ops/s", fields[3], l)
			perName[fields[0]]++
		}
		assert.Len(t, perName, 2*len(allocSizes())+1, "suballoc and vkallocate per size, and reclaim at the largest")
		for name, n := range perName {
			assert.Equal(t, runs, n, "%s: one line per timed run", name)
		}
		benchstat, err := exec.LookPath("benchstat")
		if err != nil {
			t.Log("benchstat not on PATH: the Go benchmark format was checked by hand only")
			return
		}
		file := filepath.Join(t.TempDir(), "alloc.txt")
		require.NoError(t, os.WriteFile(file, []byte(stdout), 0o644))
		out, err := exec.Command(benchstat, file).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.NotContains(t, string(out), "∞", "benchstat sees %d samples per figure: %s", runs, out)
		assert.Contains(t, string(out), "±", "%s", out)
	})

	t.Run("alloc alone", func(t *testing.T) {
		// Without LP_NUM_THREADS, where vkbench would set it for dispatch.
		t.Setenv("LP_NUM_THREADS", "")
		require.NoError(t, os.Unsetenv("LP_NUM_THREADS"))
		stdout, _ := runVkbench(t, exe, append(quick, "-suite", "alloc", "-format", "json")...)
		var rep Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
		require.NotEmpty(t, rep.Figures)
		for _, n := range rep.Notes {
			assert.NotContains(t, n, "dispatch", "dispatch did not run: %q", n)
		}
	})

	t.Run("nothing to plot", func(t *testing.T) {
		plot := filepath.Join(t.TempDir(), "alloc.svg")
		stdout, stderr := runVkbench(t, exe, append(quick, "-suite", "alloc", "-format", "json", "-plot", plot)...)
		var rep Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stderr)
		assert.Contains(t, strings.Join(rep.Notes, "\n"), "nothing to plot")
		assert.NoFileExists(t, plot)
	})

	t.Run("devices", func(t *testing.T) {
		stdout, _ := runVkbench(t, exe, "-devices")
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		require.GreaterOrEqual(t, len(lines), 2)
		assert.Contains(t, lines[0], "NAME")
	})

	t.Run("unknown device fails", func(t *testing.T) {
		cmd := exec.Command(exe, append(quick, "-suite", "alloc", "-device", "no-such-device")...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "%s", out)
		assert.Equal(t, 1, exit.ExitCode())
		assert.Equal(t, 1, strings.Count(string(out), `no device matches "no-such-device"`), "the child's error is printed once: %s", out)
		assert.Contains(t, string(out), "alloc", "which suite failed is said: %s", out)
	})
}

// floorFigures runs the reference -floor names and keeps its figures only
// when they were measured on the device vkc measured.
func TestFloorFiguresFromADirectory(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed: scripts/setup.sh installs it")
	}
	floor := t.TempDir()
	fr := syntheticFloor()
	fr.VerifyMismatches = 0
	fr.Bandwidth, fr.Sgemm = nil, nil
	var out bytes.Buffer
	printFloor(&out, fr)
	require.NoError(t, os.WriteFile(filepath.Join(floor, "result.txt"), out.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(floor, "build.sh"), []byte("cat result.txt\n"), 0o755))

	o := options{suites: []string{"dispatch"}, count: 1, quick: true, floorDir: floor}
	figs, notes := floorFigures(context.Background(), o, DeviceDesc{Name: "llvmpipe (LLVM 15.0.6, 256 bits)"})
	assert.Empty(t, notes)
	names := map[string]bool{}
	for _, f := range figs {
		assert.Equal(t, "dispatch", f.Suite)
		names[f.Name] = true
	}
	assert.True(t, names["floor-replay"] && names["floor-eager"] && names["floor-batched"], "%v", names)

	figs, notes = floorFigures(context.Background(), o, DeviceDesc{Name: "another GPU"})
	assert.Empty(t, figs, "figures of another device are left out")
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "another GPU")

	o.floorDir = t.TempDir()
	figs, notes = floorFigures(context.Background(), o, DeviceDesc{Name: "llvmpipe (LLVM 15.0.6, 256 bits)"})
	assert.Empty(t, figs)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "build.sh")
}
