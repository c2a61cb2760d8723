package main

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/cmd/vkbench/internal/cbase"
	"github.com/vkcompute/vkc/ops"
)

// transferSizes are the byte counts measured: powers of 4 from 1 MiB to
// 256 MiB, cut at the largest buffer the device lets a kernel bind; when
// that cuts the list, the largest power of two within the limit ends it.
func transferSizes(quick bool, maxRange uint64) (sizes []int64, capped bool) {
	if quick {
		return []int64{1 << 20}, false
	}
	for size := int64(1 << 20); size <= 256<<20; size *= 4 {
		if uint64(size) > maxRange {
			top := size / 2
			if uint64(top) <= maxRange && (len(sizes) == 0 || top > sizes[len(sizes)-1]) {
				sizes = append(sizes, top)
			}
			return sizes, true
		}
		sizes = append(sizes, size)
	}
	return sizes, false
}

// transferPattern fills xs with values that differ from one element to the
// next and from a zeroed buffer.
func transferPattern(xs []uint32, seed uint32) {
	for i := range xs {
		xs[i] = uint32(i)*2654435761 ^ seed
	}
}

// sampleDiff compares want and got at about 64 spread indices and the last
// one, and describes the first difference.
func sampleDiff(what string, want, got []uint32) error {
	if len(want) != len(got) {
		return fmt.Errorf("%w: %s: %d elements, want %d", ErrMismatch, what, len(got), len(want))
	}
	step := max(len(want)/64, 1)
	for i := 0; i < len(want); i += step {
		if want[i] != got[i] {
			return fmt.Errorf("%w: %s: element %d = %#x, want %#x", ErrMismatch, what, i, got[i], want[i])
		}
	}
	if last := len(want) - 1; last >= 0 && want[last] != got[last] {
		return fmt.Errorf("%w: %s: element %d = %#x, want %#x", ErrMismatch, what, last, got[last], want[last])
	}
	return nil
}

// runTransfer measures upload (Write), download (ReadInto a preallocated
// slice) and device-to-device copy (vkc.Copy) in GB/s, beside Go's copy of
// two pre-faulted host slices of the same size ("memcpy") and the C
// baseline's vkCmdCopyBuffer ("c-copy-buffer") and C memcpy ("c-memcpy"),
// and ops.Sum over a float32 buffer of the same size ("sum", bytes read
// per second: a reduction at memory speed reads as fast as memcpy copies).
func runTransfer(cfg settings) (*suiteResult, error) {
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	info := dev.Info()
	sizes, capped := transferSizes(cfg.quick, uint64(info.Limits.MaxStorageBufferRange))
	if capped {
		res.Notes = append(res.Notes, fmt.Sprintf("transfer: sizes stop at %s, the device's maxStorageBufferRange (%d bytes)",
			formatBytes(sizes[len(sizes)-1]), info.Limits.MaxStorageBufferRange))
	}
	base, err := openBaseline(cfg, dev)
	if err != nil {
		return nil, err
	}
	s := dev.Stream()
	ctx := context.Background()
	for _, size := range sizes {
		if err := transferSize(cfg, dev, base, s, ctx, size, env, res); err != nil {
			_ = base.Close()
			return nil, fmt.Errorf("transfer of %s: %w", formatBytes(size), err)
		}
	}
	if err := base.Close(); err != nil {
		res.fail(fmt.Errorf("C baseline: %w", err))
	}
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}

// transferSize measures the seven figures at one size, and upload-f16
// where the device stores Float16.
func transferSize(cfg settings, dev *vkc.Device, base *cbase.Device, s *vkc.Stream, ctx context.Context, size int64, env map[string]string, res *suiteResult) error {
	t := &transferRun{s: s, ctx: ctx, size: size}
	n := int(size / 4)
	t.src = make([]uint32, n)
	transferPattern(t.src, 0x5eed)
	t.out = make([]uint32, n) // written by the first download: pre-faulted
	var err error
	if t.a, err = vkc.NewBuffer[uint32](dev, n); err != nil {
		return err
	}
	defer t.a.Close()
	if t.b, err = vkc.NewBuffer[uint32](dev, n); err != nil {
		return err
	}
	defer t.b.Close()
	params := map[string]int64{"bytes": size}
	add := func(name, elem string, secondsPerByte []float64) {
		res.Figures = append(res.Figures, timedFigure(Figure{Suite: "transfer", Name: name, Params: params, Unit: "GB/s", Env: env, Elem: elem},
			secondsPerByte, func(s float64) float64 { return 1 / s / 1e9 }))
	}

	t.hostSrc = make([]byte, size)
	t.hostDst = make([]byte, size)
	for i := range t.hostSrc {
		t.hostSrc[i] = byte(i)
	}
	copy(t.hostDst, t.hostSrc) // fault in every page of the destination

	if t.cCopy, err = base.NewCopy(t.src); err != nil {
		return fmt.Errorf("C baseline: %w", err)
	}
	defer t.cCopy.Close()
	if t.cMemcpy, err = cbase.NewMemcpy(t.hostSrc); err != nil {
		return fmt.Errorf("C baseline: %w", err)
	}
	defer t.cMemcpy.Close()
	t.cOut = make([]uint32, n)
	t.cBytes = make([]byte, size)

	// sum reads a float32 buffer of the same size with ops.Sum: small
	// integers, so every partial sum is exact and the float64 reference
	// is the answer to the bit.
	fs := make([]float32, n)
	for i := range fs {
		fs[i] = float32(i%7) - 3
		t.fsum += float64(fs[i])
	}
	if t.f, err = vkc.FromSlice(dev, fs); err != nil {
		return err
	}
	defer t.f.Close()
	if t.total, err = vkc.NewBuffer[float32](dev, 1); err != nil {
		return err
	}
	defer t.total.Close()
	t.got = make([]float32, 1)

	// The seven figures are measured round-robin (measureInterleaved), so
	// each ratio compares runs taken under the same conditions. Upload
	// rewrites a with src, download reads it and copy copies it into b.
	cfg.progress.Printf("transfer: upload, download, copy, memcpy, c-copy-buffer, c-memcpy, sum %s", formatBytes(size))
	names := []string{"upload", "download", "copy", "memcpy", "c-copy-buffer", "c-memcpy", "sum"}
	perByte, errs := measureInterleaved(cfg, []measureSpec{
		t.uploadSpec(), t.downloadSpec(), t.copySpec(), t.memcpySpec(), t.cCopySpec(), t.cMemcpySpec(), t.sumSpec(),
	})
	elems := []string{"uint32", "uint32", "uint32", "", "uint32", "", "float32"}
	for i, name := range names {
		if errs[i] != nil {
			res.fail(errs[i])
			continue
		}
		add(name, elems[i], perByte[i])
	}
	if !dev.Info().Features.Has(vkc.FeatureStorage16 | vkc.FeatureFloat16) {
		return nil
	}
	return transferFloat16(cfg, dev, t, res, add)
}

// transferRun is what the transfer figures at one size read and write.
type transferRun struct {
	s    *vkc.Stream
	ctx  context.Context
	size int64

	src, out []uint32             // the pattern uploaded, and what a read gets back
	a, b     *vkc.Buffer[uint32]  // a: uploaded, downloaded and copied; b: copy's destination
	hostSrc  []byte               // memcpy's source
	hostDst  []byte               // memcpy's destination, pre-faulted
	cCopy    *cbase.Copy          // the C baseline's vkCmdCopyBuffer of src
	cMemcpy  *cbase.Memcpy        // the C baseline's memcpy of hostSrc
	cOut     []uint32             // what cCopy wrote
	cBytes   []byte               // what cMemcpy wrote
	f        *vkc.Buffer[float32] // sum's input
	total    *vkc.Buffer[float32] // sum's result
	got      []float32            // total, read back
	fsum     float64              // the exact sum of f
}

// zero clears a device buffer on the device, outside the timer, so that a
// check sees what the timed operation wrote and not what an earlier run
// left there (a copy that silently stopped running would otherwise still
// find src from the warm-up).
func (t *transferRun) zero(buf *vkc.Buffer[uint32]) func() error {
	return func() error {
		if err := vkc.Fill(t.s, buf, 0); err != nil {
			return err
		}
		return t.s.Sync(t.ctx)
	}
}

func (t *transferRun) uploadSpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			if err := t.a.Write(t.src); err != nil {
				return 0, err
			}
			return float64(t.size), t.s.Sync(t.ctx)
		},
		reset: t.zero(t.a),
		check: func() error {
			if err := t.a.ReadInto(t.ctx, t.s, t.out); err != nil {
				return err
			}
			return sampleDiff("upload", t.src, t.out)
		},
	}
}

func (t *transferRun) downloadSpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			return float64(t.size), t.a.ReadInto(t.ctx, t.s, t.out)
		},
		reset: func() error {
			clear(t.out)
			return nil
		},
		check: func() error { return sampleDiff("download", t.src, t.out) },
	}
}

func (t *transferRun) copySpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			if err := vkc.Copy(t.s, t.a, t.b); err != nil {
				return 0, err
			}
			return float64(t.size), t.s.Sync(t.ctx)
		},
		reset: t.zero(t.b),
		check: func() error {
			clear(t.out)
			if err := t.b.ReadInto(t.ctx, t.s, t.out); err != nil {
				return err
			}
			return sampleDiff("copy", t.src, t.out)
		},
	}
}

func (t *transferRun) memcpySpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			copy(t.hostDst, t.hostSrc)
			return float64(t.size), nil
		},
	}
}

func (t *transferRun) cCopySpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			return float64(t.size), t.cCopy.Run()
		},
		reset: t.cCopy.ClearDst,
		check: func() error {
			if err := t.cCopy.Dst(t.cOut); err != nil {
				return err
			}
			return sampleDiff("c-copy-buffer", t.src, t.cOut)
		},
	}
}

func (t *transferRun) cMemcpySpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			return float64(t.size), t.cMemcpy.Run()
		},
		reset: t.cMemcpy.ClearDst,
		check: func() error {
			if err := t.cMemcpy.Dst(t.cBytes); err != nil {
				return err
			}
			if !bytes.Equal(t.cBytes, t.hostSrc) {
				return fmt.Errorf("%w: c-memcpy: destination differs from the source", ErrMismatch)
			}
			return nil
		},
	}
}

func (t *transferRun) sumSpec() measureSpec {
	return measureSpec{
		op: func() (float64, error) {
			if err := ops.Sum(t.s, ops.Of(t.f), 0, ops.Of(t.total)); err != nil {
				return 0, err
			}
			return float64(t.size), t.s.Sync(t.ctx)
		},
		reset: func() error { return t.total.Write([]float32{float32(math.NaN())}) },
		check: func() error {
			if err := t.total.ReadInto(t.ctx, t.s, t.got); err != nil {
				return err
			}
			if float64(t.got[0]) != t.fsum {
				return fmt.Errorf("%w: sum: %g, want %g", ErrMismatch, t.got[0], t.fsum)
			}
			return nil
		},
	}
}

// transferFloat16 measures upload-f16: the same bytes as upload written as
// Float16 elements, so a tensor library's half-precision weights upload at
// the same rate.
func transferFloat16(cfg settings, dev *vkc.Device, t *transferRun, res *suiteResult, add func(name, elem string, secondsPerByte []float64)) error {
	s, ctx, size := t.s, t.ctx, t.size
	halves := make([]vkc.Float16, size/2)
	for i := range halves {
		halves[i] = vkc.Float16(t.src[i/2] >> (16 * (i % 2)))
	}
	h, err := vkc.NewBuffer[vkc.Float16](dev, len(halves))
	if err != nil {
		return err
	}
	defer h.Close()
	hOut := make([]vkc.Float16, len(halves))
	cfg.progress.Printf("transfer: upload-f16 %s", formatBytes(size))
	perByte, errs := measureInterleaved(cfg, []measureSpec{{
		op: func() (float64, error) {
			if err := h.Write(halves); err != nil {
				return 0, err
			}
			return float64(size), s.Sync(ctx)
		},
		reset: func() error {
			if err := vkc.Fill(s, h, 0); err != nil {
				return err
			}
			return s.Sync(ctx)
		},
		check: func() error {
			if err := h.ReadInto(ctx, s, hOut); err != nil {
				return err
			}
			for i := 0; i < len(halves); i += max(1, len(halves)/64) {
				if hOut[i] != halves[i] {
					return fmt.Errorf("%w: upload-f16: element %d is %#04x, want %#04x", ErrMismatch, i, hOut[i], halves[i])
				}
			}
			return nil
		},
	}})
	if errs[0] != nil {
		res.fail(errs[0])
		return nil
	}
	add("upload-f16", "Float16", perByte[0])
	return nil
}
