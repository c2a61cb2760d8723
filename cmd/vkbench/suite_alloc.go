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
// buffer (vk.Device.AllocateBlock then Release) on the raw path.
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
	if err := raw.Close(); err != nil {
		res.fail(err)
	}
	if err := validationFailures(dev); err != nil {
		res.fail(err)
	}
	return res, nil
}
