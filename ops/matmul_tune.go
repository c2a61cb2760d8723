package ops

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vkcompute/vkc"
)

// shapeClass is the key the tuner keeps a choice under: the element type,
// each size's power of two, the batch count's, whether M is dynamic, and
// which variants apply (so two layouts that admit different kernels are
// two classes).
func (p *problem) shapeClass() string {
	mask := 0
	for _, v := range p.candidates() {
		mask |= 1 << v
	}
	return fmt.Sprintf("%v m%d n%d k%d b%d dyn%t v%x", p.elem, bits.Len(uint(p.m)), bits.Len(uint(p.n)),
		bits.Len(uint(p.k)), bits.Len(uint(p.batches())), p.dynamic, mask)
}

// tunings are the measured choices of one device: in memory, and in a
// small JSON file beside the pipeline cache (when the device has one).
type tunings struct {
	mu      sync.Mutex
	path    string // "": not kept on disk
	choices map[string]string
}

// tuningFileVersion is written into the file; a file of another version
// is ignored (and replaced at the next save). Version 2 came with the
// texel variants: a shape class names its variants by their bits, which
// moved, so a version 1 class could stand for another set of variants.
// Version 3 came with texel's compiled-in epilogue and narrow build, which
// changed what its variants measure.
const tuningFileVersion = 3

type tuningFile struct {
	Version int               `json:"version"`
	Device  string            `json:"device"`
	Choices map[string]string `json:"choices"`
}

// newTunings is dev's tunings, read from its file. A file that cannot be
// read or parsed is ignored with one warning.
func newTunings(dev *vkc.Device) *tunings {
	t := &tunings{choices: map[string]string{}}
	if dir := dev.PipelineCacheDir(); dir != "" {
		t.path = filepath.Join(dir, tuningFileName(dev.Info()))
		t.load(deviceLabel(dev.Info()))
	}
	return t
}

// deviceLabel names a device and driver exactly enough that a choice
// measured on one is never used on another.
func deviceLabel(info vkc.DeviceInfo) string {
	return fmt.Sprintf("%s %04x:%04x driver %s", info.Name, info.VendorID, info.DeviceID, info.DriverVersion)
}

// tuningFileName is the file of a device's choices: its label's hash, so
// that two devices in one cache directory keep two files.
func tuningFileName(info vkc.DeviceInfo) string {
	h := fnv.New64a()
	h.Write([]byte(deviceLabel(info)))
	return fmt.Sprintf("vkc-ops-matmul-%016x.json", h.Sum64())
}

func (t *tunings) load(label string) {
	data, err := os.ReadFile(t.path)
	if os.IsNotExist(err) {
		return
	}
	var f tuningFile
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err == nil && (f.Version != tuningFileVersion || f.Device != label) {
		err = fmt.Errorf("version %d of device %q, want version %d of %q", f.Version, f.Device, tuningFileVersion, label)
	}
	if err == nil {
		for class, name := range f.Choices {
			if _, ok := variantNamed(name); !ok {
				err = fmt.Errorf("class %q: unknown variant %q", class, name)
				break
			}
		}
	}
	if err != nil {
		slog.Warn("vkc: ops: ignoring the matmul tuning file", "path", t.path, "err", err)
		return
	}
	t.choices = f.Choices
}

// save writes the choices to the file: a temporary in the same directory
// renamed over it, so a reader never sees half a file. Failures are
// ignored: the choices stay in memory.
func (t *tunings) save(label string) {
	if t.path == "" {
		return
	}
	data, err := json.MarshalIndent(tuningFile{Version: tuningFileVersion, Device: label, Choices: t.choices}, "", "  ")
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(t.path), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".vkc-ops-matmul-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), t.path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// choice is the variant a class was measured to run fastest with, if any.
func (t *tunings) choice(class string) (variant, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.choices[class]
	if !ok {
		return 0, false
	}
	return variantNamed(name)
}

func (t *tunings) keep(class string, v variant, label string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.choices[class] = v.String()
	t.save(label)
}

// run computes the product with the variant the tuner picks (tuned).
func (p *matmulPlan[T]) run(s *vkc.Stream) error {
	return tuned(s, p.dev, tuning{
		op: "Matmul", class: p.shapeClass, cands: p.candidates(), fallback: p.problem.heuristic(),
		fixed: p.heuristic, applies: p.applies, run: p.runVariant,
	})
}

// tuning is one call's choice to make: its shape class (computed only
// when needed), the variants that apply, the heuristic's choice, whether
// the caller asked for it alone, and how to run a variant.
type tuning struct {
	op       string // the op's name, for errors
	class    func() string
	cands    []variant
	fallback variant
	fixed    bool
	applies  func(variant) bool
	run      func(*vkc.Stream, variant) error
}

// tuned runs the variant the tuner picks: the heuristic's when asked,
// when only one variant applies, or when nothing can be timed (inside a
// capture window, or while the stream is profiled); a class's measured
// choice when there is one; otherwise every variant that applies is run
// and timed on the device, the fastest kept for the class, and the work
// done once more with it, so that what the output holds is that
// variant's result whatever happened while timing.
func tuned(s *vkc.Stream, dev *vkc.Device, t tuning) error {
	if t.fixed || len(t.cands) == 1 {
		return t.run(s, t.fallback)
	}
	md, err := matmulDeviceOf(dev)
	if err != nil {
		return fmt.Errorf("vkc: %s: %w", t.op, err)
	}
	class := t.class()
	if v, ok := md.tunings.choice(class); ok && t.applies(v) {
		return t.run(s, v)
	}
	if s.Capturing() {
		return t.run(s, t.fallback)
	}
	best, ok := measure(s, t.cands, t.run)
	if !ok {
		return t.run(s, t.fallback)
	}
	md.tunings.keep(class, best, deviceLabel(dev.Info()))
	return t.run(s, best)
}

// measure times each candidate on the device (once to warm it, once
// profiled) and returns the fastest. It reports false when no time could
// be taken (the stream is profiled already, or the device takes no
// timestamps); a variant that fails is left out.
func measure(s *vkc.Stream, cands []variant, run func(*vkc.Stream, variant) error) (variant, bool) {
	// An empty profile first: a stream the caller profiles refuses it, and
	// then no candidate runs (the caller's profile sees only the product).
	if _, err := s.Profile(func(*vkc.Stream) error { return nil }); err != nil {
		return 0, false
	}
	best, bestTime, timed := variant(0), time.Duration(0), false
	for _, v := range cands {
		if err := run(s, v); err != nil {
			continue
		}
		prof, err := s.Profile(func(s *vkc.Stream) error { return run(s, v) })
		if err != nil || prof == nil || len(prof.Launches) == 0 {
			continue
		}
		if !timed || prof.Total < bestTime {
			best, bestTime, timed = v, prof.Total, true
		}
	}
	return best, timed
}
