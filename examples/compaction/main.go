// Command compaction keeps the values of a list above a threshold and
// squares them, on the device, with no host read between the passes: the
// number of survivors, which only the device knows, sizes the launch that
// squares them. It is written to be copied, for any pipeline where one
// kernel decides how much work the next one does (compaction, top-k,
// variable-length batches).
//
// Three kernels (GLSL beside this file, SPIR-V committed and embedded):
//
//   - select appends every value above the threshold to kept and counts
//     them in count (an atomic add; the order of kept is the device's);
//   - size turns count into group counts, ceil(count/64) groups, in a
//     three-word buffer;
//   - square runs with those group counts (Kernel.LaunchIndirect with
//     vkc.GroupsFrom) and squares the survivors.
//
// The group counts go through vkc's bound on the device (at most what the
// buffers hold, here ceil(n/64) groups, and the device's limit) before the
// dispatch reads them. A launch sized on the device writes an extent no one
// knows when it is recorded, so vkc counts every buffer it writes as
// written whole: the program reads only the first count elements of out.
//
// After editing a .comp file, rebuild the modules with
//
//	go generate
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
	"slices"

	"github.com/vkcompute/vkc"
)

//go:generate glslc --target-env=vulkan1.1 -O -o select.spv select.comp
//go:generate glslc --target-env=vulkan1.1 -O -o size.spv size.comp
//go:generate glslc --target-env=vulkan1.1 -O -o square.spv square.comp

var (
	//go:embed select.spv
	selectSPIRV []byte
	//go:embed size.spv
	sizeSPIRV []byte
	//go:embed square.spv
	squareSPIRV []byte
)

// The input the program compacts.
var (
	threshold float32 = 0.5
	xs                = []float32{0.9, -2, 0.25, 3, 0.5, 1.5, -0.75, 0.6, 0, 2}
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

// run prints how many values passed and their squares, sorted (the device
// keeps them in whatever order its invocations ran).
func run(dev *vkc.Device, w io.Writer) error {
	c, err := newCompactor(dev, len(xs))
	if err != nil {
		return err
	}
	defer c.Close()
	squares, err := c.Run(dev.Stream(), xs, threshold)
	if err != nil {
		return err
	}
	slices.Sort(squares)
	fmt.Fprintf(w, "kept %d of %d values above %g\n", len(squares), len(xs), threshold)
	fmt.Fprintln(w, "squares:", squares)
	return nil
}

// compactor holds the kernels and buffers for inputs of up to n values.
type compactor struct {
	n                      int
	sel, size, square      *vkc.Kernel
	xs, kept, out          *vkc.Buffer[float32]
	count, groups          *vkc.Buffer[uint32]
	selectGroups, perGroup uint32
}

// newCompactor loads the kernels and allocates the buffers.
func newCompactor(dev *vkc.Device, n int) (c *compactor, err error) {
	c = &compactor{n: n}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for _, k := range []struct {
		dst  **vkc.Kernel
		name string
		code []byte
	}{{&c.sel, "select", selectSPIRV}, {&c.size, "size", sizeSPIRV}, {&c.square, "square", squareSPIRV}} {
		if *k.dst, err = dev.LoadKernel(vkc.KernelSpec{Name: k.name, SPIRV: k.code}); err != nil {
			return nil, err
		}
	}
	for _, b := range []**vkc.Buffer[float32]{&c.xs, &c.kept, &c.out} {
		if *b, err = vkc.NewBuffer[float32](dev, n); err != nil {
			return nil, err
		}
	}
	if c.count, err = vkc.NewBuffer[uint32](dev, 1); err != nil {
		return nil, err
	}
	if c.groups, err = vkc.NewBuffer[uint32](dev, 3); err != nil {
		return nil, err
	}
	c.perGroup = c.square.Spec().LocalSize[0]
	c.selectGroups = (uint32(n) + c.sel.Spec().LocalSize[0] - 1) / c.sel.Spec().LocalSize[0]
	return c, nil
}

// Enqueue queues the three passes on s over the values in c.xs; nothing
// is read back, so it can be captured into a graph and replayed.
func (c *compactor) Enqueue(s *vkc.Stream, threshold float32) error {
	if err := vkc.Fill(s, c.count, 0); err != nil {
		return err
	}
	push := binary.LittleEndian.AppendUint32(nil, uint32(c.n))
	push = binary.LittleEndian.AppendUint32(push, math.Float32bits(threshold))
	if err := c.sel.Launch(s, [3]uint32{c.selectGroups, 1, 1}, push, c.xs, c.kept, c.count); err != nil {
		return err
	}
	if err := c.size.Launch(s, [3]uint32{1, 1, 1}, binary.LittleEndian.AppendUint32(nil, c.perGroup), c.count, c.groups); err != nil {
		return err
	}
	// At most the groups the buffers hold: a count gone wrong cannot make
	// square run past them.
	most := [3]uint32{(uint32(c.n) + c.perGroup - 1) / c.perGroup, 1, 1}
	return c.square.LaunchIndirect(s, vkc.GroupsFrom(c.groups, 0, most), nil, c.kept, c.count, c.out)
}

// Result reads what the passes left: the squares of the survivors. These
// are the only host reads, after all the work.
func (c *compactor) Result(s *vkc.Stream) ([]float32, error) {
	count, err := c.count.ReadOn(context.Background(), s)
	if err != nil {
		return nil, err
	}
	out, err := c.out.ReadOn(context.Background(), s)
	if err != nil {
		return nil, err
	}
	return out[:min(int(count[0]), len(out))], nil
}

// Run compacts xs (exactly n values) on s and returns the squares of the
// values above threshold, in the device's order.
func (c *compactor) Run(s *vkc.Stream, xs []float32, threshold float32) ([]float32, error) {
	if err := c.xs.WriteOn(s, xs); err != nil {
		return nil, err
	}
	if err := c.Enqueue(s, threshold); err != nil {
		return nil, err
	}
	return c.Result(s)
}

// Close releases the kernels and buffers (nil-safe for those not made).
func (c *compactor) Close() {
	for _, k := range []*vkc.Kernel{c.sel, c.size, c.square} {
		if k != nil {
			_ = k.Close()
		}
	}
	for _, b := range []*vkc.Buffer[float32]{c.xs, c.kept, c.out} {
		if b != nil {
			_ = b.Close()
		}
	}
	for _, b := range []*vkc.Buffer[uint32]{c.count, c.groups} {
		if b != nil {
			_ = b.Close()
		}
	}
}
