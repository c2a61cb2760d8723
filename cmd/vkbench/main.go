// Command vkbench measures vkc on a Vulkan device: per-launch cost of eager,
// batched and captured work, transfer bandwidth, matmul throughput and
// allocation rates, each beside the same work done by a plain-C Vulkan
// program built into vkbench (the C baseline, figures named "c-…"; the alloc
// suite has none) and, for dispatch and allocation, beside a raw path on
// vkc's own vk package. Its ratios compare vkc with the C baseline measured
// in the same run on the same device (the dispatch chains against C that
// binds per launch, with limits, and against C that binds once, "c-*-bound",
// informational), except replay-dynamic/replay (vkc against itself), the
// matmul targets (a shape's rate against the 1024 square's, or against the
// C baseline's memcpy of 64 MiB in the transfer suite) and, with -floor,
// four dispatch ratios against the external reference's figures.
//
// Each suite runs in its own child process, because lavapipe reads
// LP_NUM_THREADS once at process start and the dispatch figures need it at 0
// while bandwidth and matmul need the driver's threads.
//
// Exit status: 0 when every suite ran and every result check passed (a
// ratio over its limit does not count), 1 when a check or a run failed, 2
// for a usage error (found before anything runs), 130 when SIGINT or
// SIGTERM stopped it: the running suite's child and any -floor build are
// killed and waited for, and nothing is reported, not even what earlier
// suites measured.
//
// Usage:
//
//	vkbench [-suite dispatch|transfer|matmul|alloc|startup|kernels|decode|all] [-format table|json|bench]
//	        [-plot FILE.svg|FILE.png] [-device INDEX|NAME] [-validate]
//	        [-count N] [-time DURATION] [-quick] [-floor DIR]
//	vkbench -devices
//
// Install it with
//
//	go install github.com/vkcompute/vkc/cmd/vkbench@latest
//
// (cgo, the Vulkan headers and, to run it, the Vulkan loader and a driver).
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
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	"startup":  runStartup,
	"kernels":  runKernels,
	"decode":   runDecode,
}

// options is the parsed command line.
type options struct {
	suites    []string
	format    string
	plotPaths []string
	device    string
	devices   bool
	validate  bool
	count     int
	minTime   time.Duration
	quick     bool
	floorDir  string
	child     string // internal: run this one suite and print its result as JSON
	probe     string // internal: one startup probe, vkc's pipeline cache "on" or "off"
}

// usageHeader opens vkbench -h, before the flags.
const usageHeader = `Usage: vkbench [flags]
       vkbench -devices

vkbench measures what vkc costs on a Vulkan device against a plain-C Vulkan
program built into it (the C baseline, figures named "c-..."), in one run on
the same device. Suites: dispatch (a chain of K dependent 256-element axpy
launches: eager, batched, captured and replayed; the C chains bind the
pipeline and set before every launch, c-*-bound ones once per command
buffer), transfer (upload, download, device copy, memcpy), matmul, alloc
(vkc against the raw vk path; no C baseline), startup (Open plus a first
Matmul in a fresh process, with cold and warm caches), kernels (WGSL compiled
at run time: compile times, and a reduction's device time against the same
GLSL compiled by glslc), decode (a step of a small transformer decoder
built from package ops, eager and captured, checked against a float64
model). Ratios compare vkc with the C baseline
(replay-dynamic/replay: vkc with itself; x/floor-y: with -floor's
reference; compile-x/T: a compile time over its target T; reduce-wgsl/y:
WGSL's module over another; x[place]/y: a reference read at another shape
or in another suite, such as the 1024 square's GFLOP/s or transfer's
c-memcpy at 64 MiB, over a matmul shape's); smaller is better, LIMIT is the most allowed, INFO marks a ratio
shown without a limit. Neither OVER LIMIT nor INFO changes the exit status:
only failed result checks and failed runs exit 1; a usage error exits 2
before anything runs. SIGINT (Ctrl-C) or SIGTERM stops the running suite
and any -floor build, waits for them to end, prints no report (only a line
on stderr) and exits 130; a second one ends vkbench at once.

Flags:
`

// newFlagSet defines every flag of vkbench into o; -h prints them all.
func newFlagSet(o *options, suite, plots *string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("vkbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	fs.StringVar(suite, "suite", "all", "suites to run, comma-separated: dispatch, transfer, matmul, alloc, startup, kernels, decode, or all; each runs once, in that order")
	fs.StringVar(&o.format, "format", "table", "output format: table (for people), json (one document with stable field names) or bench (Go benchmark lines for benchstat, one per timed run)")
	fs.StringVar(plots, "plot", "", "also draw the dispatch and transfer figures into `FILE` (.svg or .png, checked before anything runs; several, comma-separated); with neither suite's figures there is nothing to draw, which is a note, not a failure")
	fs.StringVar(&o.device, "device", "", "device by `INDEX or NAME` substring, as -devices lists them (default: $VKC_DEVICE, else the best)")
	fs.BoolVar(&o.devices, "devices", false, "list the Vulkan devices and exit")
	fs.BoolVar(&o.validate, "validate", false, "run vkc and the C baseline with the Khronos validation layer (slow; any message fails the run)")
	fs.IntVar(&o.count, "count", 5, "timed runs per figure; the figure is their median, and -format json and bench also carry each run")
	fs.DurationVar(&o.minTime, "time", 200*time.Millisecond, "minimum `duration` of one timed run (the operation repeats until it has passed)")
	fs.BoolVar(&o.quick, "quick", false, "tiny sizes (K up to 10, 1 MiB transfers, 64x64 matmul, a tiny decoder), with ops.Matmul's kernels chosen by its fixed rule instead of timed, to check that everything runs")
	fs.StringVar(&o.floorDir, "floor", "", "also run an external reference from `DIR`: its build.sh must build and run a program printing RAWVK result lines; its figures (floor-...) are shown beside the others and four dispatch ratios (eager, eager-batched, replay, record over floor-...) compare vkc with them; a reference that cannot build or run, fails its own checks or prints a figure that is not finite and positive is left out with a note")
	fs.StringVar(&o.child, "child", "", "internal: run one `suite` in this process and print its result as JSON (vkbench runs each suite this way)")
	fs.StringVar(&o.probe, "startup-probe", "", "internal: time Open and a first Matmul in this process, with vkc's pipeline cache `on or off`, and print the time as JSON (the startup suite runs each probe this way)")
	return fs
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var suite, plots string
	fs := newFlagSet(&o, &suite, &plots, stderr)
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", ErrUsage, err) // keeps flag.ErrHelp visible to run
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	suites, err := parseSuites(suite)
	if err != nil {
		return o, err
	}
	o.suites = suites
	for path := range strings.SplitSeq(plots, ",") {
		if path == "" {
			continue
		}
		if err := checkPlotPath(path); err != nil {
			return o, fmt.Errorf("%w: -plot: %w", ErrUsage, err)
		}
		o.plotPaths = append(o.plotPaths, path)
	}
	if o.probe != "" && o.probe != "on" && o.probe != "off" {
		return o, fmt.Errorf("%w: -startup-probe %q: on or off", ErrUsage, o.probe)
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

// parseSuites reads -suite: names separated by commas, "all" standing for
// every suite. Each suite runs once however often it is named, in
// suiteOrder, the order the report prints them in.
func parseSuites(list string) ([]string, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		if _, ok := suiteRunners[s]; !ok && s != "all" {
			return nil, fmt.Errorf("%w: unknown suite %q (dispatch, transfer, matmul, alloc, startup, kernels, decode or all)", ErrUsage, s)
		}
		want[s] = true
	}
	var suites []string
	for _, s := range suiteOrder {
		if want[s] || want["all"] {
			suites = append(suites, s)
		}
	}
	return suites, nil
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// exitInterrupted is vkbench's exit status when SIGINT or SIGTERM stopped
// it: 128 + SIGINT's number, what a shell reports for a command Ctrl-C
// ended.
const exitInterrupted = 130

// run is main with its streams passed in; it returns the exit status:
// 0 success, 1 a failed check or run, 2 a usage error, 130 (exitInterrupted)
// when SIGINT or SIGTERM, or the end of ctx, stopped the suites. Only the
// parent catches the signals; a suite child (-child) and -devices keep the
// default, which ends them.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0 // -h asked for the usage, which is printed
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg := settings{count: o.count, minTime: o.minTime, quick: o.quick, device: o.device, validate: o.validate, progress: newProgress()}
	switch {
	case o.devices:
		return report(stderr, listDevices(stdout))
	case o.child != "":
		return report(stderr, runChild(stdout, o.child, cfg))
	case o.probe != "":
		return report(stderr, startupProbe(stdout, o.probe, cfg))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second interrupt ends vkbench at once
	}()
	rep, failures, err := runParent(ctx, o, cfg)
	cfg.progress.Done()
	if ctx.Err() != nil {
		// The suite child and a -floor build were killed and waited for
		// (exec.CommandContext); what was measured before is dropped, so
		// that no partial report passes for a result.
		fmt.Fprintf(stderr, "vkbench: %v: stopped, nothing reported\n", context.Cause(ctx))
		return exitInterrupted
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return finish(stdout, stderr, o, rep, failures)
}

// finish draws the plots and writes the report, then says what failed. A
// plot with nothing to draw is a note in the report; a plot that cannot be
// written is an error, printed after the report.
func finish(stdout, stderr io.Writer, o options, rep *Report, failures []string) int {
	if err := rep.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	status := 0
	var plotErrs []error
	for _, path := range o.plotPaths {
		err := WritePlot(path, rep)
		switch {
		case errors.Is(err, ErrNothingToPlot):
			rep.Notes = append(rep.Notes, fmt.Sprintf("-plot: nothing to plot, %s not written (a plot shows dispatch figures by K and transfer figures by size)", path))
		case err != nil:
			plotErrs = append(plotErrs, err)
		}
	}
	if err := writeReport(stdout, o.format, rep); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, err := range plotErrs {
		fmt.Fprintln(stderr, err)
		status = 1
	}
	if len(failures) > 0 {
		fmt.Fprintln(stderr, "vkbench: result checks failed:")
		for _, f := range failures {
			fmt.Fprintf(stderr, "  - %s\n", f)
		}
		status = 1
	}
	return status
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
	args := []string{"-child", suite, "-count", strconv.Itoa(cfg.count), "-time", cfg.minTime.String()}
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
// the child printed. The child's stderr is passed on as it comes, so its
// messages are printed once, there, and not repeated in the error.
func runSuiteProcess(ctx context.Context, exe, suite string, cfg settings) (*suiteResult, error) {
	cmd := exec.CommandContext(ctx, exe, childArgs(suite, cfg)...)
	cmd.WaitDelay = killWaitDelay
	cmd.Env = suiteEnv(suite)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	// Through a pipe rather than the terminal itself: a child that found a
	// terminal would draw a progress line over the parent's.
	cmd.Stderr = io.MultiWriter(os.Stderr)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrChild, suite, err)
	}
	var res suiteResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("%w: %s: output is not a result: %v", ErrChild, suite, err)
	}
	return &res, nil
}

// lavapipeThreadsNote says which of the suites that ran had
// LP_NUM_THREADS=0 (dispatch, see suiteEnv) and which the driver's threads,
// when the user left it unset; with no dispatch suite there is nothing to
// tell apart, and it returns "".
func lavapipeThreadsNote(suites []string) string {
	if !slices.Contains(suites, "dispatch") {
		return ""
	}
	others := slices.DeleteFunc(slices.Clone(suites), func(s string) bool { return s == "dispatch" })
	note := "lavapipe: dispatch ran with LP_NUM_THREADS=0 (work on the submitting thread)"
	switch len(others) {
	case 0:
	case 1:
		note += "; " + others[0] + " with the driver's default threads"
	default:
		note += "; " + strings.Join(others[:len(others)-1], ", ") + " and " + others[len(others)-1] + " with the driver's default threads"
	}
	return note + " (see ENV)"
}

// runParent runs each selected suite in a child (each measures vkc and the
// C baseline), the external reference when -floor names one, and merges
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
		if note := lavapipeThreadsNote(o.suites); note != "" {
			rep.Notes = append(rep.Notes, note)
		}
	}
	if o.floorDir != "" {
		cfg.progress.Printf("floor: building and running %s", o.floorDir)
		figs, notes := floorFigures(ctx, o, rep.Device)
		rep.Figures = append(rep.Figures, figs...)
		rep.Notes = append(rep.Notes, notes...)
	}
	ratios, notes := computeRatios(rep.Figures)
	rep.Ratios = ratios
	rep.Notes = append(rep.Notes, notes...)
	if cfg.quick {
		rep.Notes = append(rep.Notes, "-quick: tiny sizes, to check that everything runs; the limits are set for the full sizes, where the work outweighs fixed costs")
	}
	return rep, failures, nil
}

// floorFigures runs the external reference of -floor twice: with
// LP_NUM_THREADS=0 for its dispatch figures, and with the driver's threads
// for bandwidth and sgemm (its dispatch figures from that run are dropped).
// A reference that cannot run, fails its own checks or reports a figure
// that is not finite and positive gives a note, not a failure, and adds no
// figure.
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
			notes = append(notes, fmt.Sprintf("floor skipped: %v", err))
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
		fr, err := RunFloor(ctx, o.floorDir, env)
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
		fr, err := RunFloor(ctx, o.floorDir, env)
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
