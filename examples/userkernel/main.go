// Command userkernel runs a kernel of its own on a vkc device, written to be
// copied: the GLSL source (saxpy.comp), the SPIR-V glslc builds from it
// (saxpy.spv, committed and embedded, so building the program needs no
// shader compiler), and a program that loads the module with nothing but
// its bytes, prints the description vkc derived from it, launches it and
// prints the result.
//
// After editing saxpy.comp, rebuild the module with
//
//	go generate
//
// which runs the glslc command of the go:generate line in main.go (glslc
// ships with the Vulkan SDK, and as the glslc package on Debian, Ubuntu,
// Fedora and Arch). The test in this directory fails when saxpy.spv no
// longer matches saxpy.comp.
package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"math"
	"os"

	"github.com/vkcompute/vkc"
)

//go:generate glslc --target-env=vulkan1.1 -O -o saxpy.spv saxpy.comp

// saxpySPIRV is the kernel, compiled from saxpy.comp by go generate.
//
//go:embed saxpy.spv
var saxpySPIRV []byte

// The input the program computes y = a*x + y on.
var (
	a  float32 = 2.5
	xs         = []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	ys         = []float32{10, 10, 10, 10, 10, -10, -10, -10, -10, -10}
)

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

// run prints the kernel's derived description and the result of saxpy on
// the program's input.
func run(dev *vkc.Device, w io.Writer) error {
	out, spec, err := saxpy(dev, a, xs, ys)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, spec)
	fmt.Fprintln(w, out)
	return nil
}

// saxpy computes a*x + y on dev and returns it with the kernel's
// description, which LoadKernel derived from the module.
func saxpy(dev *vkc.Device, a float32, x, y []float32) ([]float32, vkc.KernelSpec, error) {
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "saxpy", SPIRV: saxpySPIRV})
	if err != nil {
		return nil, vkc.KernelSpec{}, err
	}
	defer k.Close()
	spec := k.Spec() // bindings, their access, push size, workgroup size

	xb, err := vkc.FromSlice(dev, x)
	if err != nil {
		return nil, spec, err
	}
	defer xb.Close()
	yb, err := vkc.FromSlice(dev, y)
	if err != nil {
		return nil, spec, err
	}
	defer yb.Close()

	// The push-constant block as saxpy.comp declares it: a float, n uint.
	push := binary.LittleEndian.AppendUint32(nil, math.Float32bits(a))
	push = binary.LittleEndian.AppendUint32(push, uint32(len(x)))
	// One invocation per element: enough workgroups of LocalSize[0].
	groups := (uint32(len(x)) + spec.LocalSize[0] - 1) / spec.LocalSize[0]
	if err := k.Launch(dev.Stream(), [3]uint32{groups, 1, 1}, push, xb, yb); err != nil {
		return nil, spec, err
	}
	out, err := yb.Read(context.Background())
	return out, spec, err
}
