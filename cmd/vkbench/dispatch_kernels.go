package main

import (
	_ "embed"
	"errors"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/shaders"
)

//go:generate glslc -O --target-env=vulkan1.1 -o kernels/axpy_len.spv kernels/axpy_len.comp
//go:generate glslc -O --target-env=vulkan1.1 -DWIDE -I ../../shaders/glsl -o kernels/axpy_len_wide.spv kernels/axpy_len.comp

// axpyLenSPIRV is axpy with its length read from a bound param (four
// elements per invocation); axpyLenWideSPIRV its wide build (eight, in
// 64-bit words).
var (
	//go:embed kernels/axpy_len.spv
	axpyLenSPIRV []byte
	//go:embed kernels/axpy_len_wide.spv
	axpyLenWideSPIRV []byte
)

// axpyKernels are the kernels vkc's dispatch chains launch through the
// public kernel API, as a library built on vkc would: the catalogue's axpy
// module (the one the C baseline's vec4 or wide chain runs, so that the
// two compare the same kernel) with its constants pushed, and axpy_len,
// the same module reading its length from a bound param, for the chain
// whose length changes between replays.
type axpyKernels struct {
	static, dynamic *vkc.Kernel
	span            uint32 // elements one group of either covers
	push            []byte // the static kernel's a = 1, n = dispatchN
	dynPush         []byte // the dynamic kernel's a = 1
}

// wideAxpy reports whether the dispatch chains run axpy's wide variant:
// on a CPU driver with shaderInt64, the rule vkc's element-wise ops follow
// (see shaders.Wide) and wideChainFor's.
func wideAxpy(dev *vkc.Device) bool {
	info := dev.Info()
	return info.Type == vkc.TypeCPU && info.Features.Has(vkc.FeatureInt64)
}

// loadAxpyKernels loads the two kernels for dev.
func loadAxpyKernels(dev *vkc.Device) (_ *axpyKernels, err error) {
	name, dynSPIRV := "axpy", axpyLenSPIRV
	if wideAxpy(dev) {
		name, dynSPIRV = "axpy_wide", axpyLenWideSPIRV
	}
	cat, err := shaders.Get(name)
	if err != nil {
		return nil, err
	}
	ks := &axpyKernels{span: cat.Span(cat.LocalSize[0])}
	defer func() {
		if err != nil {
			err = errors.Join(err, ks.Close())
		}
	}()
	// Both at the catalogue's workgroup size, so span holds for both.
	local := [3]uint32{cat.LocalSize[0]}
	if ks.static, err = dev.LoadKernel(vkc.KernelSpec{Name: name, SPIRV: cat.SPIRV, LocalSize: local}); err != nil {
		return nil, err
	}
	if ks.dynamic, err = dev.LoadKernel(vkc.KernelSpec{Name: name + "_len", SPIRV: dynSPIRV, LocalSize: local}); err != nil {
		return nil, err
	}
	if ks.push, err = ks.static.Push(struct {
		A float32
		N uint32
	}{1, dispatchN}); err != nil {
		return nil, err
	}
	if ks.dynPush, err = ks.dynamic.Push(struct{ A float32 }{1}); err != nil {
		return nil, err
	}
	return ks, nil
}

// groups is the static launch's group count: one group per span elements.
func (ks *axpyKernels) groups() [3]uint32 {
	return [3]uint32{(dispatchN + ks.span - 1) / ks.span, 1, 1}
}

// launch queues y += x with the static kernel.
func (ks *axpyKernels) launch(s *vkc.Stream, x, y *vkc.Buffer[float32]) error {
	return ks.static.Launch(s, ks.groups(), ks.push, x, y)
}

// launchLen queues y += x over the first n elements with the dynamic
// kernel: ceil(n/span) groups decided when the launch runs, and y counted
// as written up to n only.
func (ks *axpyKernels) launchLen(s *vkc.Stream, x, y *vkc.Buffer[float32], n *vkc.Param[uint32]) error {
	return ks.dynamic.LaunchIndirect(s, vkc.GroupsOf(n, ks.span).Prefix(1, 1), ks.dynPush, x, y, n)
}

// Close closes the kernels loaded.
func (ks *axpyKernels) Close() error {
	var errs []error
	for _, k := range []*vkc.Kernel{ks.static, ks.dynamic} {
		if k != nil {
			errs = append(errs, k.Close())
		}
	}
	return errors.Join(errs...)
}
