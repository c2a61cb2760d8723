package main

import (
	"fmt"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/vk"
)

// allocSizes are the buffer sizes measured: a small tensor and a large one.
func allocSizes() []int64 { return []int64{4 << 10, 1 << 20} }

// runAlloc measures allocate+free round trips in ops/s: vkc's suballocator
// (NewBuffer then Close) against one vkAllocateMemory + vkCreateBuffer per
// buffer (vk.Device.AllocateBlock then Release) on the raw path, and, for
// the large size, the same round trip at a full budget, where the buffer
// fits only once memory is reclaimed (fullBudgetOp).
func runAlloc(cfg settings) (*suiteResult, error) {
	dev, res, env, err := openSuite(cfg)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	raw, err := openRaw(cfg)
	if err != nil {
		return nil, fmt.Errorf("raw path: %w", err)
	}
	figure := func(name string, size int64, secondsPerOp []float64) Figure {
		return timedFigure(Figure{Suite: "alloc", Name: name, Params: map[string]int64{"bytes": size}, Unit: "ops/s", Env: env},
			secondsPerOp, func(s float64) float64 { return 1 / s })
	}
	for _, size := range allocSizes() {
		cfg.progress.Printf("alloc: suballocator %s", formatBytes(size))
		perOp, err := measure(cfg, measureSpec{op: func() (float64, error) {
			b, err := vkc.NewBuffer[uint32](dev, int(size/4))
			if err != nil {
				return 0, err
			}
			return 1, b.Close()
		}})
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		res.Figures = append(res.Figures, figure("suballoc", size, perOp))

		cfg.progress.Printf("alloc: vkAllocateMemory %s", formatBytes(size))
		perOp, err = measure(cfg, measureSpec{op: func() (float64, error) {
			b, err := raw.dev.AllocateBlock(vk.UseDeviceLocal, uint64(size))
			if err != nil {
				return 0, err
			}
			b.Release()
			return 1, nil
		}})
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		res.Figures = append(res.Figures, figure("vkallocate", size, perOp))
	}
	size := allocSizes()[len(allocSizes())-1]
	cfg.progress.Printf("alloc: reclaim at a full budget %s", formatBytes(size))
	perOp, err := measureFullBudget(cfg, size)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	res.Figures = append(res.Figures, figure("reclaim", size, perOp))
	if err := raw.Close(); err != nil {
		res.fail(err)
	}
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}

// measureFullBudget times allocations that fill a memory limit exactly
// and fit only once the empty page the allocator keeps for reuse is
// released: pages are half of size, the limit four pages, and one live
// buffer of size bytes holds two of them, the kept page a third. A buffer
// of size bytes (a page of its own: it does not fit the kept page) then
// needs the kept page released first. Each operation is that allocation
// and its Close, plus a small buffer's allocation and Close that make the
// page kept again, so every operation takes the reclaim path once (and
// creates two pages and releases two).
func measureFullBudget(cfg settings, size int64) ([]float64, error) {
	page := uint64(size) / 2
	dev, err := openDevice(cfg, vkc.WithPageSize(page), vkc.WithMemoryLimit(4*page))
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	hold, err := vkc.NewBuffer[uint32](dev, int(size/4))
	if err != nil {
		return nil, err
	}
	defer hold.Close()
	keepPage := func() error {
		b, err := vkc.NewBuffer[uint32](dev, 1024)
		if err != nil {
			return err
		}
		return b.Close()
	}
	if err := keepPage(); err != nil {
		return nil, err
	}
	if st := dev.MemoryStats(); st.Reserved+uint64(size) <= st.Limit {
		return nil, fmt.Errorf("alloc: %d of %d bytes reserved leaves room without a reclaim", st.Reserved, st.Limit)
	}
	return measure(cfg, measureSpec{op: func() (float64, error) {
		b, err := vkc.NewBuffer[uint32](dev, int(size/4))
		if err != nil {
			return 0, err
		}
		if err := b.Close(); err != nil {
			return 0, err
		}
		return 1, keepPage()
	}})
}
