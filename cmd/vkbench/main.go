// Command vkbench measures vkc on a Vulkan device: per-launch cost of eager,
// batched and captured work against a raw vk/ path and the plain-C floor,
// transfer bandwidth against a host copy, matmul throughput and allocation
// rates. Each suite runs in its own child process, because lavapipe reads
// LP_NUM_THREADS once at process start and the dispatch figures need it at 0
// while bandwidth and matmul need the driver's threads.
//
// Usage:
//
//	vkbench [-suite dispatch|transfer|matmul|alloc|all] [-format table|json|bench]
//	        [-plot FILE.svg|FILE.png] [-device INDEX|NAME] [-validate]
//	        [-count N] [-time DURATION] [-quick] [-floor=false]
//	vkbench -devices
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vkcompute/vkc"
)

// ErrUsage means the command line asked for something vkbench does not do.
var ErrUsage = errors.New("vkbench: usage")

// ErrChild means a suite's child process failed to run or to report.
var ErrChild = errors.New("vkbench: suite process failed")

// suiteRunners are the suites in the order they run and print.
var suiteRunners = map[string]func(settings) (*suiteResult, error){
	"dispatch": runDispatch,
	"transfer": runTransfer,
	"matmul":   runMatmul,
	"alloc":    runAlloc,
}

// options is the parsed command line.
type options struct {
	suites   []string
	format   string
	plotPath string
	device   string
	devices  bool
	validate bool
	count    int
	minTime  time.Duration
	quick    bool
	floor    bool
	child    string // hidden: run this one suite and print its result as JSON
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("vkbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	suite := fs.String("suite", "all", "suite to run: dispatch, transfer, matmul, alloc or all")
	fs.StringVar(&o.format, "format", "table", "output format: table, json or bench (Go benchmark lines for benchstat)")
	fs.StringVar(&o.plotPath, "plot", "", "also draw the dispatch and transfer figures into `FILE` (.svg or .png; several, comma-separated)")
	fs.StringVar(&o.device, "device", "", "device by `INDEX or NAME` substring (default: VKC_DEVICE, else the best)")
	fs.BoolVar(&o.devices, "devices", false, "list the Vulkan devices and exit")
	fs.BoolVar(&o.validate, "validate", false, "run with the Khronos validation layer (slow; any message fails the run)")
	fs.IntVar(&o.count, "count", 5, "timed runs per figure; the figure is their median")
	fs.DurationVar(&o.minTime, "time", 200*time.Millisecond, "minimum duration of one timed run")
	fs.BoolVar(&o.quick, "quick", false, "tiny sizes (K up to 10, 1 MiB transfers, 64-size matmul), for tests")
	fs.BoolVar(&o.floor, "floor", true, "also build and run the plain-C floor and compare against it")
	fs.StringVar(&o.child, "child", "", "internal: run one suite in this process and print JSON")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	if *suite == "all" {
		o.suites = slices.Clone(suiteOrder)
	} else {
		for _, s := range strings.Split(*suite, ",") {
			if _, ok := suiteRunners[s]; !ok {
				return o, fmt.Errorf("%w: unknown suite %q (dispatch, transfer, matmul, alloc or all)", ErrUsage, s)
			}
			o.suites = append(o.suites, s)
		}
	}
	if o.child != "" {
		if _, ok := suiteRunners[o.child]; !ok {
			return o, fmt.Errorf("%w: unknown suite %q", ErrUsage, o.child)
		}
	}
	switch o.format {
	case "table", "json", "bench":
	default:
		return o, fmt.Errorf("%w: unknown format %q (table, json or bench)", ErrUsage, o.format)
	}
	if o.count < 1 {
		return o, fmt.Errorf("%w: -count %d: at least 1", ErrUsage, o.count)
	}
	if o.minTime < 0 {
		return o, fmt.Errorf("%w: -time %v is negative", ErrUsage, o.minTime)
	}
	return o, nil
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its streams passed in; it returns the exit status:
// 0 success, 1 a failed check or run, 2 a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	cfg := settings{count: o.count, minTime: o.minTime, quick: o.quick, device: o.device, validate: o.validate, progress: newProgress()}
	switch {
	case o.devices:
		return report(stderr, listDevices(stdout))
	case o.child != "":
		return report(stderr, runChild(stdout, o.child, cfg))
	}
	rep, failures, err := runParent(ctx, o, cfg)
	cfg.progress.Done()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := writeReport(stdout, o.format, rep); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for path := range strings.SplitSeq(o.plotPath, ",") {
		if path == "" {
			continue
		}
		if err := WritePlot(path, rep); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if len(failures) > 0 {
		fmt.Fprintln(stderr, "vkbench: result checks failed:")
		for _, f := range failures {
			fmt.Fprintf(stderr, "  - %s\n", f)
		}
		return 1
	}
	return 0
}

func report(stderr io.Writer, err error) int {
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func writeReport(w io.Writer, format string, rep *Report) error {
	switch format {
	case "json":
		return WriteJSON(w, rep)
	case "bench":
		return WriteBench(w, rep)
	}
	return WriteTable(w, rep)
}

// listDevices prints every device with what tells them apart.
func listDevices(w io.Writer) error {
	infos, err := vkc.Devices()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tNAME\tTYPE\tDRIVER\tAPI\tMEMORY")
	for _, d := range infos {
		memory := "-"
		if b := d.DeviceLocalBytes(); b > 0 {
			memory = formatBytes(int64(min(b, 1<<62)))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", d.Index, d.Name, d.Type, d.DriverVersion, d.APIVersion, memory)
	}
	return tw.Flush()
}

// runChild runs one suite in this process and prints its result as JSON.
func runChild(stdout io.Writer, suite string, cfg settings) error {
	res, err := suiteRunners[suite](cfg)
	cfg.progress.Done()
	if err != nil {
		return fmt.Errorf("vkbench: suite %s: %w", suite, err)
	}
	return json.NewEncoder(stdout).Encode(res)
}

// suiteEnv is the environment a suite's child runs with: dispatch gets
// LP_NUM_THREADS=0 unless the user set it, the others the driver's default.
func suiteEnv(suite string) []string {
	env := os.Environ()
	if _, set := os.LookupEnv("LP_NUM_THREADS"); suite == "dispatch" && !set {
		env = append(env, "LP_NUM_THREADS=0")
	}
	return env
}

// childArgs passes the settings on to a child.
func childArgs(suite string, cfg settings) []string {
	args := []string{"-child", suite, "-count", strconv.Itoa(cfg.count), "-time", cfg.minTime.String(), "-floor=false"}
	if cfg.device != "" {
		args = append(args, "-device", cfg.device)
	}
	if cfg.validate {
		args = append(args, "-validate")
	}
	if cfg.quick {
		args = append(args, "-quick")
	}
	return args
}

// runSuiteProcess re-executes this program for one suite and decodes what
// the child printed.
func runSuiteProcess(ctx context.Context, exe, suite string, cfg settings) (*suiteResult, error) {
	cmd := exec.CommandContext(ctx, exe, childArgs(suite, cfg)...)
	cmd.Env = suiteEnv(suite)
	var stdout bytes.Buffer
	stderr := &tailBuffer{limit: stderrTailBytes}
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(os.Stderr, stderr)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v: %s", ErrChild, suite, err, strings.TrimSpace(stderr.String()))
	}
	var res suiteResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("%w: %s: output is not a result: %v", ErrChild, suite, err)
	}
	return &res, nil
}

// runParent runs each selected suite in a child and the floor, and merges
// everything into one report. failures are the result checks that failed.
func runParent(ctx context.Context, o options, cfg settings) (*Report, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("vkbench: finding this program to run the suites: %w", err)
	}
	rep := &Report{Started: time.Now().UTC().Truncate(time.Second)}
	var failures []string
	for _, suite := range o.suites {
		cfg.progress.Printf("%s: starting", suite)
		res, err := runSuiteProcess(ctx, exe, suite, cfg)
		if err != nil {
			return nil, nil, err
		}
		rep.Device = res.Device
		rep.Figures = append(rep.Figures, res.Figures...)
		rep.Notes = append(rep.Notes, res.Notes...)
		failures = append(failures, res.Failures...)
	}
	if _, set := os.LookupEnv("LP_NUM_THREADS"); !set && isLavapipe(rep.Device.Name) {
		rep.Notes = append(rep.Notes, "lavapipe: dispatch ran with LP_NUM_THREADS=0 (work on the submitting thread); transfer, matmul and alloc with the driver's default threads (see ENV)")
	}
	floorOK := false
	if o.floor {
		cfg.progress.Printf("floor: building and running")
		figs, notes := floorFigures(ctx, o, rep.Device)
		rep.Figures = append(rep.Figures, figs...)
		rep.Notes = append(rep.Notes, notes...)
		floorOK = len(figs) > 0
	}
	ratios, notes := computeRatios(rep.Figures, floorOK)
	rep.Ratios = ratios
	rep.Notes = append(rep.Notes, notes...)
	return rep, failures, nil
}

// floorFigures runs the plain-C floor twice: with LP_NUM_THREADS=0 for its
// dispatch figures, and with the driver's threads for bandwidth and sgemm
// (its dispatch figures from that run are dropped). A floor that cannot run
// gives a note, not a failure.
func floorFigures(ctx context.Context, o options, device DeviceDesc) ([]Figure, []string) {
	wants := func(s string) bool { return slices.Contains(o.suites, s) }
	common := []string{"RAWVK_REPS=" + strconv.Itoa(o.count)}
	if o.validate {
		common = append(common, "VALIDATE=1")
	}
	var figs []Figure
	var notes []string
	check := func(fr *FloorResult, err error) bool {
		switch {
		case err != nil:
			notes = append(notes, fmt.Sprintf("floor skipped, no floor ratios: %v", err))
			return false
		case fr.VerifyMismatches > 0 || fr.ValidationErrors > 0:
			notes = append(notes, fmt.Sprintf("floor failed its own checks (%d mismatches, %d validation errors): its figures are left out", fr.VerifyMismatches, fr.ValidationErrors))
			return false
		case fr.Device != device.Name && !strings.HasPrefix(fr.Device, device.Name+" "):
			notes = append(notes, fmt.Sprintf("floor ran on %q, not on %q: its figures are left out", fr.Device, device.Name))
			return false
		}
		return true
	}
	if wants("dispatch") {
		ks := dispatchKs(o.quick)
		threads := "0"
		if v, set := os.LookupEnv("LP_NUM_THREADS"); set {
			threads = v
		}
		env := append(slices.Clone(common), "RAWVK_SKIP_BW=1", "RAWVK_SKIP_SGEMM=1", "LP_NUM_THREADS="+threads,
			"RAWVK_K="+strconv.Itoa(ks[len(ks)-1]))
		fr, err := RunFloor(ctx, env)
		if !check(fr, err) {
			return nil, notes
		}
		figs = append(figs, fr.Figures(map[string]string{"LP_NUM_THREADS": threads})...)
	}
	if wants("transfer") || wants("matmul") {
		env := append(slices.Clone(common), "RAWVK_K=10")
		if !wants("transfer") {
			env = append(env, "RAWVK_SKIP_BW=1")
		}
		if !wants("matmul") {
			env = append(env, "RAWVK_SKIP_SGEMM=1")
		}
		threads := "default"
		if v, set := os.LookupEnv("LP_NUM_THREADS"); set {
			threads = v
		}
		fr, err := RunFloor(ctx, env)
		if !check(fr, err) {
			return nil, notes
		}
		for _, f := range fr.Figures(map[string]string{"LP_NUM_THREADS": threads}) {
			if f.Suite != "dispatch" {
				figs = append(figs, f)
			}
		}
	}
	return figs, notes
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

// transferRatioMinBytes is the smallest size at which transfer speed is
// compared with memcpy: below it Go's copy still runs largely from cache
// (on this project's machines memcpy holds ~35 GB/s up to 16 MiB and drops
// to DRAM speed only at 64 MiB), while the driver's copies use glibc's
// memcpy, whose non-temporal stores bypass the cache, so the ratio would
// compare cache with DRAM rather than vkc with the host.
const transferRatioMinBytes = 64 << 20

// computeRatios derives the verdicts from the figures. Every ratio is
// written so that smaller is better and the limit is the most allowed:
// times divided by times, or a reference speed divided by vkc's speed.
func computeRatios(figs []Figure, floorOK bool) ([]Ratio, []string) {
	idx := indexFigures(figs)
	var ratios []Ratio
	var notes []string
	add := func(suite, name string, params map[string]int64, num, den string, limit float64) {
		n, okN := idx[figureKey(suite, num, params)]
		d, okD := idx[figureKey(suite, den, params)]
		if okN && okD {
			ratios = append(ratios, NewRatio(suite, name, params, n, d, limit))
		}
	}
	var ks, sizes []int64
	for _, f := range figs {
		switch {
		case f.Suite == "dispatch" && f.Name == "replay":
			ks = append(ks, f.Params["k"])
		case f.Suite == "transfer" && f.Name == "memcpy":
			sizes = append(sizes, f.Params["bytes"])
		}
	}
	for _, k := range ks {
		p := map[string]int64{"k": k}
		// Captured work must never lose to one submit per launch, and adds
		// little to the same command buffer replayed on the raw path.
		add("dispatch", "replay/eager", p, "replay", "eager", 1)
		add("dispatch", "replay/raw", p, "replay", "raw", 1.15)
	}
	if len(ks) > 0 {
		notes = append(notes, "dispatch: replay/eager <= 1 says a captured graph beats one submit per launch; its inverse is the capture window's speed-up")
	}
	if floorOK {
		for _, f := range figs {
			if f.Suite != "dispatch" || f.Name != "floor-replay" {
				continue
			}
			p := f.Params
			add("dispatch", "replay/floor-replay", p, "replay", "floor-replay", 1.15)
			add("dispatch", "eager-batched/floor-batched", p, "eager-batched", "floor-batched", 1.5)
			add("dispatch", "eager/floor-eager", p, "eager", "floor-eager", 1.3)
			add("dispatch", "raw/floor-replay", p, "raw", "floor-replay", 1.1)
		}
		add("matmul", "floor-naive/matmul", map[string]int64{"m": 512, "n": 512, "k": 512}, "floor-naive", "matmul", 1.0/3)
		if _, ok := idx[figureKey("matmul", "floor-naive", map[string]int64{"m": 512, "n": 512, "k": 512})]; ok {
			notes = append(notes, "matmul: floor-naive/matmul <= 0.333 means vkc's matmul is at least 3x the floor's naive sgemm at 512")
		}
		// The floor copies 64 MiB with glibc's memcpy and with
		// vkCmdCopyBuffer (which lavapipe runs on glibc's memcpy); Go's copy,
		// the "memcpy" figure, is often faster than both on large sizes.
		p64 := map[string]int64{"bytes": 64 << 20}
		add("transfer", "floor-memcpy/copy", p64, "floor-memcpy", "copy", 1/0.85)
		add("transfer", "floor-copy-buffer/copy", p64, "floor-copy-buffer", "copy", 1.1)
		add("transfer", "floor-memcpy/upload", p64, "floor-memcpy", "upload", 1.25)
		add("transfer", "floor-memcpy/download", p64, "floor-memcpy", "download", 1.25)
		if _, ok := idx[figureKey("transfer", "floor-memcpy", p64)]; ok {
			notes = append(notes, "transfer: floor-memcpy/copy compares the device copy with the floor's C memcpy (glibc, which lavapipe's vkCmdCopyBuffer itself calls); floor-copy-buffer/copy with the floor's raw vkCmdCopyBuffer")
		}
	}
	compared := false
	for _, size := range sizes {
		if size < transferRatioMinBytes {
			continue
		}
		p := map[string]int64{"bytes": size}
		add("transfer", "memcpy/upload", p, "memcpy", "upload", 1.25)
		add("transfer", "memcpy/download", p, "memcpy", "download", 1.25)
		add("transfer", "memcpy/copy", p, "memcpy", "copy", 1/0.85)
		compared = true
	}
	if compared {
		notes = append(notes, fmt.Sprintf("transfer: compared with memcpy from %s up (smaller copies run from cache); memcpy/x <= 1.25 is x at >= 80%% of memcpy, memcpy/copy <= 1.176 is copy at >= 85%%", formatBytes(transferRatioMinBytes)))
	}
	return ratios, notes
}
