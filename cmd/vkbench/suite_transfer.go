package main

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/cmd/vkbench/internal/cbase"
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
// and vkc.Sum over a float32 buffer of the same size ("sum", bytes read
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

// transferSize measures the seven figures at one size.
func transferSize(cfg settings, dev *vkc.Device, base *cbase.Device, s *vkc.Stream, ctx context.Context, size int64, env map[string]string, res *suiteResult) error {
	n := int(size / 4)
	src := make([]uint32, n)
	transferPattern(src, 0x5eed)
	out := make([]uint32, n) // written by the first download: pre-faulted
	a, err := vkc.NewBuffer[uint32](dev, n)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := vkc.NewBuffer[uint32](dev, n)
	if err != nil {
		return err
	}
	defer b.Close()
	params := map[string]int64{"bytes": size}
	add := func(name, elem string, secondsPerByte []float64) {
		res.Figures = append(res.Figures, timedFigure(Figure{Suite: "transfer", Name: name, Params: params, Unit: "GB/s", Env: env, Elem: elem},
			secondsPerByte, func(s float64) float64 { return 1 / s / 1e9 }))
	}

	hostSrc := make([]byte, size)
	hostDst := make([]byte, size)
	for i := range hostSrc {
		hostSrc[i] = byte(i)
	}
	copy(hostDst, hostSrc) // fault in every page of the destination

	cCopy, err := base.NewCopy(src)
	if err != nil {
		return fmt.Errorf("C baseline: %w", err)
	}
	defer cCopy.Close()
	cMemcpy, err := cbase.NewMemcpy(hostSrc)
	if err != nil {
		return fmt.Errorf("C baseline: %w", err)
	}
	defer cMemcpy.Close()
	cOut := make([]uint32, n)
	cBytes := make([]byte, size)

	// sum reads a float32 buffer of the same size with vkc.Sum: small
	// integers, so every partial sum is exact and the float64 reference
	// is the answer to the bit.
	fs := make([]float32, n)
	var fsum float64
	for i := range fs {
		fs[i] = float32(i%7) - 3
		fsum += float64(fs[i])
	}
	f, err := vkc.FromSlice(dev, fs)
	if err != nil {
		return err
	}
	defer f.Close()
	total, err := vkc.NewBuffer[float32](dev, 1)
	if err != nil {
		return err
	}
	defer total.Close()
	got := make([]float32, 1)

	// zero clears a device buffer on the device, outside the timer, so that
	// a check sees what the timed operation wrote and not what an earlier
	// run left there (a copy that silently stopped running would otherwise
	// still find src from the warm-up).
	zero := func(buf *vkc.Buffer[uint32]) func() error {
		return func() error {
			if err := vkc.Fill(s, buf, 0); err != nil {
				return err
			}
			return s.Sync(ctx)
		}
	}

	// The seven figures are measured round-robin (measureInterleaved), so
	// each ratio compares runs taken under the same conditions. Upload
	// rewrites a with src, download reads it and copy copies it into b.
	cfg.progress.Printf("transfer: upload, download, copy, memcpy, c-copy-buffer, c-memcpy, sum %s", formatBytes(size))
	names := []string{"upload", "download", "copy", "memcpy", "c-copy-buffer", "c-memcpy", "sum"}
	perByte, errs := measureInterleaved(cfg, []measureSpec{{
		op: func() (float64, error) {
			if err := a.Write(src); err != nil {
				return 0, err
			}
			return float64(size), s.Sync(ctx)
		},
		reset: zero(a),
		check: func() error {
			if err := a.ReadInto(ctx, s, out); err != nil {
				return err
			}
			return sampleDiff("upload", src, out)
		},
	}, {
		op: func() (float64, error) {
			return float64(size), a.ReadInto(ctx, s, out)
		},
		reset: func() error {
			clear(out)
			return nil
		},
		check: func() error { return sampleDiff("download", src, out) },
	}, {
		op: func() (float64, error) {
			if err := vkc.Copy(s, a, b); err != nil {
				return 0, err
			}
			return float64(size), s.Sync(ctx)
		},
		reset: zero(b),
		check: func() error {
			clear(out)
			if err := b.ReadInto(ctx, s, out); err != nil {
				return err
			}
			return sampleDiff("copy", src, out)
		},
	}, {
		op: func() (float64, error) {
			copy(hostDst, hostSrc)
			return float64(size), nil
		},
	}, {
		op: func() (float64, error) {
			return float64(size), cCopy.Run()
		},
		reset: cCopy.ClearDst,
		check: func() error {
			if err := cCopy.Dst(cOut); err != nil {
				return err
			}
			return sampleDiff("c-copy-buffer", src, cOut)
		},
	}, {
		op: func() (float64, error) {
			return float64(size), cMemcpy.Run()
		},
		reset: cMemcpy.ClearDst,
		check: func() error {
			if err := cMemcpy.Dst(cBytes); err != nil {
				return err
			}
			if !bytes.Equal(cBytes, hostSrc) {
				return fmt.Errorf("%w: c-memcpy: destination differs from the source", ErrMismatch)
			}
			return nil
		},
	}, {
		op: func() (float64, error) {
			if err := vkc.Sum(s, f, total); err != nil {
				return 0, err
			}
			return float64(size), s.Sync(ctx)
		},
		reset: func() error { return total.Write([]float32{float32(math.NaN())}) },
		check: func() error {
			if err := total.ReadInto(ctx, s, got); err != nil {
				return err
			}
			if float64(got[0]) != fsum {
				return fmt.Errorf("%w: sum: %g, want %g", ErrMismatch, got[0], fsum)
			}
			return nil
		},
	}})
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
	// upload-f16: the same bytes written as Float16 elements, so a tensor
	// library's half-precision weights upload at the same rate.
	halves := make([]vkc.Float16, size/2)
	for i := range halves {
		halves[i] = vkc.Float16(src[i/2] >> (16 * (i % 2)))
	}
	h, err := vkc.NewBuffer[vkc.Float16](dev, len(halves))
	if err != nil {
		return err
	}
	defer h.Close()
	hOut := make([]vkc.Float16, len(halves))
	cfg.progress.Printf("transfer: upload-f16 %s", formatBytes(size))
	perByte, errs = measureInterleaved(cfg, []measureSpec{{
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
