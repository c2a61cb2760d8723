package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// placeSuite is the suite a ratio of suite reads a figure placed at p in.
func placeSuite(p figurePlace, suite string) string {
	if p.Suite != "" {
		return p.Suite
	}
	return suite
}

// ratioOutputs writes a report of figs with the given ratios and notes in
// every format vkbench prints, so that two computations can be compared by
// what a user would see.
func ratioOutputs(t *testing.T, figs []Figure, ratios []Ratio, notes []string) map[string]string {
	t.Helper()
	rep := &Report{
		Device:  DeviceDesc{Name: "recorded", Type: "cpu"},
		Started: time.Date(2026, 12, 1, 7, 33, 23, 0, time.UTC),
		Figures: figs,
		Ratios:  ratios,
		Notes:   notes,
	}
	out := map[string]string{}
	for _, format := range []string{"table", "json", "bench"} {
		var b bytes.Buffer
		require.NoError(t, writeReport(&b, format, rep), format)
		out[format] = b.String()
	}
	return out
}

// assertSameAsBefore feeds figs through the ratio table and through the
// computation it replaced, and insists on the same ratios, notes and
// printed report, byte for byte.
func assertSameAsBefore(t *testing.T, what string, figs []Figure) {
	t.Helper()
	wantRatios, wantNotes := computeRatiosBefore(figs)
	gotRatios, gotNotes := computeRatios(figs)
	require.Equal(t, wantNotes, gotNotes, "%s: notes", what)
	require.Equal(t, len(wantRatios), len(gotRatios), "%s: number of ratios", what)
	for i := range wantRatios {
		want, got := wantRatios[i], gotRatios[i]
		require.Equal(t, want.Suite+" "+want.Name+" "+formatParams(want.Params), got.Suite+" "+got.Name+" "+formatParams(got.Params), "%s: ratio %d", what, i)
		require.Equal(t, want.Limit, got.Limit, "%s: %s limit", what, want.Name)
		require.Equal(t, want.Info, got.Info, "%s: %s info", what, want.Name)
		require.Equal(t, want.OK, got.OK, "%s: %s verdict", what, want.Name)
		require.Equal(t, want.Value, got.Value, "%s: %s value", what, want.Name)
	}
	if slices.ContainsFunc(figs, func(f Figure) bool { return f.Unit == "" }) {
		return // not a printable report; the ratios above are the comparison
	}
	want := ratioOutputs(t, figs, wantRatios, wantNotes)
	got := ratioOutputs(t, figs, gotRatios, gotNotes)
	for format := range want {
		require.Equal(t, want[format], got[format], "%s: -format %s", what, format)
	}
}

// The recorded runs in testdata give the same report through the ratio
// table as through the computation it replaced.
func TestRatioTableMatchesTheOldComputationOnRecordedRuns(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "report-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var rep Report
		require.NoError(t, json.Unmarshal(data, &rep), path)
		require.NotEmpty(t, rep.Figures, path)
		ratios, _ := computeRatios(rep.Figures)
		require.NotEmpty(t, ratios, "%s: a recorded run gives ratios", path)
		assertSameAsBefore(t, path, rep.Figures)
	}
}

// ratioFigureGrid is every figure a ratio reads, at the parameters the
// suites measure and at the edges of each parameter rule (K=99/100 for
// record, K=999/1000 for the long-chain limits, 64 MiB and just below for
// memcpy, the targets' shapes and shapes beside them), plus figures no
// ratio reads.
func ratioFigureGrid(rng *rand.Rand) []Figure {
	names := map[string][]string{}
	add := func(suite, name string) {
		if !slices.Contains(names[suite], name) {
			names[suite] = append(names[suite], name)
		}
	}
	params := map[string][]map[string]int64{
		"dispatch": {{"k": 1}, {"k": 10}, {"k": 99}, {"k": 100}, {"k": 999}, {"k": 1000}, {"k": 4000}, {}},
		"transfer": {{"bytes": 1 << 20}, {"bytes": 64<<20 - 1}, {"bytes": 64 << 20}, {"bytes": 256 << 20}},
		"matmul": {{"m": 64, "n": 64, "k": 64}, {"m": 512, "n": 512, "k": 512}, {"m": 2048, "n": 2048, "k": 2048},
			{"m": 1000, "n": 3001, "k": 500}, {"b": 16, "m": 128, "n": 128, "k": 64}}, // near the targets' shapes, not at them
		"alloc": {{"bytes": 4096}},
	}
	addParams := func(suite string, p map[string]int64) {
		if p != nil && !slices.ContainsFunc(params[suite], func(q map[string]int64) bool { return maps.Equal(p, q) }) {
			params[suite] = append(params[suite], p)
		}
	}
	for _, def := range ratioDefs {
		add(def.Suite, def.Trigger)
		add(placeSuite(def.NumeratorAt, def.Suite), def.Numerator)
		add(placeSuite(def.DenominatorAt, def.Suite), def.Denominator)
		addParams(def.Suite, def.At)
		addParams(placeSuite(def.NumeratorAt, def.Suite), def.NumeratorAt.Params)
		addParams(placeSuite(def.DenominatorAt, def.Suite), def.DenominatorAt.Params)
	}
	for _, ft := range figureTopics {
		add(ft.Suite, ft.Name)
	}
	add("dispatch", "recapture")
	add("transfer", "memcpy")
	add("alloc", "suballoc")
	units := map[string]string{"dispatch": "ns/launch", "transfer": "GB/s", "matmul": "GFLOP/s", "alloc": "ops/s"}
	var figs []Figure
	for _, suite := range []string{"dispatch", "transfer", "matmul", "alloc"} {
		for _, p := range params[suite] {
			for _, name := range names[suite] {
				figs = append(figs, Figure{Suite: suite, Name: name, Params: p, Unit: units[suite], Samples: 1,
					Value: 0.1 + rng.Float64()*2000})
			}
		}
	}
	return figs
}

// Every subset of the figures, in any order, with duplicates and with a
// figure of value zero (an infinite ratio, which only the comparison of
// ratios can carry) gives what the old computation gave.
func TestRatioTableMatchesTheOldComputation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	grid := ratioFigureGrid(rng)
	assertSameAsBefore(t, "every figure", grid)
	assertSameAsBefore(t, "no figure", nil)
	for trial := range 400 {
		figs := slices.Clone(grid)
		rng.Shuffle(len(figs), func(i, j int) { figs[i], figs[j] = figs[j], figs[i] })
		figs = figs[:rng.IntN(len(figs)+1)]
		if trial%5 == 0 && len(figs) > 0 {
			figs = append(figs, figs[rng.IntN(len(figs))]) // measured twice
		}
		if trial%7 == 0 && len(figs) > 0 {
			zero := rng.IntN(len(figs))
			figs[zero].Value = 0
			figs[zero].Unit = "" // not printable: an infinite ratio
		}
		assertSameAsBefore(t, "a random subset", figs)
	}
}

// Each ratio's name is its two figures, each trigger names one suite's
// figure, and every topic a ratio calls for has a note to print.
func TestRatioTableIsConsistent(t *testing.T) {
	topics := map[ratioTopic]bool{}
	for _, n := range ratioNotes {
		assert.False(t, topics[n.Topic], "topic %d has one note entry", n.Topic)
		topics[n.Topic] = true
		assert.NotEmpty(t, n.Lines)
	}
	seen := map[string]bool{}
	for _, def := range ratioDefs {
		assert.Contains(t, suiteOrder, def.Suite, def.Name())
		assert.True(t, topics[def.Topic], "%s: its topic has a note", def.Name())
		assert.True(t, def.Limit.Long >= 0 && def.Limit.Short >= 0, def.Name())
		key := def.Suite + "/" + def.Name() + "/" + formatParams(def.At)
		assert.False(t, seen[key], "%s is defined once", key)
		seen[key] = true
		assert.Equal(t, def.NumeratorAt.label(def.Suite, def.Numerator)+"/"+def.DenominatorAt.label(def.Suite, def.Denominator), def.Name())
		if def.NumeratorAt.Suite == "" && def.NumeratorAt.Params == nil && def.DenominatorAt.Suite == "" && def.DenominatorAt.Params == nil {
			assert.Equal(t, def.Numerator+"/"+def.Denominator, def.Name(), "a ratio of figures beside the trigger")
		}
	}
	for _, ft := range figureTopics {
		assert.True(t, topics[ft.Topic], "%s: its topic has a note", ft.Name)
	}
}

// cmd/vkbench/README.md lists every ratio with its limits as the table
// has them: the block between the markers is generated from ratioDefs
// (go test -run TestReadmeListsTheRatioTable -update-readme rewrites it).
func TestReadmeListsTheRatioTable(t *testing.T) {
	replaceGenerated(t, ratioTableBegin, ratioTableEnd, ratioTableMarkdown(), "TestReadmeListsTheRatioTable")
}

var updateReadme = flag.Bool("update-readme", false, "rewrite the ratio table in README.md from ratioDefs")

// The markers around the generated ratio table in README.md.
const (
	ratioTableBegin = "<!-- ratio table: generated from ratioDefs by TestReadmeListsTheRatioTable -->"
	ratioTableEnd   = "<!-- end of ratio table -->"
)

// ratioTableMarkdown is the reference table of ratioDefs, one row each.
func ratioTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| suite | ratio | computed where the run has | limit |\n|---|---|---|---|\n")
	for _, def := range ratioDefs {
		where := "`" + def.Trigger + "`"
		if def.At != nil {
			where += " at " + formatParams(def.At)
		}
		switch def.Min.Key {
		case "":
		case "bytes":
			where += ", from " + formatBytes(def.Min.Value)
		default:
			where += fmt.Sprintf(", %s ≥ %d", strings.ToUpper(def.Min.Key), def.Min.Value)
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", def.Suite, def.Name(), where, limitMarkdown(def.Limit))
	}
	return b.String()
}

func limitMarkdown(l ratioLimit) string {
	text := func(v float64) string {
		if v == 0 {
			return "none (INFO)"
		}
		return "≤ " + strconv.FormatFloat(v, 'g', 4, 64)
	}
	if l.Long == l.Short {
		return text(l.Long)
	}
	return fmt.Sprintf("%s at K ≥ %d, %s below", text(l.Long), longChainK, text(l.Short))
}

// The markers around the generated flag table in README.md.
const (
	flagTableBegin = "<!-- flag table: generated from newFlagSet by TestReadmeListsEveryFlag -->"
	flagTableEnd   = "<!-- end of flag table -->"
)

// flagTableMarkdown is the reference table of vkbench's flags, as -h
// describes them.
func flagTableMarkdown() string {
	var o options
	var suite, plots string
	fs := newFlagSet(&o, &suite, &plots, io.Discard)
	var b strings.Builder
	b.WriteString("| flag | default | what it does |\n|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		def := "`" + f.DefValue + "`"
		if f.DefValue == "" || f.DefValue == "false" {
			def = "-"
		}
		fmt.Fprintf(&b, "| `-%s%s` | %s | %s |\n", f.Name, name, def, strings.ReplaceAll(usage, "|", "\\|"))
	})
	return b.String()
}

// replaceGenerated checks (or, with -update-readme, rewrites) the block of
// README.md between begin and end against want.
func replaceGenerated(t *testing.T, begin, end, want, test string) {
	t.Helper()
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(data)
	i := strings.Index(readme, begin)
	j := strings.Index(readme, end)
	require.True(t, i >= 0 && j > i, "README.md holds the markers %q and %q", begin, end)
	want = begin + "\n" + want + end
	got := readme[i : j+len(end)]
	if *updateReadme && got != want {
		readme = readme[:i] + want + readme[j+len(end):]
		require.NoError(t, os.WriteFile("README.md", []byte(readme), 0o644))
		return
	}
	assert.Equal(t, want, got, "README.md differs from the code: run go test -run %s -update-readme ./cmd/vkbench/", test)
}

// cmd/vkbench/README.md lists every flag with its default and help text as
// newFlagSet defines them.
func TestReadmeListsEveryFlag(t *testing.T) {
	replaceGenerated(t, flagTableBegin, flagTableEnd, flagTableMarkdown(), "TestReadmeListsEveryFlag")
}

// The matmul targets relate a shape's figure to a reference of another
// shape (the 1024 square) or another suite (the transfer suite's memcpy of
// 64 MiB): each is computed at its own shape only, with the reference's
// value and the target's limit, misses as well as passes are marked, and a
// missing reference, or a trigger at another shape, gives no ratio.
func TestRatiosAcrossShapesAndSuites(t *testing.T) {
	sq := map[string]int64{"m": 1024, "n": 1024, "k": 1024}
	rect := map[string]int64{"m": 1000, "n": 3000, "k": 500}
	batch := map[string]int64{"b": 32, "m": 128, "n": 128, "k": 64}
	gemv := map[string]int64{"m": 1, "n": 4096, "k": 4096}
	gevm := map[string]int64{"m": 4096, "n": 1, "k": 4096}
	longK := map[string]int64{"m": 3, "n": 16, "k": 100000}
	mib64 := map[string]int64{"bytes": 64 << 20}
	figs := []Figure{
		{Suite: "matmul", Name: "matmul", Params: sq, Value: 40},
		{Suite: "matmul", Name: "matmul", Params: rect, Value: 30},  // 40/30 = 1.33: passes 1/0.7
		{Suite: "matmul", Name: "matmul", Params: batch, Value: 10}, // 40/10 = 4: misses 2
		{Suite: "matmul", Name: "matmul", Params: gemv, Value: 3},
		{Suite: "matmul", Name: "matmul-read", Params: gemv, Value: 6},  // 8/6: passes 2
		{Suite: "matmul", Name: "matmul-read", Params: gevm, Value: 3},  // 8/3: misses 2
		{Suite: "matmul", Name: "matmul-read", Params: longK, Value: 3}, // 8/3: passes 3.33
		{Suite: "matmul", Name: "matmul-read", Params: map[string]int64{"m": 2, "n": 4096, "k": 4096}, Value: 1},
		{Suite: "transfer", Name: "c-memcpy", Params: mib64, Value: 8},
		{Suite: "transfer", Name: "c-memcpy", Params: map[string]int64{"bytes": 256 << 20}, Value: 80},
	}
	ratios, notes := computeRatios(figs)
	type want struct {
		name   string
		params map[string]int64
		value  float64
		limit  float64
		ok     bool
	}
	wants := []want{
		{"matmul[M=1024 N=1024 K=1024]/matmul", rect, 40.0 / 30, 1 / 0.7, true},
		{"matmul[M=1024 N=1024 K=1024]/matmul", batch, 4, 2, false},
		{"c-memcpy[transfer 64 MiB]/matmul-read", gemv, 8.0 / 6, 2, true},
		{"c-memcpy[transfer 64 MiB]/matmul-read", gevm, 8.0 / 3, 2, false},
		{"c-memcpy[transfer 64 MiB]/matmul-read", longK, 8.0 / 3, 1 / 0.3, true},
	}
	require.Len(t, ratios, len(wants), "one ratio per target shape, none at M=2 or for the square itself")
	for i, w := range wants {
		r := ratios[i]
		assert.Equal(t, "matmul", r.Suite)
		assert.Equal(t, w.name, r.Name)
		assert.Equal(t, w.params, r.Params, "%s: at the trigger's shape", w.name)
		assert.InDelta(t, w.value, r.Value, 1e-12, "%s %v", w.name, w.params)
		assert.InDelta(t, w.limit, r.Limit, 1e-12, "%s %v", w.name, w.params)
		assert.Equal(t, w.ok, r.OK, "%s %v", w.name, w.params)
		assert.False(t, r.Info, "%s: a target, with a verdict", w.name)
	}
	require.Len(t, notes, 2)
	assert.Contains(t, notes[0], "<= 1.429 at 1000x3000x500")
	assert.Contains(t, notes[1], "<= 3.333 for 3x16x100000")

	// The report shows a miss as OVER LIMIT and a pass as PASS, with the
	// reference in the ratio's name and the shape in its params.
	out := ratioOutputs(t, nil, ratios, notes)["table"]
	assert.Regexp(t, `matmul\s+c-memcpy\[transfer 64 MiB\]/matmul-read\s+M=4096 N=1 K=4096\s+2\.667\s+2\.000\s+OVER LIMIT`, out)
	assert.Regexp(t, `matmul\s+matmul\[M=1024 N=1024 K=1024\]/matmul\s+M=1000 N=3000 K=500\s+1\.333\s+1\.429\s+PASS`, out)

	without := func(suite, name string, params map[string]int64) []Figure {
		return slices.DeleteFunc(slices.Clone(figs), func(f Figure) bool {
			return f.Suite == suite && f.Name == name && maps.Equal(f.Params, params)
		})
	}
	// No 1024 square: no ratio over it, the memcpy ones still there.
	ratios, notes = computeRatios(without("matmul", "matmul", sq))
	require.Len(t, ratios, 3)
	for _, r := range ratios {
		assert.Equal(t, "c-memcpy[transfer 64 MiB]/matmul-read", r.Name)
	}
	assert.Len(t, notes, 1)
	// No memcpy at 64 MiB (a run without the transfer suite, or one that
	// stopped below 64 MiB): 256 MiB's does not stand in for it.
	ratios, _ = computeRatios(without("transfer", "c-memcpy", mib64))
	require.Len(t, ratios, 2)
	for _, r := range ratios {
		assert.Equal(t, "matmul[M=1024 N=1024 K=1024]/matmul", r.Name)
	}
	// No trigger: the reference alone asks for nothing.
	ratios, notes = computeRatios(without("matmul", "matmul", rect))
	assert.Len(t, ratios, 4)
	assert.Len(t, notes, 2)
	none, notes := computeRatios([]Figure{figs[0], figs[8]})
	assert.Empty(t, none, "references alone")
	assert.Empty(t, notes)
}

// Each target's figures are ones the suites measure by default (without
// -quick): its trigger's shape, a bandwidth-bound one where it reads
// matmul-read, and its reference's shape or size.
func TestRatioTargetsAreMeasuredByDefault(t *testing.T) {
	measured := func(suite, name string, params map[string]int64) bool {
		switch suite {
		case "matmul":
			for _, sh := range matmulShapes(false) {
				if maps.Equal(sh.params(), params) {
					return name != "matmul-read" || sh.bandwidthBound()
				}
			}
		case "transfer":
			sizes, _ := transferSizes(false, 1<<32)
			return slices.Contains(sizes, params["bytes"])
		}
		return false
	}
	n := 0
	for _, def := range ratioDefs {
		if def.At == nil && def.NumeratorAt.Params == nil && def.DenominatorAt.Params == nil {
			continue
		}
		n++
		assert.True(t, measured(def.Suite, def.Trigger, def.At), "%s at %v", def.Name(), def.At)
		for _, side := range []struct {
			at   figurePlace
			name string
		}{{def.NumeratorAt, def.Numerator}, {def.DenominatorAt, def.Denominator}} {
			params := side.at.Params
			if params == nil {
				params = def.At
			}
			assert.True(t, measured(placeSuite(side.at, def.Suite), side.name, params), "%s: %s", def.Name(), side.name)
		}
	}
	assert.Equal(t, 5, n, "the five matmul targets")
}
