package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// ErrInvalidReport is wrapped by every writer when the report holds a figure
// or ratio that no output format can carry faithfully (an empty name, a unit
// with spaces, a value that is not a finite number). Writers check first and
// write nothing, so a half-written file never looks like a result.
var ErrInvalidReport = errors.New("vkbench: invalid report")

// Figure is one measured number. It is independent of how it was measured so
// that vkc's figures, the C baseline's and an external reference's land in
// the same table, JSON document and benchstat input, and compare line by
// line.
type Figure struct {
	// Suite groups figures that are read together: "dispatch", "transfer",
	// "matmul", "alloc".
	Suite string `json:"suite"`
	// Name says which way of doing the work was measured, e.g. "replay",
	// "eager", "eager-batched", "c-replay", "upload", "c-naive".
	Name string `json:"name"`
	// Params are the sizes the figure depends on, e.g. {"k":1000},
	// {"bytes":1048576} or {"m":512,"n":512,"k":512}.
	Params map[string]int64 `json:"params,omitempty"`
	// Value is the median of Samples timed runs, in Unit.
	Value float64 `json:"value"`
	// Unit has no spaces so that it is a valid benchstat unit: "ns/launch",
	// "GB/s", "GFLOP/s", "ops/s".
	Unit string `json:"unit"`
	// Samples is how many timed runs Value is the median of.
	Samples int `json:"samples"`
	// Runs are those timed runs' own values in Unit, in the order they ran,
	// so that a tool such as benchstat sees the spread and not only the
	// median. Empty for an external reference's figure, which comes as a
	// median alone.
	Runs []float64 `json:"runs,omitempty"`
	// Device is the device's own time for the same work in Unit, beside
	// the host's Value, so the split between the driver's cost and the
	// kernels' is measured: the median of runs whose launches are timed on
	// the device (a Profile for eager and eager-batched, two timed events
	// around the graph for replay). 0 where not measured (the raw and C
	// ways, which do not run on vkc's streams).
	Device float64 `json:"device,omitempty"`
	// Env records the environment that changes the figure, e.g.
	// {"LP_NUM_THREADS":"0"}: lavapipe's per-dispatch cost depends on it.
	Env map[string]string `json:"env,omitempty"`
	// Elem is the element type of the buffers the measured work used
	// ("float32", "uint32", "Float16"), where the suite varies it: the
	// matmul and transfer suites.
	Elem string `json:"elem,omitempty"`
}

// Ratio compares two figures of one suite against the limit vkc promises,
// e.g. "replay/c-replay" at most 1.15. It is a verdict, so it is reported
// apart from the raw figures. An informational ratio (Info) has no limit:
// Limit is 0, OK is true, and the table shows INFO instead of a verdict.
type Ratio struct {
	Suite  string           `json:"suite"`
	Name   string           `json:"name"`
	Params map[string]int64 `json:"params,omitempty"`
	Value  float64          `json:"value"`
	Limit  float64          `json:"limit"`
	OK     bool             `json:"ok"`
	Info   bool             `json:"info,omitempty"`
}

// NewRatio builds the ratio numerator/denominator and decides OK from the
// limit, so that the verdict can never disagree with the numbers it shows.
// A ratio of two times or two rates is positive: a zero or non-finite
// denominator, or a ratio that is not positive, is not OK.
func NewRatio(suite, name string, params map[string]int64, numerator, denominator, limit float64) Ratio {
	value := math.Inf(1)
	if denominator != 0 {
		value = numerator / denominator
	}
	ok := value > 0 && !math.IsInf(value, 0) && value <= limit
	return Ratio{Suite: suite, Name: name, Params: params, Value: value, Limit: limit, OK: ok}
}

// NewInfoRatio builds the ratio numerator/denominator with no limit: it is
// shown for information and never counts as a miss (Limit 0, OK true).
func NewInfoRatio(suite, name string, params map[string]int64, numerator, denominator float64) Ratio {
	value := math.Inf(1)
	if denominator != 0 {
		value = numerator / denominator
	}
	return Ratio{Suite: suite, Name: name, Params: params, Value: value, OK: true, Info: true}
}

// DeviceDesc identifies the Vulkan device a report was measured on; figures
// from different devices must never be compared as if they were one run.
type DeviceDesc struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Driver      string `json:"driver"`
	API         string `json:"api"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

// Report is everything one vkbench run measured: the device, the figures of
// vkc and of the C baseline side by side, the verdicts and free-form notes.
type Report struct {
	Device  DeviceDesc `json:"device"`
	Started time.Time  `json:"started"`
	Figures []Figure   `json:"figures"`
	Ratios  []Ratio    `json:"ratios"`
	Notes   []string   `json:"notes"`
}

// Validate reports the first figure or ratio that an output format cannot
// carry: every writer calls it before writing anything.
func (r *Report) Validate() error {
	if r == nil {
		return fmt.Errorf("%w: nil report", ErrInvalidReport)
	}
	for i, f := range r.Figures {
		switch {
		case strings.TrimSpace(f.Suite) == "":
			return fmt.Errorf("%w: figure %d has no suite", ErrInvalidReport, i)
		case strings.TrimSpace(f.Name) == "":
			return fmt.Errorf("%w: figure %d (%s) has no name", ErrInvalidReport, i, f.Suite)
		case f.Unit == "" || strings.ContainsFunc(f.Unit, unicode.IsSpace):
			return fmt.Errorf("%w: figure %s/%s: unit %q is empty or has spaces", ErrInvalidReport, f.Suite, f.Name, f.Unit)
		case !isFinite(f.Value):
			return fmt.Errorf("%w: figure %s/%s: value %v is not finite", ErrInvalidReport, f.Suite, f.Name, f.Value)
		case !isFinite(f.Device) || f.Device < 0:
			return fmt.Errorf("%w: figure %s/%s: device time %v is not a finite time", ErrInvalidReport, f.Suite, f.Name, f.Device)
		case f.Samples < 1:
			return fmt.Errorf("%w: figure %s/%s: %d samples", ErrInvalidReport, f.Suite, f.Name, f.Samples)
		case len(f.Runs) > 0 && len(f.Runs) != f.Samples:
			return fmt.Errorf("%w: figure %s/%s: %d runs for %d samples", ErrInvalidReport, f.Suite, f.Name, len(f.Runs), f.Samples)
		case slices.ContainsFunc(f.Runs, func(v float64) bool { return !isFinite(v) }):
			return fmt.Errorf("%w: figure %s/%s: a run's value is not finite", ErrInvalidReport, f.Suite, f.Name)
		}
	}
	for i, ratio := range r.Ratios {
		if strings.TrimSpace(ratio.Name) == "" {
			return fmt.Errorf("%w: ratio %d has no name", ErrInvalidReport, i)
		}
		// A ratio against a zero denominator is +Inf; JSON cannot carry it.
		if !isFinite(ratio.Value) || !isFinite(ratio.Limit) {
			return fmt.Errorf("%w: ratio %s/%s: value %v or limit %v is not finite", ErrInvalidReport, ratio.Suite, ratio.Name, ratio.Value, ratio.Limit)
		}
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// suiteOrder is the order in which suites are printed: the headline first.
var suiteOrder = []string{"dispatch", "transfer", "matmul", "alloc", "startup", "kernels", "decode"}

// figuresBySuite groups figures by suite, known suites first in suiteOrder,
// others after them alphabetically; within a suite the measuring order stays.
func figuresBySuite(figures []Figure) (suites []string, groups map[string][]Figure) {
	groups = make(map[string][]Figure)
	for _, f := range figures {
		groups[f.Suite] = append(groups[f.Suite], f)
	}
	var others []string
	for s := range groups {
		if !slices.Contains(suiteOrder, s) {
			others = append(others, s)
		}
	}
	slices.Sort(others)
	for _, s := range suiteOrder {
		if _, ok := groups[s]; ok {
			suites = append(suites, s)
		}
	}
	return append(suites, others...), groups
}

// paramKeys orders parameter keys for people reading them: matrix shapes as
// M, N, K, then the rest alphabetically.
func paramKeys(params map[string]int64) []string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case "b": // a batch count comes first: b=32/m=128/n=128/k=64
			return -1
		case "m":
			return 0
		case "n":
			return 1
		case "k":
			return 2
		}
		return 3
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return keys
}

// formatParams renders parameters for a table: sizes in bytes as IEC units
// ("1 MiB"), single-letter dimensions in capitals ("K=1000").
func formatParams(params map[string]int64) string {
	if len(params) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(params))
	for _, k := range paramKeys(params) {
		v := params[k]
		switch {
		case k == "bytes":
			parts = append(parts, formatBytes(v))
		case len(k) == 1:
			parts = append(parts, strings.ToUpper(k)+"="+strconv.FormatInt(v, 10))
		default:
			parts = append(parts, k+"="+strconv.FormatInt(v, 10))
		}
	}
	return strings.Join(parts, " ")
}

// formatBytes writes n in the largest IEC unit that shows it exactly, or with
// one decimal when no unit does: "64 MiB", "1.5 KiB", "100 B".
func formatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	if n < 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	i := 0
	for i+1 < len(units) && n >= int64(1)<<(10*(i+1)) {
		i++
	}
	scale := int64(1) << (10 * i)
	if n%scale == 0 {
		return strconv.FormatInt(n/scale, 10) + " " + units[i]
	}
	return strconv.FormatFloat(float64(n)/float64(scale), 'f', 1, 64) + " " + units[i]
}

// formatValue keeps three to four significant digits, enough to compare
// medians of noisy runs without pretending more precision.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0 || a >= 0.001:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func formatEnv(env map[string]string) string {
	if len(env) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + env[k]
	}
	return strings.Join(parts, " ")
}

// WriteTable writes the report for a person at a terminal: the device, one
// aligned block per suite, the ratios with PASS, OVER LIMIT or (for one with
// no limit) INFO, then the notes. Neither verdict changes vkbench's exit
// status: only failed result checks and failed runs do.
func WriteTable(w io.Writer, r *Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	memory := "-"
	if r.Device.MemoryBytes > 0 {
		memory = formatBytes(int64(min(r.Device.MemoryBytes, math.MaxInt64)))
	}
	fmt.Fprintf(bw, "device: %s (%s), driver %s, Vulkan %s, %s memory\n",
		orDash(r.Device.Name), orDash(r.Device.Type), orDash(r.Device.Driver), orDash(r.Device.API), memory)
	if !r.Started.IsZero() {
		fmt.Fprintf(bw, "started: %s\n", r.Started.Format(time.RFC3339))
	}
	suites, groups := figuresBySuite(r.Figures)
	for _, suite := range suites {
		fmt.Fprintf(bw, "\n== %s ==\n", suite)
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tPARAMS\tVALUE\tDEVICE\tUNIT\tSAMPLES\tENV")
		for _, f := range groups[suite] {
			device := "-"
			if f.Device != 0 {
				device = formatValue(f.Device)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", f.Name, formatParams(f.Params), formatValue(f.Value), device, f.Unit, f.Samples, formatEnv(f.Env))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintf(bw, "\n== ratios ==\n")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SUITE\tRATIO\tPARAMS\tVALUE\tLIMIT\tVERDICT")
		for _, ratio := range r.Ratios {
			verdict, limit := "PASS", strconv.FormatFloat(ratio.Limit, 'f', 3, 64)
			switch {
			case ratio.Info:
				verdict, limit = "INFO", "-"
			case !ratio.OK:
				verdict = "OVER LIMIT"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%s\n", orDash(ratio.Suite), ratio.Name, formatParams(ratio.Params), ratio.Value, limit, verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(bw, "\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(bw, "  - %s\n", n)
		}
	}
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteJSON writes the report as one indented JSON document for scripts and
// for comparing runs over time. Field names are stable lower_snake_case:
//
//	{
//	  "device":  {"name", "type", "driver", "api", "memory_bytes"},
//	  "started": RFC 3339 time,
//	  "figures": [{"suite", "name", "params": {key: int}, "value", "unit",
//	               "samples", "runs": [number], "env": {key: string}}],
//	  "ratios":  [{"suite", "name", "params", "value", "limit", "ok", "info"}],
//	  "notes":   [string]
//	}
//
// "value" is the median of "runs", one value per timed run ("samples" of
// them), which is left out for a figure that has only its median (an
// external reference's). "params" and "env" are left out when empty,
// "info" when false (an info
// ratio has no limit: "limit" is 0 and "ok" true); "figures", "ratios" and
// "notes" are always arrays, never null.
func WriteJSON(w io.Writer, r *Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	out := *r
	out.Figures = nonNil(out.Figures)
	out.Ratios = nonNil(out.Ratios)
	out.Notes = nonNil(out.Notes)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&out)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// benchPackage is the package path benchstat groups vkbench's results under.
const benchPackage = "github.com/vkcompute/vkc/cmd/vkbench"

// WriteBench writes the figures in the Go benchmark format, so that two runs
// (say, before and after a change) compare with benchstat. Each timed run of
// a figure is one line, "BenchmarkDispatch/replay/k=1000 1 1781 ns/launch",
// so benchstat sees every sample (-count of them) and their spread; a figure
// without its runs (an external reference's) is one line, its median. The
// iteration count is always 1: a line is one run, however many operations it
// timed. The device goes into configuration lines, so results from
// different devices are never pooled.
func WriteBench(w io.Writer, r *Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "goos: %s\ngoarch: %s\npkg: %s\ncpu: %s\n", runtime.GOOS, runtime.GOARCH, benchPackage, cpuName())
	if r.Device.Name != "" {
		fmt.Fprintf(bw, "vkdevice: %s\n", oneLine(r.Device.Name))
	}
	if r.Device.Driver != "" {
		fmt.Fprintf(bw, "vkdriver: %s\n", oneLine(r.Device.Driver))
	}
	for _, f := range r.Figures {
		runs := f.Runs
		if len(runs) == 0 {
			runs = []float64{f.Value}
		}
		for _, v := range runs {
			fmt.Fprintf(bw, "%s 1 %s %s\n", benchName(f), strconv.FormatFloat(v, 'g', -1, 64), f.Unit)
		}
	}
	return bw.Flush()
}

// benchName is "Benchmark" + capitalised suite + "/" + name + "/" + params as
// key=value, with anything that would split the name into fields replaced.
func benchName(f Figure) string {
	var b strings.Builder
	b.WriteString("Benchmark")
	suite := benchToken(f.Suite)
	b.WriteString(strings.ToUpper(suite[:1]) + suite[1:])
	b.WriteString("/")
	b.WriteString(benchToken(f.Name))
	for _, k := range paramKeys(f.Params) {
		fmt.Fprintf(&b, "/%s=%d", benchToken(k), f.Params[k])
	}
	return b.String()
}

func benchToken(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '-'
		}
		return r
	}, strings.TrimSpace(s))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cpuName reads the processor model as "go test" reports it, falling back to
// the architecture where /proc/cpuinfo is not there.
func cpuName() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for line := range strings.Lines(string(data)) {
			key, value, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(key) == "model name" {
				return oneLine(value)
			}
		}
	}
	return runtime.GOARCH
}
