package main

import (
	"fmt"
	"maps"
	"strings"
)

// ratioDef is one row of vkbench's verdict table: which two figures a ratio
// divides, when it is computed and against which limit. The table is data
// so that the code that computes ratios, the test that checks them and the
// reference in cmd/vkbench/README.md all read the same rows.
//
// Every ratio is written so that smaller is better: times divided by times
// (vkc's over the baseline's), or rates the other way round (the
// baseline's speed over vkc's). A ratio is computed at the parameters of
// each figure named Trigger — one per chain length, size or shape the run
// measured — and only where both of its figures exist at those parameters.
// A figure may instead be placed elsewhere (NumeratorAt, DenominatorAt):
// a reference measured once, at parameters of its own and perhaps by
// another suite, that a target relates every trigger's figure to.
type ratioDef struct {
	Suite       string
	Trigger     string // the figure whose presence asks for this ratio, at its parameters
	Numerator   string
	Denominator string
	Limit       ratioLimit
	Min         paramMin   // the trigger's parameters must reach it; zero: always
	Topic       ratioTopic // the note that explains the ratio in the report
	// At, when set, asks for the trigger at exactly these parameters: a
	// target stated for one shape rather than for every one measured.
	At map[string]int64
	// NumeratorAt and DenominatorAt, where set, read that figure at their
	// place instead of beside the trigger.
	NumeratorAt, DenominatorAt figurePlace
	// Target, when not zero, is the denominator in place of a figure: the
	// ratio is the numerator over a number the project set (a compile time
	// in the figure's unit), and Denominator only names it ("5ms").
	Target float64
}

// Name is the ratio as the report shows it: numerator/denominator, each
// figure placed elsewhere than the trigger's parameters followed by its
// place, as in "c-memcpy[transfer 64 MiB]/matmul-read".
func (d ratioDef) Name() string {
	return d.NumeratorAt.label(d.Suite, d.Numerator) + "/" + d.DenominatorAt.label(d.Suite, d.Denominator)
}

// figurePlace is where a ratio reads one of its figures when not beside
// its trigger: in Suite ("": the ratio's own) at Params (nil: the
// trigger's). The zero place is beside the trigger.
type figurePlace struct {
	Suite  string
	Params map[string]int64
}

// key is the index key of name at this place, for a ratio of suite
// computed at the trigger's params.
func (p figurePlace) key(suite, name string, params map[string]int64) string {
	if p.Suite != "" {
		suite = p.Suite
	}
	if p.Params != nil {
		params = p.Params
	}
	return figureKey(suite, name, params)
}

// label is name as a ratio's name shows it: bare beside the trigger, else
// with its suite (where not the ratio's) and parameters in brackets.
func (p figurePlace) label(suite, name string) string {
	var where []string
	if p.Suite != "" && p.Suite != suite {
		where = append(where, p.Suite)
	}
	if p.Params != nil {
		where = append(where, formatParams(p.Params))
	}
	if len(where) == 0 {
		return name
	}
	return name + "[" + strings.Join(where, " ") + "]"
}

// longChainK is the chain length the dispatch targets are stated for:
// long chains, where the launches outweigh the one submit every way pays.
const longChainK = 1000

// ratioLimit is the most a ratio may be. Long applies from K=longChainK,
// Short to shorter chains and to figures with no K; a zero limit means the
// ratio is informational (INFO), shown with no verdict. Ratios outside the
// dispatch suite use atEveryK, for which the difference does not arise.
type ratioLimit struct {
	Long, Short float64
}

// atEveryK is a limit that does not depend on the chain length.
func atEveryK(limit float64) ratioLimit { return ratioLimit{Long: limit, Short: limit} }

// byChainLength is a dispatch limit: the target for long chains and a
// looser bound for short ones, where one submit dominates every way.
func byChainLength(short, long float64) ratioLimit { return ratioLimit{Long: long, Short: short} }

// longChainsOnly is a target for long chains that shorter ones show as INFO.
func longChainsOnly(long float64) ratioLimit { return ratioLimit{Long: long} }

// informational is no limit at all: the ratio is always INFO.
var informational = ratioLimit{}

// at is the limit for a figure's parameters; 0 means informational.
func (l ratioLimit) at(params map[string]int64) float64 {
	if params["k"] >= longChainK {
		return l.Long
	}
	return l.Short
}

// paramMin asks that a parameter reach a value before a ratio is computed.
type paramMin struct {
	Key   string
	Value int64
}

func (m paramMin) admits(params map[string]int64) bool {
	return m.Key == "" || params[m.Key] >= m.Value
}

// triggeredBy reports whether figure f asks for this ratio at its
// parameters.
func (d ratioDef) triggeredBy(f Figure) bool {
	return d.Suite == f.Suite && d.Trigger == f.Name && d.Min.admits(f.Params) &&
		(d.At == nil || maps.Equal(d.At, f.Params))
}

// transferRatioMinBytes is the smallest size at which transfer speed is
// compared with the C baseline's memcpy: below it Go's copy (which upload
// and download use) still runs largely from cache (on this project's
// machines ~35 GB/s up to 16 MiB, DRAM speed only at 64 MiB), while glibc's
// memcpy switches to non-temporal stores that bypass the cache, so the
// ratio would compare cache with DRAM rather than vkc with C. The device
// copy is compared with the baseline's vkCmdCopyBuffer at every size: both
// run the driver's copy.
const transferRatioMinBytes = 64 << 20

// recordRatioMinK is the shortest chain record/c-record is reported for:
// below it the window's fixed cost (open, command buffer, close) outweighs
// the launches.
const recordRatioMinK = 100

// ratioTopic names a note of the report; each is printed once, in the
// order of ratioNotes, when a ratio (or figure) of its topic is there.
type ratioTopic int

const (
	topicDispatch ratioTopic = iota
	topicBound
	topicEmptyKernel
	topicVec4
	topicWide
	topicFloor
	topicNaive
	topicBlocked
	topicTexel
	topicSquare
	topicRead
	topicCopyBuffer
	topicMemcpy
	topicSum
	topicCompile
	topicReduce
	topicDecode
)

var (
	dispatchRecordMin = paramMin{Key: "k", Value: recordRatioMinK}
	memcpyMin         = paramMin{Key: "bytes", Value: transferRatioMinBytes}
)

// The matmul targets that relate one shape to another figure: a shape's
// GFLOP/s as a share of the 1024 square's, and a bandwidth-bound shape's
// bytes read per second as a share of memcpy's. They are the project's
// targets for every device, stated as the least share; the ratios, smaller
// being better, are the reference over the shape, at most one over it.
const (
	rectOverSquareMin  = 0.7 // 1000 x 3000 x 500
	batchOverSquareMin = 0.5 // 32 products of 128 x 128 x 64
	gemvOverMemcpyMin  = 0.5 // M = 1 or N = 1, of a 4096 x 4096 matrix
	longKOverMemcpyMin = 0.3 // 3 x 16 x 100000
)

var (
	// matmulSquare places the 1024 square's figure, the reference of the
	// shapes' GFLOP/s.
	matmulSquare = figurePlace{Params: matmulShape{m: 1024, n: 1024, k: 1024}.params()}
	// memcpy64MiB places the C baseline's memcpy of 64 MiB in the transfer
	// suite (where caches no longer help it), the reference of the
	// bandwidth-bound shapes' reads.
	memcpy64MiB = figurePlace{Suite: "transfer", Params: map[string]int64{"bytes": transferRatioMinBytes}}
)

// ratioDefs are vkbench's ratios, in the order the report lists those of
// one trigger figure.
var ratioDefs = []ratioDef{
	// Against the C baseline that binds and pushes before every launch.
	// Short chains are a submit and a wait, which vkc may pay a little
	// more for than C; long chains are where vkc must beat it: no slower
	// one submit per launch, well ahead batched (vkc hands the device the
	// first launches while it records the rest), ahead on replay, and
	// within half again of C's recording while it tracks every launch.
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "eager", Denominator: "c-eager", Limit: byChainLength(1.3, 1), Topic: topicDispatch},
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "eager-batched", Denominator: "c-batched", Limit: byChainLength(1.5, 0.8), Topic: topicDispatch},
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "replay", Denominator: "c-replay", Limit: byChainLength(1.15, 0.9), Topic: topicDispatch},
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "raw", Denominator: "c-replay", Limit: atEveryK(1.1), Topic: topicDispatch},
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "record", Denominator: "c-record", Limit: atEveryK(1.5), Min: dispatchRecordMin, Topic: topicDispatch},
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "replay-dynamic", Denominator: "replay", Limit: atEveryK(1.2), Topic: topicDispatch},
	// The same captured chains through ops.Axpy: what the op library adds
	// to the launch of its kernel.
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "ops-replay", Denominator: "replay", Limit: informational, Topic: topicDispatch},
	{Suite: "dispatch", Trigger: "c-replay", Numerator: "ops-replay-dynamic", Denominator: "replay-dynamic", Limit: informational, Topic: topicDispatch},

	// Against the C baseline that binds and pushes once per command
	// buffer: the best plain C. vkc records the same commands (it skips
	// binds that change nothing) plus its tracking, and the project states
	// no target against it, except for the kernel: vkc's axpy takes four
	// elements per invocation against the scalar C kernel.
	{Suite: "dispatch", Trigger: "c-replay-bound", Numerator: "eager-batched", Denominator: "c-batched-bound", Limit: informational, Topic: topicBound},
	{Suite: "dispatch", Trigger: "c-replay-bound", Numerator: "replay", Denominator: "c-replay-bound", Limit: longChainsOnly(0.65), Topic: topicBound},
	{Suite: "dispatch", Trigger: "c-replay-bound", Numerator: "raw", Denominator: "c-replay-bound", Limit: informational, Topic: topicBound},
	{Suite: "dispatch", Trigger: "c-replay-bound", Numerator: "record", Denominator: "c-record-bound", Limit: informational, Min: dispatchRecordMin, Topic: topicBound},

	// The same kernel shape as vkc's axpy in plain C, bound once: what is
	// left is vkc's own cost around the same kernel; where vkc runs axpy's
	// wide variant (a CPU driver), that module in plain C.
	{Suite: "dispatch", Trigger: "c-replay-bound-vec4", Numerator: "replay", Denominator: "c-replay-bound-vec4", Limit: atEveryK(1.05), Topic: topicVec4},
	{Suite: "dispatch", Trigger: "c-replay-bound-wide", Numerator: "replay", Denominator: "c-replay-bound-wide", Limit: atEveryK(1.05), Topic: topicWide},

	// The external reference's own targets, where -floor gave one.
	{Suite: "dispatch", Trigger: "floor-replay", Numerator: "eager", Denominator: "floor-eager", Limit: atEveryK(0.5), Topic: topicFloor},
	{Suite: "dispatch", Trigger: "floor-replay", Numerator: "eager-batched", Denominator: "floor-batched", Limit: atEveryK(0.8), Topic: topicFloor},
	{Suite: "dispatch", Trigger: "floor-replay", Numerator: "replay", Denominator: "floor-replay", Limit: atEveryK(0.8), Topic: topicFloor},
	{Suite: "dispatch", Trigger: "floor-replay", Numerator: "record", Denominator: "floor-batched-record", Limit: atEveryK(1), Topic: topicFloor},

	// Rates: the baseline's GFLOP/s over vkc's. c-texel is the kernel vkc
	// runs on a CPU driver, in plain C.
	{Suite: "matmul", Trigger: "c-naive", Numerator: "c-naive", Denominator: "matmul", Limit: atEveryK(1.0 / 3), Topic: topicNaive},
	{Suite: "matmul", Trigger: "c-blocked", Numerator: "c-blocked", Denominator: "matmul", Limit: atEveryK(1.1), Topic: topicBlocked},
	{Suite: "matmul", Trigger: "c-texel", Numerator: "c-texel", Denominator: "matmul", Limit: atEveryK(1.1), Topic: topicTexel},

	// Rates of other shapes against references measured elsewhere in the
	// run: the 1024 square's GFLOP/s, and the transfer suite's memcpy of
	// 64 MiB against the bytes a bandwidth-bound product reads.
	{Suite: "matmul", Trigger: "matmul", At: matmulShape{m: 1000, n: 3000, k: 500}.params(), Numerator: "matmul", NumeratorAt: matmulSquare, Denominator: "matmul", Limit: atEveryK(1 / rectOverSquareMin), Topic: topicSquare},
	{Suite: "matmul", Trigger: "matmul", At: matmulShape{m: 128, n: 128, k: 64, b: 32}.params(), Numerator: "matmul", NumeratorAt: matmulSquare, Denominator: "matmul", Limit: atEveryK(1 / batchOverSquareMin), Topic: topicSquare},
	{Suite: "matmul", Trigger: "matmul-read", At: matmulShape{m: 1, n: 4096, k: 4096}.params(), Numerator: "c-memcpy", NumeratorAt: memcpy64MiB, Denominator: "matmul-read", Limit: atEveryK(1 / gemvOverMemcpyMin), Topic: topicRead},
	{Suite: "matmul", Trigger: "matmul-read", At: matmulShape{m: 4096, n: 1, k: 4096}.params(), Numerator: "c-memcpy", NumeratorAt: memcpy64MiB, Denominator: "matmul-read", Limit: atEveryK(1 / gemvOverMemcpyMin), Topic: topicRead},
	{Suite: "matmul", Trigger: "matmul-read", At: matmulShape{m: 3, n: 16, k: 100000}.params(), Numerator: "c-memcpy", NumeratorAt: memcpy64MiB, Denominator: "matmul-read", Limit: atEveryK(1 / longKOverMemcpyMin), Topic: topicRead},

	// Rates: the baseline's GB/s over vkc's.
	{Suite: "transfer", Trigger: "c-copy-buffer", Numerator: "c-copy-buffer", Denominator: "copy", Limit: atEveryK(1.1), Topic: topicCopyBuffer},
	{Suite: "transfer", Trigger: "c-memcpy", Numerator: "c-memcpy", Denominator: "upload", Limit: atEveryK(1.25), Min: memcpyMin, Topic: topicMemcpy},
	{Suite: "transfer", Trigger: "c-memcpy", Numerator: "c-memcpy", Denominator: "download", Limit: atEveryK(1.25), Min: memcpyMin, Topic: topicMemcpy},
	{Suite: "transfer", Trigger: "c-memcpy", Numerator: "c-memcpy", Denominator: "copy", Limit: atEveryK(1 / 0.85), Min: memcpyMin, Topic: topicMemcpy},
	{Suite: "transfer", Trigger: "c-memcpy", Numerator: "c-memcpy", Denominator: "sum", Limit: atEveryK(1.25), Min: memcpyMin, Topic: topicSum},

	// WGSL compiled at run time: compile times over their targets, and a
	// reduction's device time over the same algorithm compiled by glslc
	// (and the translator's zeroing of workgroup memory, kept, over it).
	{Suite: "kernels", Trigger: "compile-cold", Numerator: "compile-cold", Denominator: fmt.Sprintf("%dms", compileColdTargetMs), Target: compileColdTargetMs, Limit: atEveryK(1), Topic: topicCompile},
	{Suite: "kernels", Trigger: "compile-cached", Numerator: "compile-cached", Denominator: fmt.Sprintf("%dus", compileCachedTargetUs), Target: compileCachedTargetUs, Limit: atEveryK(1), Topic: topicCompile},
	{Suite: "kernels", Trigger: "reduce-glsl", Numerator: "reduce-wgsl", Denominator: "reduce-glsl", Limit: atEveryK(reduceWGSLOverGLSL), Topic: topicReduce},
	{Suite: "kernels", Trigger: "reduce-glsl", Numerator: "reduce-wgsl-zeroed", Denominator: "reduce-wgsl", Limit: informational, Topic: topicReduce},

	// A decode step captured once and replayed per token, over the same
	// ops launched one by one: what capture saves a model's step.
	{Suite: "decode", Trigger: "replay", Numerator: "replay", Denominator: "eager", Limit: informational, Topic: topicDecode},
}

// figureTopics are notes a figure calls for by itself, with no ratio.
var figureTopics = []struct {
	Suite, Name string
	Topic       ratioTopic
}{
	{"dispatch", "c-replay-empty", topicEmptyKernel},
}

// ratioNotes are the report's notes on the ratios, by topic, in the order
// they are printed.
var ratioNotes = []struct {
	Topic ratioTopic
	Lines []string
}{
	{topicDispatch, []string{
		"dispatch: x/c-y is vkc's time per launch over the C baseline's for the same chain (eager: a submit per launch; batched: one submit per chain; replay: a command buffer recorded once; record: recording alone), where C binds the pipeline and set and pushes the constants before every launch; the K=1000 limits are the project's targets",
		"dispatch: replay-dynamic replays a chain whose length param changes before every replay; recapture captures the chain again each time (what changing a static graph costs): the gap between the two is what a Param saves; ops-replay and ops-replay-dynamic are replay and replay-dynamic through ops.Axpy, so ops-x/x is what the op library adds to a launch; informational, no limit (INFO)",
		fmt.Sprintf("dispatch: record/c-record from K=%d: below, the window's fixed cost (open, command buffer, close) outweighs the launches", recordRatioMinK),
	}},
	{topicBound, []string{
		"dispatch: x/c-y-bound compares with the C baseline binding the pipeline and set and pushing the constants once per command buffer (a dispatch and a barrier per launch: the fewest commands plain C records for the chain); vkc skips the same binds, so this is the comparison with the best plain C; informational, no limit (INFO)",
	}},
	{topicEmptyKernel, []string{
		"dispatch: c-replay-empty is c-replay-bound with a kernel whose body is empty: what the driver charges per launch for a dispatch and a barrier; the rest of a replay's launch is the kernel's own execution, which no way of recording removes",
	}},
	{topicVec4, []string{
		"dispatch: the C chains run a scalar axpy (one element per invocation); vkc's axpy takes four (vec4; eight, in 64-bit words, on a CPU driver with shaderInt64: see c-replay-bound-wide), so replay/c-replay-bound at K=1000 (<= 0.65) is the kernel's gain, and replay/c-replay-bound-vec4 (<= 1.05) compares with plain C running vkc's own axpy module, bound once",
	}},
	{topicWide, []string{
		"dispatch: on this device vkc's axpy is its wide variant (axpy_wide: eight elements per invocation as 64-bit words, 32 invocations per group; a CPU driver runs each load once per lane and component, so wider components do less work); replay/c-replay-bound-wide (<= 1.05) compares with plain C running that module, bound once: the same kernel shape. replay/c-replay-bound-vec4 then compares vkc with plain C running the vec4 module it no longer runs here",
	}},
	{topicFloor, []string{
		"dispatch: x/floor-y compares with the external reference -floor ran, in the same run",
	}},
	{topicNaive, []string{
		"matmul: c-naive/matmul <= 0.333 means vkc's matmul runs at least 3x the C baseline's naive sgemm",
	}},
	{topicBlocked, []string{
		"matmul: c-blocked/matmul <= 1.1 means vkc's matmul runs at least 91% of the C baseline's register-blocked sgemm, the 16 x 16 block per invocation of vkc's blocked kernel (a CPU driver runs matmul_texel for these shapes instead, where the ratio falls below 1; a GPU runs a smaller block, and the ratio says how the shapes compare there)",
	}},
	{topicTexel, []string{
		"matmul: c-texel is plain C running vkc's own matmul_texel module (A and B read as texels of uniform texel buffers, 16 x 32 of C per invocation), the kernel vkc runs on a CPU driver for these shapes; c-texel/matmul <= 1.1 means vkc adds at most 10% around the same kernel (the limit of c-blocked/matmul: on a 2-core CPU driver two runs of one kernel differ by about that much)",
	}},
	{topicSquare, []string{
		fmt.Sprintf("matmul: %s/matmul is the 1024 square's GFLOP/s over a shape's: <= %.4g at 1000x3000x500 is that shape at >= %.0f%% of the square's rate, <= %.4g for the batch of 32 products of 128x128x64 at >= %.0f%%; the project's targets for every device, which a CPU driver may miss (OVER LIMIT, which like every verdict leaves the exit status alone)",
			matmulSquare.label("matmul", "matmul"), 1/rectOverSquareMin, 100*rectOverSquareMin, 1/batchOverSquareMin, 100*batchOverSquareMin),
	}},
	{topicRead, []string{
		fmt.Sprintf("matmul: matmul-read is a bandwidth-bound shape's bytes of A and B read per second; %s/matmul-read is the C baseline's memcpy of %s (measured by the transfer suite: the ratio needs both suites in the run) over it: <= %.4g for the matrix-vector products of a 4096x4096 matrix is reading at >= %.0f%% of memcpy, <= %.4g for 3x16x100000 (long K) at >= %.0f%%; the project's targets for every device, verdicts that leave the exit status alone",
			memcpy64MiB.label("matmul", "c-memcpy"), formatBytes(transferRatioMinBytes), 1/gemvOverMemcpyMin, 100*gemvOverMemcpyMin, 1/longKOverMemcpyMin, 100*longKOverMemcpyMin),
	}},
	{topicCopyBuffer, []string{
		"transfer: c-copy-buffer/copy <= 1.1 means vkc.Copy reaches at least 91% of the C baseline's vkCmdCopyBuffer",
	}},
	{topicMemcpy, []string{
		fmt.Sprintf("transfer: compared with the C baseline's memcpy from %s up (smaller copies run from cache); c-memcpy/x <= 1.25 is x at >= 80%% of memcpy, c-memcpy/copy <= 1.176 is copy at >= 85%%", formatBytes(transferRatioMinBytes)),
	}},
	{topicSum, []string{
		"transfer: sum is ops.Sum of a float32 tensor of the size (one axis, summed along axis 0), in bytes read per second; c-memcpy/sum <= 1.25 is Sum reading at >= 80% of the C baseline's memcpy",
	}},
	{topicCompile, []string{
		"kernels: compile-cold is wgsl.Compile of a tiled matmul whose source the cache has not seen (the translator and the SPIR-V repairs), compile-cached the same call again; compile-x/T is the figure over its target T",
	}},
	{topicReduce, []string{
		fmt.Sprintf("kernels: reduce-x is the device time of a two-pass sum (per run, the median of 16 sums by each module, interleaved) from reduce.wgsl compiled by package wgsl, from the same algorithm in GLSL compiled by glslc -O, and from the WGSL with the translator's zeroing of workgroup memory kept; reduce-wgsl/reduce-glsl <= %g", reduceWGSLOverGLSL),
	}},
	{topicDecode, []string{
		"decode: one step of a transformer decoder built from package ops (embedding gathers, layernorms, attention over a K/V cache, a fused bias+GELU MLP, logits and argmax), host time per token with the token written before and the argmax read after; eager launches the ops, replay replays them captured once; DEVICE is the device's time per step (a Profile of the ops, timed events around a replay); replay/eager is informational",
	}},
}

// figureIndex finds figures by suite, name and parameters.
type figureIndex map[string]float64

func figureKey(suite, name string, params map[string]int64) string {
	var b strings.Builder
	b.WriteString(suite + "/" + name)
	for _, k := range paramKeys(params) {
		fmt.Fprintf(&b, "/%s=%d", k, params[k])
	}
	return b.String()
}

func indexFigures(figs []Figure) figureIndex {
	idx := figureIndex{}
	for _, f := range figs {
		idx[figureKey(f.Suite, f.Name, f.Params)] = f.Value
	}
	return idx
}

// computeRatios derives the verdicts from the figures: for each figure, in
// the order of figs, every ratio it triggers whose two figures exist at its
// parameters, then one note per topic that any of them (or a figure of
// figureTopics) called for.
func computeRatios(figs []Figure) ([]Ratio, []string) {
	idx := indexFigures(figs)
	var ratios []Ratio
	topics := map[ratioTopic]bool{}
	for _, f := range figs {
		for _, def := range ratioDefs {
			if !def.triggeredBy(f) {
				continue
			}
			if r, ok := def.ratio(idx, f.Params); ok {
				ratios = append(ratios, r)
				topics[def.Topic] = true
			}
		}
		for _, ft := range figureTopics {
			if ft.Suite == f.Suite && ft.Name == f.Name {
				topics[ft.Topic] = true
			}
		}
	}
	var notes []string
	for _, n := range ratioNotes {
		if topics[n.Topic] {
			notes = append(notes, n.Lines...)
		}
	}
	return ratios, notes
}

// ratio computes def at params, if both of its figures were measured there.
func (d ratioDef) ratio(idx figureIndex, params map[string]int64) (Ratio, bool) {
	n, okN := idx[d.NumeratorAt.key(d.Suite, d.Numerator, params)]
	den, okD := idx[d.DenominatorAt.key(d.Suite, d.Denominator, params)]
	if d.Target != 0 {
		den, okD = d.Target, true
	}
	if !okN || !okD {
		return Ratio{}, false
	}
	if limit := d.Limit.at(params); limit != 0 {
		return NewRatio(d.Suite, d.Name(), params, n, den, limit), true
	}
	return NewInfoRatio(d.Suite, d.Name(), params, n, den), true
}
