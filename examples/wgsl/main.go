// Command wgsl runs two kernels written in WGSL and compiled when the
// program runs, in pure Go, by package wgsl: a fused bias and GELU
// (biasgelu.wgsl) and a two-pass sum through workgroup memory
// (reduce.wgsl). Building it needs no shader compiler; the sources are
// embedded and translated on first use (a few milliseconds, then cached).
//
// It prints the description vkc derived from each compiled module and the
// results on a small input; main_test.go checks both kernels against Go.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/wgsl"
)

var (
	//go:embed biasgelu.wgsl
	biasGELUSource string
	//go:embed reduce.wgsl
	reduceSource string
)

// reduceWorkgroup is WG in reduce.wgsl: the invocations of a workgroup.
const reduceWorkgroup = 256

// maxPartials bounds the first pass's workgroups, so that one workgroup
// of the second pass adds their totals in registers and one tree.
const maxPartials = 64

func main() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	err = run(dev, os.Stdout)
	if closeErr := dev.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		log.Fatal(err)
	}
}

// run prints both kernels' derived descriptions and their results on a
// small input.
func run(dev *vkc.Device, w io.Writer) error {
	x := []float32{-3, -1.5, -0.5, 0, 0.25, 1, 2, 4}
	bias := []float32{0.5, -0.5}
	y, spec, err := biasGELU(dev, x, bias)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, spec)
	fmt.Fprintln(w, y)
	total, spec, err := sum(dev, x)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, spec)
	fmt.Fprintln(w, total)
	return nil
}

// biasGELU returns gelu(x[i] + bias[i % len(bias)]), computed on dev, and
// the kernel's description. The row length is an override of the source,
// set when compiling.
func biasGELU(dev *vkc.Device, x, bias []float32) ([]float32, vkc.KernelSpec, error) {
	spec, err := wgsl.Compile(biasGELUSource, wgsl.Options{Name: "bias_gelu",
		Constants: map[string]float64{"COLS": float64(len(bias))}})
	if err != nil {
		return nil, vkc.KernelSpec{}, err
	}
	k, err := dev.LoadKernel(spec)
	if err != nil {
		return nil, vkc.KernelSpec{}, err
	}
	defer k.Close()
	spec = k.Spec() // what vkc derived: y is write-only, since the code only stores to it
	xb, err := vkc.FromSlice(dev, x)
	if err != nil {
		return nil, spec, err
	}
	defer xb.Close()
	bb, err := vkc.FromSlice(dev, bias)
	if err != nil {
		return nil, spec, err
	}
	defer bb.Close()
	yb, err := vkc.NewBuffer[float32](dev, len(x))
	if err != nil {
		return nil, spec, err
	}
	defer yb.Close()
	groups := (uint32(len(x)) + spec.LocalSize[0] - 1) / spec.LocalSize[0]
	if err := k.Launch(dev.Stream(), [3]uint32{groups, 1, 1}, nil, xb, bb, yb); err != nil {
		return nil, spec, err
	}
	y, err := yb.Read(context.Background())
	return y, spec, err
}

// sum adds x on dev in two passes of reduce.wgsl and returns the total
// with the kernel's description.
func sum(dev *vkc.Device, x []float32) (float32, vkc.KernelSpec, error) {
	spec, err := wgsl.Compile(reduceSource, wgsl.Options{Name: "reduce"})
	if err != nil {
		return 0, vkc.KernelSpec{}, err
	}
	k, err := dev.LoadKernel(spec)
	if err != nil {
		return 0, vkc.KernelSpec{}, err
	}
	defer k.Close()
	spec = k.Spec()
	xb, err := vkc.FromSlice(dev, x)
	if err != nil {
		return 0, spec, err
	}
	defer xb.Close()
	groups := min((len(x)+reduceWorkgroup-1)/reduceWorkgroup, maxPartials)
	partials, err := vkc.NewBuffer[float32](dev, groups)
	if err != nil {
		return 0, spec, err
	}
	defer partials.Close()
	total, err := vkc.NewBuffer[float32](dev, 1)
	if err != nil {
		return 0, spec, err
	}
	defer total.Close()
	s := dev.Stream()
	if err := k.Launch(s, [3]uint32{uint32(groups), 1, 1}, nil, xb, partials); err != nil {
		return 0, spec, err
	}
	if err := k.Launch(s, [3]uint32{1, 1, 1}, nil, partials, total); err != nil {
		return 0, spec, err
	}
	out, err := total.Read(context.Background())
	if err != nil {
		return 0, spec, err
	}
	return out[0], spec, nil
}
