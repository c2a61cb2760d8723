package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrFloorUnavailable means the external reference given with -floor cannot
// be built here: its build.sh, a shell, glslc or a C compiler is missing.
// vkbench reports everything else and says why in a note rather than fail.
var ErrFloorUnavailable = errors.New("vkbench: floor unavailable")

// ErrFloorFailed means the external reference failed to build or run (a
// Vulkan error, a result mismatch, a validation error).
var ErrFloorFailed = errors.New("vkbench: floor failed")

// ErrFloorOutput means the external reference's output is not in the RAWVK
// line format: a required result line is missing, one does not parse, or
// it reports a time or rate that is not finite and positive.
var ErrFloorOutput = errors.New("vkbench: unexpected floor output")

// FloorRate is one throughput the floor measured: the best of its timed runs
// and their median. vkc's figures are medians, so compare against Median.
type FloorRate struct {
	Best   float64 `json:"best"`
	Median float64 `json:"median"`
	// Mismatch is true when the floor's own check of the result failed; the
	// figure then measures wrong work and must not be compared.
	Mismatch bool `json:"mismatch,omitempty"`
}

// FloorBandwidth holds the floor's 64 MiB copy figures in GB/s copied.
type FloorBandwidth struct {
	Bytes       int64     `json:"bytes"`
	CopyBuffer  FloorRate `json:"copy_buffer"`   // vkCmdCopyBuffer
	ComputeCopy FloorRate `json:"compute_copy"`  // a vec4 copy shader
	MemcpyHeap  FloorRate `json:"memcpy_malloc"` // memcpy between malloc'd buffers
	MemcpyMap   FloorRate `json:"memcpy_mapped"` // memcpy between mapped VkDeviceMemory
}

// FloorSgemm holds the floor's square sgemm figures in GFLOP/s.
type FloorSgemm struct {
	Size  int64     `json:"size"`
	Naive FloorRate `json:"naive"`
	Tiled FloorRate `json:"tiled"`
}

// FloorResult is what one run of the floor (rawvk) measured. Per-dispatch
// times are medians over Reps repetitions of K dispatches. Bandwidth and Sgemm
// are nil when the run skipped them (RAWVK_SKIP_BW, RAWVK_SKIP_SGEMM).
type FloorResult struct {
	Device string `json:"device"`
	K      int64  `json:"k"`
	Reps   int    `json:"reps"`

	EagerPerDispatchUs         float64 `json:"eager_per_dispatch_us"`
	BatchedPerDispatchUs       float64 `json:"batched_per_dispatch_us"`
	BatchedRecordPerDispatchUs float64 `json:"batched_record_per_dispatch_us"`
	ReplayPerDispatchUs        float64 `json:"replay_per_dispatch_us"`

	Bandwidth *FloorBandwidth `json:"bandwidth,omitempty"`
	Sgemm     *FloorSgemm     `json:"sgemm,omitempty"`

	VerifyMismatches   int `json:"verify_mismatches"`
	ValidationErrors   int `json:"validation_errors"`
	ValidationWarnings int `json:"validation_warnings"`
}

// Timed runs behind rawvk.c's medians (its IT constants), so that floor
// figures carry their sample counts like vkc's own.
const (
	floorBandwidthSamples = 8
	floorSgemmSamples     = 5
)

// Figures turns the floor's results into report figures named "floor-…", so
// they sit next to vkc's in the same suites. env is recorded on every figure.
func (fr *FloorResult) Figures(env map[string]string) []Figure {
	k := map[string]int64{"k": fr.K}
	figs := []Figure{
		{Suite: "dispatch", Name: "floor-eager", Params: k, Value: fr.EagerPerDispatchUs * 1e3, Unit: "ns/launch", Samples: fr.Reps, Env: env},
		{Suite: "dispatch", Name: "floor-batched", Params: k, Value: fr.BatchedPerDispatchUs * 1e3, Unit: "ns/launch", Samples: fr.Reps, Env: env},
		{Suite: "dispatch", Name: "floor-batched-record", Params: k, Value: fr.BatchedRecordPerDispatchUs * 1e3, Unit: "ns/launch", Samples: fr.Reps, Env: env},
		{Suite: "dispatch", Name: "floor-replay", Params: k, Value: fr.ReplayPerDispatchUs * 1e3, Unit: "ns/launch", Samples: fr.Reps, Env: env},
	}
	if bw := fr.Bandwidth; bw != nil {
		size := map[string]int64{"bytes": bw.Bytes}
		for _, r := range []struct {
			name string
			rate FloorRate
		}{{"floor-copy-buffer", bw.CopyBuffer}, {"floor-compute-copy", bw.ComputeCopy}, {"floor-memcpy", bw.MemcpyHeap}, {"floor-memcpy-mapped", bw.MemcpyMap}} {
			figs = append(figs, Figure{Suite: "transfer", Name: r.name, Params: size, Value: r.rate.Median, Unit: "GB/s", Samples: floorBandwidthSamples, Env: env})
		}
	}
	if sg := fr.Sgemm; sg != nil {
		shape := map[string]int64{"m": sg.Size, "n": sg.Size, "k": sg.Size}
		figs = append(figs,
			Figure{Suite: "matmul", Name: "floor-naive", Params: shape, Value: sg.Naive.Median, Unit: "GFLOP/s", Samples: floorSgemmSamples, Env: env},
			Figure{Suite: "matmul", Name: "floor-tiled", Params: shape, Value: sg.Tiled.Median, Unit: "GFLOP/s", Samples: floorSgemmSamples, Env: env},
		)
	}
	return figs
}

// The formats below follow rawvk.c's printf calls; a change there must
// change these, and the fixture test says so when they drift.
var (
	floorDeviceLine   = regexp.MustCompile(`^RAWVK device: (.*) validate=(\d+) K=(\d+) n=(\d+) reps=(\d+)$`)
	floorAxpyLine     = regexp.MustCompile(`^RAWVK RESULT axpy K=(\d+) n=(\d+) \(median of (\d+) reps; min in brackets\)$`)
	floorDispatchLine = regexp.MustCompile(`^RAWVK RESULT (eager|batched|replay)\s+iter_ms=\s*(\S+) \[\s*(\S+)\]\s+per_dispatch_us=\s*(\S+)(?:\s+record_ms=(\S+) \(record_per_dispatch_us=(\S+)\))?$`)
	floorRatiosLine   = regexp.MustCompile(`^RAWVK RESULT ratios `)
	floorBwLine       = regexp.MustCompile(`^RAWVK RESULT bw (\S+) (\d+)MiB(?: \(([^)]*)\))?: best (\S+) ms = (\S+) GB/s copied \(median (\S+) GB/s\)( MISMATCH)?(?: \[chk -?\d+\])?$`)
	floorSgemmLine    = regexp.MustCompile(`^RAWVK RESULT sgemm (\S+)\s+(\d+)x(\d+): best (\S+) ms = (\S+) GFLOP/s \(median (\S+)\)( MISMATCH)?$`)
	floorVerifyLine   = regexp.MustCompile(`^RAWVK verify_mismatches=(\d+) validation_errors=(\d+) validation_warnings=(\d+)$`)
)

// ParseFloor reads the floor's standard output and picks out its RESULT
// lines. It insists on the device line, all three dispatch results and the
// closing verify line (which proves the run finished); bandwidth and sgemm
// are optional but, when present, complete. An unknown RESULT line is an
// error, so a format change in rawvk.c cannot silently drop a figure.
func ParseFloor(r io.Reader) (*FloorResult, error) {
	fr := &FloorResult{}
	p := floorParser{res: fr}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimRight(sc.Text(), " \r")
		if err := p.line(line); err != nil {
			return nil, fmt.Errorf("%w: line %d %q: %v", ErrFloorOutput, lineNo, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: reading: %v", ErrFloorOutput, err)
	}
	if err := p.complete(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFloorOutput, err)
	}
	return fr, nil
}

type floorParser struct {
	res                  *FloorResult
	sawDevice, sawVerify bool
	dispatch             map[string]bool
	bw                   map[string]bool
	sgemm                map[string]bool
	sgemmSizes           map[int64]bool
	firstNumberErr       error
	bandwidthBytesSet    bool
}

// num parses one figure, remembering the first failure so that a line's
// fields are read in one pass and checked once. Every figure the reference
// prints is a time or a rate, so one that is not finite and positive
// (0.000, a negative, inf, nan) is a failure too: it would make an
// infinite, negative or meaningless ratio.
func (p *floorParser) num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err == nil && !(v > 0 && !math.IsInf(v, 0)) {
		err = errors.New("not a finite positive figure")
	}
	if err != nil && p.firstNumberErr == nil {
		p.firstNumberErr = fmt.Errorf("number %q: %w", s, err)
	}
	return v
}

func (p *floorParser) integer(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.firstNumberErr == nil {
		p.firstNumberErr = fmt.Errorf("integer %q: %w", s, err)
	}
	return v
}

func (p *floorParser) rate(best, median, mismatch string) FloorRate {
	return FloorRate{Best: p.num(best), Median: p.num(median), Mismatch: mismatch != ""}
}

// line reads one line of the reference's output. A line that breaks the
// format fails at once; otherwise the first unreadable number on it does.
func (p *floorParser) line(line string) error {
	p.firstNumberErr = nil
	var err error
	switch {
	case !strings.HasPrefix(line, "RAWVK "):
		return nil // "built …" and anything else the build prints
	case floorDeviceLine.MatchString(line):
		p.deviceLine(floorDeviceLine.FindStringSubmatch(line))
	case floorAxpyLine.MatchString(line), floorRatiosLine.MatchString(line):
		// Restates K and reps, or ratios of figures parsed from other lines.
	case floorDispatchLine.MatchString(line):
		err = p.dispatchLine(floorDispatchLine.FindStringSubmatch(line))
	case floorBwLine.MatchString(line):
		err = p.bandwidthLine(floorBwLine.FindStringSubmatch(line))
	case floorSgemmLine.MatchString(line):
		err = p.sgemmLine(floorSgemmLine.FindStringSubmatch(line))
	case floorVerifyLine.MatchString(line):
		p.verifyLine(floorVerifyLine.FindStringSubmatch(line))
	case strings.HasPrefix(line, "RAWVK RESULT"):
		return errors.New("unknown result line")
	}
	if err != nil {
		return err
	}
	return p.firstNumberErr
}

func (p *floorParser) deviceLine(m []string) {
	p.res.Device = m[1]
	p.res.K = p.integer(m[3])
	p.res.Reps = int(p.integer(m[5]))
	p.sawDevice = true
}

func (p *floorParser) dispatchLine(m []string) error {
	fr := p.res
	perDispatch := p.num(m[4])
	switch m[1] {
	case "eager":
		fr.EagerPerDispatchUs = perDispatch
	case "batched":
		if m[6] == "" {
			return errors.New("batched result without record_per_dispatch_us")
		}
		fr.BatchedPerDispatchUs = perDispatch
		fr.BatchedRecordPerDispatchUs = p.num(m[6])
	case "replay":
		fr.ReplayPerDispatchUs = perDispatch
	}
	if p.dispatch == nil {
		p.dispatch = map[string]bool{}
	}
	p.dispatch[m[1]] = true
	return nil
}

// bandwidthLine reads one copy figure; every one must be of the same size.
func (p *floorParser) bandwidthLine(m []string) error {
	fr := p.res
	if fr.Bandwidth == nil {
		fr.Bandwidth = &FloorBandwidth{}
		p.bw = map[string]bool{}
	}
	size := p.integer(m[2]) << 20
	if p.bandwidthBytesSet && size != fr.Bandwidth.Bytes {
		return fmt.Errorf("copy size %d differs from %d", size, fr.Bandwidth.Bytes)
	}
	fr.Bandwidth.Bytes, p.bandwidthBytesSet = size, true
	rate := p.rate(m[5], m[6], m[7])
	key := m[1] + " " + m[3]
	switch key {
	case "vkCmdCopyBuffer ":
		fr.Bandwidth.CopyBuffer = rate
	case "compute-copy(vec4) ":
		fr.Bandwidth.ComputeCopy = rate
	case "memcpy malloc":
		fr.Bandwidth.MemcpyHeap = rate
	case "memcpy mapped VkDeviceMemory":
		fr.Bandwidth.MemcpyMap = rate
	default:
		return fmt.Errorf("unknown bandwidth figure %q", strings.TrimSpace(key))
	}
	p.bw[key] = true
	return nil
}

// sgemmLine reads one kernel's figure; the shapes must be square.
func (p *floorParser) sgemmLine(m []string) error {
	fr := p.res
	if fr.Sgemm == nil {
		fr.Sgemm = &FloorSgemm{}
		p.sgemm = map[string]bool{}
		p.sgemmSizes = map[int64]bool{}
	}
	rows, cols := p.integer(m[2]), p.integer(m[3])
	if rows != cols {
		return fmt.Errorf("sgemm %dx%d is not square", rows, cols)
	}
	p.sgemmSizes[rows] = true
	fr.Sgemm.Size = rows
	rate := p.rate(m[5], m[6], m[7])
	switch m[1] {
	case "sgemm_naive.spv":
		fr.Sgemm.Naive = rate
	case "sgemm_tiled.spv":
		fr.Sgemm.Tiled = rate
	default:
		return fmt.Errorf("unknown sgemm kernel %q", m[1])
	}
	p.sgemm[m[1]] = true
	return nil
}

func (p *floorParser) verifyLine(m []string) {
	p.res.VerifyMismatches = int(p.integer(m[1]))
	p.res.ValidationErrors = int(p.integer(m[2]))
	p.res.ValidationWarnings = int(p.integer(m[3]))
	p.sawVerify = true
}

func (p *floorParser) complete() error {
	switch {
	case !p.sawDevice:
		return errors.New("no device line")
	case len(p.dispatch) != 3:
		return fmt.Errorf("dispatch results: got %d of eager, batched, replay", len(p.dispatch))
	case p.bw != nil && len(p.bw) != 4:
		return fmt.Errorf("bandwidth results: got %d of 4", len(p.bw))
	case p.sgemm != nil && len(p.sgemm) != 2:
		return fmt.Errorf("sgemm results: got %d of 2", len(p.sgemm))
	case p.sgemmSizes != nil && len(p.sgemmSizes) != 1:
		return errors.New("sgemm results of different sizes")
	case !p.sawVerify:
		return errors.New("no verify line: the run did not finish")
	}
	return nil
}

// checkFloorDir checks that dir holds the reference's build.sh and makes
// it absolute, so that the build runs there whatever the working directory.
func checkFloorDir(dir string) (string, error) {
	script := filepath.Join(dir, "build.sh")
	if info, err := os.Stat(script); err != nil || info.IsDir() {
		return "", fmt.Errorf("%w: no build.sh in %s", ErrFloorUnavailable, dir)
	}
	return filepath.Abs(dir)
}

// floorTools checks for what build.sh runs, so that a missing tool is named
// instead of surfacing as a shell error in the middle of a build.
func floorTools(getenv func(string) string) error {
	compiler := "cc"
	if words := strings.Fields(getenv("CC")); len(words) > 0 {
		compiler = words[0]
	}
	var missing []string
	for _, tool := range []string{"sh", "glslc", compiler} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not found on PATH (scripts/setup.sh installs them)", ErrFloorUnavailable, strings.Join(missing, ", "))
	}
	return nil
}

// stderrTailBytes is how much of a failed floor's stderr goes into the error.
const stderrTailBytes = 2048

// killWaitDelay bounds how long a killed process's output pipes are waited
// for, in case something it started outlived it and holds them open.
const killWaitDelay = 5 * time.Second

// RunFloor builds and runs the external reference in floorDir (its
// build.sh, with a fresh build directory in RAWVK_BUILD) and parses what it
// printed. env is added to the process environment; the reference reads
// RAWVK_K, RAWVK_REPS, RAWVK_SKIP_BW, RAWVK_SKIP_SGEMM, VALIDATE and
// LP_NUM_THREADS. Cancelling ctx kills it and, on Unix, every process it
// started, and RunFloor returns once they are gone.
func RunFloor(ctx context.Context, floorDir string, env []string) (*FloorResult, error) {
	dir, err := checkFloorDir(floorDir)
	if err != nil {
		return nil, err
	}
	if err := floorTools(envLookup(env)); err != nil {
		return nil, err
	}
	buildDir, err := os.MkdirTemp("", "vkbench-floor-")
	if err != nil {
		return nil, fmt.Errorf("%w: build directory: %v", ErrFloorUnavailable, err)
	}
	defer os.RemoveAll(buildDir)

	cmd := exec.CommandContext(ctx, "sh", filepath.Join(dir, "build.sh"))
	killGroupOnCancel(cmd)
	cmd.WaitDelay = killWaitDelay
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "RAWVK_BUILD="+buildDir), env...)
	var stdout bytes.Buffer
	stderr := &tailBuffer{limit: stderrTailBytes}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%w: %w", ErrFloorFailed, ctxErr)
		}
		return nil, fmt.Errorf("%w: %s: %v: %s", ErrFloorFailed, filepath.Join(dir, "build.sh"), err, strings.TrimSpace(stderr.String()))
	}
	return ParseFloor(&stdout)
}

// envLookup reads a variable as the floor will see it: the last setting in
// env wins over the process environment, as it does for exec.Cmd.
func envLookup(env []string) func(string) string {
	return func(key string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v
			}
		}
		return os.Getenv(key)
	}
}

// tailBuffer keeps the last limit bytes written to it: a failing build can
// print a lot, and the end is what explains it.
type tailBuffer struct {
	limit int
	buf   []byte
}

// Write keeps the last limit bytes of what was written so far.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept tail.
func (t *tailBuffer) String() string { return string(t.buf) }
