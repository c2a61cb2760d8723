package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// printFloor writes fr in rawvk.c's printf formats (the RESULT lines, the
// device line and the verify line), so the parser is checked on any values,
// not only those of one captured run.
func printFloor(w io.Writer, fr *FloorResult) {
	fmt.Fprintf(w, "built /tmp/rawvk-build/rawvk\n")
	fmt.Fprintf(w, "RAWVK device: %s validate=0 K=%d n=256 reps=%d\n", fr.Device, fr.K, fr.Reps)
	fmt.Fprintf(w, "RAWVK rep=0 eager_iter_ms=67.267 batched_iter_ms=2.173 batched_record_ms=0.738 replay_iter_ms=1.727\n")
	fmt.Fprintf(w, "RAWVK RESULT axpy K=%d n=256 (median of %d reps; min in brackets)\n", fr.K, fr.Reps)
	k := float64(fr.K)
	fmt.Fprintf(w, "RAWVK RESULT eager    iter_ms=%8.3f [%8.3f]  per_dispatch_us=%7.3f\n", fr.EagerPerDispatchUs*k/1e3, fr.EagerPerDispatchUs*k/1e3, fr.EagerPerDispatchUs)
	fmt.Fprintf(w, "RAWVK RESULT batched  iter_ms=%8.3f [%8.3f]  per_dispatch_us=%7.3f  record_ms=%.3f (record_per_dispatch_us=%.3f)\n",
		fr.BatchedPerDispatchUs*k/1e3, fr.BatchedPerDispatchUs*k/1e3, fr.BatchedPerDispatchUs, fr.BatchedRecordPerDispatchUs*k/1e3, fr.BatchedRecordPerDispatchUs)
	fmt.Fprintf(w, "RAWVK RESULT replay   iter_ms=%8.3f [%8.3f]  per_dispatch_us=%7.3f\n", fr.ReplayPerDispatchUs*k/1e3, fr.ReplayPerDispatchUs*k/1e3, fr.ReplayPerDispatchUs)
	fmt.Fprintf(w, "RAWVK RESULT ratios eager/replay=%.2f batched/replay=%.2f eager/batched=%.2f\n", 1.0, 1.0, 1.0)
	mismatch := func(r FloorRate) string {
		if r.Mismatch {
			return " MISMATCH"
		}
		return ""
	}
	if bw := fr.Bandwidth; bw != nil {
		mib := bw.Bytes >> 20
		fmt.Fprintf(w, "RAWVK RESULT bw vkCmdCopyBuffer %dMiB: best %.3f ms = %.2f GB/s copied (median %.2f GB/s)%s\n", mib, 1.0, bw.CopyBuffer.Best, bw.CopyBuffer.Median, mismatch(bw.CopyBuffer))
		fmt.Fprintf(w, "RAWVK RESULT bw compute-copy(vec4) %dMiB: best %.3f ms = %.2f GB/s copied (median %.2f GB/s)%s\n", mib, 1.0, bw.ComputeCopy.Best, bw.ComputeCopy.Median, mismatch(bw.ComputeCopy))
		fmt.Fprintf(w, "RAWVK RESULT bw memcpy %dMiB (malloc): best %.3f ms = %.2f GB/s copied (median %.2f GB/s) [chk %d]\n", mib, 1.0, bw.MemcpyHeap.Best, bw.MemcpyHeap.Median, 3)
		fmt.Fprintf(w, "RAWVK RESULT bw memcpy %dMiB (mapped VkDeviceMemory): best %.3f ms = %.2f GB/s copied (median %.2f GB/s)\n", mib, 1.0, bw.MemcpyMap.Best, bw.MemcpyMap.Median)
	}
	if sg := fr.Sgemm; sg != nil {
		fmt.Fprintf(w, "RAWVK RESULT sgemm %-16s %dx%d: best %.2f ms = %.2f GFLOP/s (median %.2f)%s\n", "sgemm_naive.spv", sg.Size, sg.Size, 1.0, sg.Naive.Best, sg.Naive.Median, mismatch(sg.Naive))
		fmt.Fprintf(w, "RAWVK RESULT sgemm %-16s %dx%d: best %.2f ms = %.2f GFLOP/s (median %.2f)%s\n", "sgemm_tiled.spv", sg.Size, sg.Size, 1.0, sg.Tiled.Best, sg.Tiled.Median, mismatch(sg.Tiled))
	}
	fmt.Fprintf(w, "RAWVK verify_mismatches=%d validation_errors=%d validation_warnings=%d\n", fr.VerifyMismatches, fr.ValidationErrors, fr.ValidationWarnings)
}

// syntheticFloor has values exact at the precision rawvk.c prints them.
func syntheticFloor() *FloorResult {
	return &FloorResult{
		Device: "llvmpipe (LLVM 15.0.6, 256 bits) (driver 0.0.1, api 1.3.230)",
		K:      250, Reps: 3,
		EagerPerDispatchUs: 45.653, BatchedPerDispatchUs: 2.469, BatchedRecordPerDispatchUs: 0.647, ReplayPerDispatchUs: 1.781,
		Bandwidth: &FloorBandwidth{
			Bytes:       64 << 20,
			CopyBuffer:  FloorRate{Best: 19.54, Median: 17.51},
			ComputeCopy: FloorRate{Best: 2.14, Median: 2.12, Mismatch: true},
			MemcpyHeap:  FloorRate{Best: 20.81, Median: 19.13},
			MemcpyMap:   FloorRate{Best: 21.4, Median: 19.25},
		},
		Sgemm: &FloorSgemm{
			Size:  512,
			Naive: FloorRate{Best: 0.79, Median: 0.57},
			Tiled: FloorRate{Best: 0.44, Median: 0.43},
		},
		VerifyMismatches: 1, ValidationErrors: 0, ValidationWarnings: 2,
	}
}

func TestParseFloorReadsWhatRawvkPrints(t *testing.T) {
	want := syntheticFloor()
	var text bytes.Buffer
	printFloor(&text, want)
	got, err := ParseFloor(&text)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestParseFloorLeavesSkippedSectionsNil(t *testing.T) {
	want := syntheticFloor()
	want.Bandwidth, want.Sgemm = nil, nil
	var text bytes.Buffer
	printFloor(&text, want)
	got, err := ParseFloor(&text)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Len(t, got.Figures(nil), 4, "only the dispatch figures")
}

// TestParseFloorOnACapturedRun reads real output of
// `RAWVK_REPS=2 LP_NUM_THREADS=0 sh build.sh` and checks each parsed value
// against the line it came from, printed the way rawvk.c prints it.
func TestParseFloorOnACapturedRun(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "floor-lavapipe.txt"))
	require.NoError(t, err)
	fr, err := ParseFloor(bytes.NewReader(raw))
	require.NoError(t, err)
	text := string(raw)

	assert.Contains(t, text, fmt.Sprintf("RAWVK device: %s validate=0 K=%d n=256 reps=%d", fr.Device, fr.K, fr.Reps))
	assert.Contains(t, lineContaining(text, "RESULT eager"), fmt.Sprintf("per_dispatch_us=%7.3f", fr.EagerPerDispatchUs))
	assert.Contains(t, lineContaining(text, "RESULT batched"), fmt.Sprintf("per_dispatch_us=%7.3f", fr.BatchedPerDispatchUs))
	assert.Contains(t, lineContaining(text, "RESULT batched"), fmt.Sprintf("(record_per_dispatch_us=%.3f)", fr.BatchedRecordPerDispatchUs))
	assert.Contains(t, lineContaining(text, "RESULT replay"), fmt.Sprintf("per_dispatch_us=%7.3f", fr.ReplayPerDispatchUs))

	require.NotNil(t, fr.Bandwidth)
	for marker, rate := range map[string]FloorRate{
		"vkCmdCopyBuffer": fr.Bandwidth.CopyBuffer, "compute-copy": fr.Bandwidth.ComputeCopy,
		"(malloc)": fr.Bandwidth.MemcpyHeap, "(mapped": fr.Bandwidth.MemcpyMap,
	} {
		line := lineContaining(text, marker)
		assert.Contains(t, line, fmt.Sprintf("= %.2f GB/s copied (median %.2f GB/s)", rate.Best, rate.Median), marker)
		assert.Equal(t, strings.Contains(line, "MISMATCH"), rate.Mismatch, marker)
	}
	assert.Contains(t, text, fmt.Sprintf(" %dMiB", fr.Bandwidth.Bytes>>20))

	require.NotNil(t, fr.Sgemm)
	for marker, rate := range map[string]FloorRate{"sgemm_naive": fr.Sgemm.Naive, "sgemm_tiled": fr.Sgemm.Tiled} {
		assert.Contains(t, lineContaining(text, marker), fmt.Sprintf("= %.2f GFLOP/s (median %.2f)", rate.Best, rate.Median), marker)
	}
	assert.Contains(t, text, fmt.Sprintf(" %dx%d:", fr.Sgemm.Size, fr.Sgemm.Size))
	assert.Contains(t, text, fmt.Sprintf("RAWVK verify_mismatches=%d validation_errors=%d validation_warnings=%d",
		fr.VerifyMismatches, fr.ValidationErrors, fr.ValidationWarnings))
}

func TestParseFloorRefusesIncompleteOrUnknownOutput(t *testing.T) {
	var full bytes.Buffer
	printFloor(&full, syntheticFloor())
	lines := strings.SplitAfter(full.String(), "\n")
	without := func(marker string) string {
		var b strings.Builder
		for _, l := range lines {
			if !strings.Contains(l, marker) {
				b.WriteString(l)
			}
		}
		return b.String()
	}
	cases := map[string]string{
		"empty":                 "",
		"no device line":        without("RAWVK device:"),
		"no replay result":      without("RESULT replay"),
		"no verify line":        without("verify_mismatches"),
		"one bandwidth missing": without("(malloc)"),
		"one sgemm missing":     without("sgemm_tiled"),
		"unknown result line":   full.String() + "RAWVK RESULT latency 3 us\n",
		"unknown bw figure":     strings.Replace(full.String(), "vkCmdCopyBuffer", "vkCmdFillBuffer", 1),
		"number that is not":    strings.Replace(full.String(), "per_dispatch_us= 45.653", "per_dispatch_us=4x5.653", 1),
		"non-square sgemm":      strings.Replace(full.String(), "512x512", "512x256", 1),
		"infinite time":         strings.Replace(full.String(), "per_dispatch_us= 45.653", "per_dispatch_us=   +Inf", 1),
		"not a number":          strings.Replace(full.String(), "per_dispatch_us= 45.653", "per_dispatch_us=    NaN", 1),
		"zero time":             strings.Replace(full.String(), "per_dispatch_us= 45.653", "per_dispatch_us=  0.000", 1),
		"negative time":         strings.Replace(full.String(), "per_dispatch_us= 45.653", "per_dispatch_us=-45.653", 1),
		"zero record time":      strings.Replace(full.String(), "record_per_dispatch_us=0.647", "record_per_dispatch_us=0.000", 1),
		"negative bandwidth":    strings.Replace(full.String(), "(median 17.51 GB/s)", "(median -17.51 GB/s)", 1),
		"infinite gflops":       strings.Replace(full.String(), "(median 0.43)", "(median inf)", 1),
	}
	for name, text := range cases {
		_, err := ParseFloor(strings.NewReader(text))
		assert.ErrorIs(t, err, ErrFloorOutput, name)
	}
}

func TestFloorFiguresCarryEveryMeasurement(t *testing.T) {
	fr := syntheticFloor()
	env := map[string]string{"LP_NUM_THREADS": "0"}
	figs := fr.Figures(env)
	r := &Report{Figures: figs}
	require.NoError(t, r.Validate())

	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Suite+"/"+f.Name] = f
		assert.Equal(t, env, f.Env)
	}
	assert.InDelta(t, fr.ReplayPerDispatchUs*1e3, byName["dispatch/floor-replay"].Value, 1e-9)
	assert.Equal(t, fr.K, byName["dispatch/floor-replay"].Params["k"])
	assert.Equal(t, fr.Reps, byName["dispatch/floor-eager"].Samples)
	assert.InDelta(t, fr.BatchedRecordPerDispatchUs*1e3, byName["dispatch/floor-batched-record"].Value, 1e-9)
	assert.Equal(t, fr.Bandwidth.MemcpyMap.Median, byName["transfer/floor-memcpy-mapped"].Value)
	assert.Equal(t, fr.Bandwidth.Bytes, byName["transfer/floor-copy-buffer"].Params["bytes"])
	assert.Equal(t, fr.Sgemm.Tiled.Median, byName["matmul/floor-tiled"].Value)
	assert.Equal(t, fr.Sgemm.Size, byName["matmul/floor-naive"].Params["m"])
	assert.Len(t, figs, 4+4+2)
}

func TestRunFloorNamesWhatIsMissing(t *testing.T) {
	_, err := RunFloor(context.Background(), t.TempDir(), nil)
	require.ErrorIs(t, err, ErrFloorUnavailable)
	assert.Contains(t, err.Error(), "build.sh")

	floor := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(floor, "build.sh"), []byte("exit 0\n"), 0o755))
	t.Setenv("PATH", t.TempDir())
	_, err = RunFloor(context.Background(), floor, nil)
	require.ErrorIs(t, err, ErrFloorUnavailable)
	assert.Contains(t, err.Error(), "glslc")
}

func TestRunFloorReportsAFailingRun(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed: scripts/setup.sh installs it")
	}
	floor := t.TempDir()
	script := "echo 'RAWVK device: broken' ; echo 'glslc: error: no such shader' >&2; exit 3\n"
	require.NoError(t, os.WriteFile(filepath.Join(floor, "build.sh"), []byte(script), 0o755))
	_, err := RunFloor(context.Background(), floor, nil)
	require.ErrorIs(t, err, ErrFloorFailed)
	assert.Contains(t, err.Error(), "no such shader", "stderr explains the failure")
}

// TestRunFloorRunsBuildSh runs a reference whose build.sh prints a known
// result and the settings it was given: RunFloor must run it in its own
// directory with env and a build directory, and parse what it printed.
func TestRunFloorRunsBuildSh(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed: scripts/setup.sh installs it")
	}
	floor := t.TempDir()
	want := syntheticFloor()
	want.Bandwidth, want.Sgemm = nil, nil
	var out bytes.Buffer
	printFloor(&out, want)
	require.NoError(t, os.WriteFile(filepath.Join(floor, "result.txt"), out.Bytes(), 0o644))
	script := `test -d "$RAWVK_BUILD" || exit 4
test "$RAWVK_K" = 250 || exit 5
cat result.txt
`
	require.NoError(t, os.WriteFile(filepath.Join(floor, "build.sh"), []byte(script), 0o755))
	got, err := RunFloor(context.Background(), floor, []string{"RAWVK_K=250"})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// A reference whose figures are not finite and positive is left out with a
// note, like one that cannot run; it never spoils the rest of the report.
func TestFloorWithImpossibleFiguresIsANote(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed: scripts/setup.sh installs it")
	}
	fr := syntheticFloor()
	fr.VerifyMismatches = 0
	fr.Bandwidth, fr.Sgemm = nil, nil
	fr.K = 1000 // as vkc's figures below, so that a floor figure would make a ratio
	var out bytes.Buffer
	printFloor(&out, fr)
	device := DeviceDesc{Name: "llvmpipe (LLVM 15.0.6, 256 bits)"}
	o := options{suites: []string{"dispatch"}, count: 1, quick: true}
	for name, value := range map[string]string{"infinite": "+Inf", "NaN": "NaN", "zero": "0.000", "negative": "-45.653"} {
		o.floorDir = t.TempDir()
		text := strings.Replace(out.String(), "per_dispatch_us= 45.653", "per_dispatch_us="+value, 1)
		require.NoError(t, os.WriteFile(filepath.Join(o.floorDir, "result.txt"), []byte(text), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(o.floorDir, "build.sh"), []byte("cat result.txt\n"), 0o755))

		figs, notes := floorFigures(context.Background(), o, device)
		assert.Empty(t, figs, name)
		require.Len(t, notes, 1, name)
		assert.Contains(t, notes[0], "floor skipped", name)

		k := map[string]int64{"k": 1000}
		rep := &Report{Device: device, Notes: notes, Figures: append(figs,
			Figure{Suite: "dispatch", Name: "eager", Params: k, Value: 9000, Unit: "ns/launch", Samples: 1},
			Figure{Suite: "dispatch", Name: "c-eager", Params: k, Value: 8000, Unit: "ns/launch", Samples: 1},
			Figure{Suite: "dispatch", Name: "c-replay", Params: k, Value: 900, Unit: "ns/launch", Samples: 1},
		)}
		rep.Ratios, _ = computeRatios(rep.Figures)
		var table bytes.Buffer
		require.NoError(t, WriteTable(&table, rep), name)
		assert.Contains(t, table.String(), "eager/c-eager", name)
		assert.NotContains(t, table.String(), "floor-eager", name)
	}
}
