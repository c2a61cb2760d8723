package vkc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A CPU driver with shaderInt64 runs the wide kernels (eight elements per
// invocation in 64-bit words; the reductions over 16384-element groups),
// any other device the vec4 and subgroup ones: checked by the kernel
// names the device's own profile records for each op. Without the choice
// in elementwiseKernel and sumKernel the CPU driver's profile names the
// vec4 kernels.
func TestKernelChoiceFollowsTheDevice(t *testing.T) {
	dev := openTest(t)
	info := dev.Info()
	s := dev.Stream()
	n := 3000
	x, y, z := upload(t, dev, make([]float32, n)), upload(t, dev, make([]float32, n)), scratch[float32](t, dev, n)
	one := scratch[float32](t, dev, 1)
	p, err := s.Profile(func(s *Stream) error {
		for _, op := range []func() error{
			func() error { return Fill(s, x, 1) },
			func() error { return Axpy(s, 2, x, y) },
			func() error { return Scale(s, 2, x, y) },
			func() error { return Add(s, x, y, z) },
			func() error { return Sum(s, z, one) },
			func() error { return Dot(s, x, y, one) },
		} {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	var names []string
	for _, l := range p.Launches {
		names = append(names, l.Kernel)
	}
	elementwise := []string{"fill", "axpy", "scale", "add"}
	sum, dot := "sum", "dot"
	switch {
	case info.Type == TypeCPU && info.Features.Has(FeatureInt64):
		elementwise = []string{"fill_wide", "axpy_wide", "scale_wide", "add_wide"}
		if dev.subgroupReductions() {
			sum, dot = "sum_wide", "dot_wide"
		}
	case dev.subgroupReductions():
		sum, dot = "sum_subgroup", "dot_subgroup"
	}
	// 3000 elements: one reduction group for the wide kernels, a second
	// pass over 12 partials for the 256-element ones.
	want := append(elementwise, sum)
	if sum != "sum_wide" {
		want = append(want, sum)
	}
	want = append(want, dot)
	if dot != "dot_wide" {
		want = append(want, sum)
	}
	assert.Equal(t, want, names, "on a %v device with %v", info.Type, info.Features)
	got := readAll(t, one)
	assert.Equal(t, float32(2*n), got[0], "x = 1 and y = 2x = 2 after the scale: x·y = 2n")
}
