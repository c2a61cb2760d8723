package vkc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"strings"
	"time"

	"github.com/vkcompute/vkc"
)

// loadAffine loads testdata/affine.comp, y[i] = a*x[i] + b for i < n (64
// invocations a group), the user kernel the examples launch; package ops
// is vkc's op library, with examples of its own.
func loadAffine(dev *vkc.Device) *vkc.Kernel {
	code, err := os.ReadFile("testdata/affine.spv")
	if err != nil {
		log.Fatal(err)
	}
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: code})
	if err != nil {
		log.Fatal(err)
	}
	return k
}

// affinePush is affine's push constants: a, b, n.
func affinePush(a, b float32, n uint32) []byte {
	push := binary.LittleEndian.AppendUint32(nil, math.Float32bits(a))
	push = binary.LittleEndian.AppendUint32(push, math.Float32bits(b))
	return binary.LittleEndian.AppendUint32(push, n)
}

// The main path: open the best device (lavapipe on a machine with no GPU),
// put data on it, launch a kernel and read the result back.
func Example() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	x, err := vkc.FromSlice(dev, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	y, err := vkc.NewBuffer[float32](dev, 3)
	if err != nil {
		log.Fatal(err)
	}
	k := loadAffine(dev)
	// y = 2*x + 10, one group of 64 invocations, on the default stream.
	if err := k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(2, 10, 3), x, y); err != nil {
		log.Fatal(err)
	}
	out, err := y.Read(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [12 14 16]
}

// A capture records a stream's work once and replays it for the cost of
// one submit. New inputs go through the same buffers between replays.
func ExampleStream_Capture() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()

	s := dev.NewStream()
	k := loadAffine(dev)
	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3})
	y, _ := vkc.NewBuffer[float32](dev, 3)
	z, _ := vkc.NewBuffer[float32](dev, 3)

	// fn runs twice: once executed (the warmup), once recorded.
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := k.Launch(s, [3]uint32{1, 1, 1}, affinePush(10, 0, 3), x, y); err != nil { // y = 10x
			return err
		}
		return k.Launch(s, [3]uint32{1, 1, 1}, affinePush(1, 1, 3), y, z) // z = y + 1
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	warm, _ := z.ReadOn(ctx, s)
	fmt.Println("warmup:", warm)

	for _, in := range [][]float32{{4, 5, 6}, {-1, 0, 1}} {
		if err := x.WriteOn(s, in); err != nil {
			log.Fatal(err)
		}
		if err := g.Replay(); err != nil {
			log.Fatal(err)
		}
		out, err := y.ReadOn(ctx, s)
		if err != nil {
			log.Fatal(err)
		}
		plus, _ := z.ReadOn(ctx, s)
		fmt.Println("replay:", out, plus)
	}
	// Output:
	// warmup: [11 21 31]
	// replay: [40 50 60] [41 51 61]
	// replay: [-10 0 10] [-9 1 11]
}

// A graph captured with profiling times each of its launches at every
// replay: what an autotuner compares candidate kernels by, read after the
// replay with no timestamp outside the graph. A graph captured without it
// holds none.
func ExampleGraph_LastProfile() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()

	s := dev.NewStream()
	k := loadAffine(dev)
	const n = 1 << 16
	x, _ := vkc.NewBuffer[float32](dev, n)
	y, _ := vkc.NewBuffer[float32](dev, n)
	g, err := s.CaptureWith(vkc.CaptureOptions{Profile: true}, func(s *vkc.Stream) error {
		if err := vkc.Fill(s, x, 1); err != nil {
			return err
		}
		return k.Launch(s, [3]uint32{n / 64, 1, 1}, affinePush(2, 0, n), x, y)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	if err := g.Replay(); err != nil {
		log.Fatal(err)
	}
	p, err := g.LastProfile(ctx) // waits for the replay
	if err != nil {
		log.Fatal(err)
	}
	var sum time.Duration
	for _, l := range p.Launches {
		// A catalogue kernel is named by its op, with a suffix for the
		// variant the device runs (fill_wide on a CPU driver); a user
		// kernel by its KernelSpec.Name.
		kernel, _, _ := strings.Cut(l.Kernel, "_")
		fmt.Println(kernel, l.Device > 0)
		sum += l.Device
	}
	fmt.Println("within the total:", sum <= p.Total)
	// Output:
	// fill true
	// affine true
	// within the total: true
}

// A user kernel: SPIR-V built with glslc (here testdata/affine.comp,
// y = a*x + b) plus a description of its bindings and push constants,
// checked against the module when it loads.
func ExampleDevice_LoadKernel() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	code, err := os.ReadFile("testdata/affine.spv")
	if err != nil {
		log.Fatal(err)
	}
	k, err := dev.LoadKernel(vkc.KernelSpec{
		Name:     "affine",
		SPIRV:    code,
		Bindings: []vkc.Access{vkc.ReadOnly, vkc.WriteOnly}, // x, y
		PushSize: 12,                                        // a float32, b float32, n uint32
	})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	x, _ := vkc.FromSlice(dev, []float32{0, 1, 2, 3})
	y, _ := vkc.NewBuffer[float32](dev, 4)
	push := binary.LittleEndian.AppendUint32(nil, math.Float32bits(3))   // a
	push = binary.LittleEndian.AppendUint32(push, math.Float32bits(0.5)) // b
	push = binary.LittleEndian.AppendUint32(push, 4)                     // n
	// One workgroup of the module's 64 invocations covers 4 elements.
	if err := k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, x, y); err != nil {
		log.Fatal(err)
	}
	out, err := y.Read(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)

	// A description that does not match the module is refused at load.
	_, err = dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: code, Bindings: []vkc.Access{vkc.ReadOnly}, PushSize: 12})
	fmt.Println(err)
	// Output:
	// [0.5 3.5 6.5 9.5]
	// vkc: kernel "affine": description has 1 bindings, module has 2
}

// A user kernel from its SPIR-V alone: LoadKernel reads the bindings, how
// the module uses each (GLSL readonly, writeonly, or neither), the
// push-constant size and the workgroup size from the module, and Spec
// reports what it derived.
func ExampleDevice_LoadKernel_derived() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	code, err := os.ReadFile("testdata/affine.spv") // y = a*x + b
	if err != nil {
		log.Fatal(err)
	}
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: code})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	spec := k.Spec()
	fmt.Println(spec)

	x, _ := vkc.FromSlice(dev, []float32{0, 1, 2, 3})
	y, _ := vkc.NewBuffer[float32](dev, 4)
	push := binary.LittleEndian.AppendUint32(nil, math.Float32bits(3))   // a
	push = binary.LittleEndian.AppendUint32(push, math.Float32bits(0.5)) // b
	push = binary.LittleEndian.AppendUint32(push, 4)                     // n
	groups := (uint32(x.Len()) + spec.LocalSize[0] - 1) / spec.LocalSize[0]
	if err := k.Launch(dev.Stream(), [3]uint32{groups, 1, 1}, push, x, y); err != nil {
		log.Fatal(err)
	}
	out, err := y.Read(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output:
	// affine: bindings [read write], 12 bytes of push constants, local size [64 1 1]
	// [0.5 3.5 6.5 9.5]
}

// Memory no executed work wrote never reads as stale bytes: the read fails
// with ErrUnwritten, which unwraps to the cause.
func ExampleBuffer_Read_unwritten() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()

	b, _ := vkc.NewBuffer[int32](dev, 8)
	_, err = b.Read(context.Background())
	fmt.Println(errors.Is(err, vkc.ErrUnwritten), errors.Is(err, vkc.ErrNeverWritten))

	_ = vkc.Fill(dev.Stream(), b, 7)
	out, err := b.Read(context.Background())
	fmt.Println(out, err)
	// Output:
	// true true
	// [7 7 7 7 7 7 7 7] <nil>
}

// A graph whose amount of work changes on every replay, with no
// re-capture: the launch takes its group counts from a Param
// (GroupsOf: ceil(n/64) groups of the kernel's 64 invocations), and Set
// changes it between replays. Elements past the groups run are left as
// they were. Package ops builds its dynamic tensors on this
// (ops.Tensor.Dynamic).
func ExampleParam() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	s := dev.NewStream()
	k := loadAffine(dev)

	const total = 192
	x, _ := vkc.FromSlice(dev, make([]float32, total))
	y, _ := vkc.NewBuffer[float32](dev, total)
	n, _ := vkc.NewParam(dev, uint32(total)) // how many elements

	g, err := s.Capture(func(s *vkc.Stream) error {
		return k.LaunchIndirect(s, vkc.GroupsOf(n, 64), affinePush(0, 1, total), x, y) // y = 1
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	for _, elems := range []uint32{64, 100, 192} {
		if err := vkc.Fill(s, y, 0); err != nil {
			log.Fatal(err)
		}
		if err := n.Set(elems); err != nil {
			log.Fatal(err)
		}
		if err := g.Replay(); err != nil {
			log.Fatal(err)
		}
		ys, _ := y.ReadOn(ctx, s)
		written := 0
		for _, v := range ys {
			written += int(v)
		}
		fmt.Println(elems, "->", written)
	}
	// A length of 0 is refused at Set.
	fmt.Println(n.Set(0))
	// Output:
	// 64 -> 64
	// 100 -> 128
	// 192 -> 192
	// vkc: length 0: a length param sizes work and must be at least 1
}

// One allocation carved into tensors: views alias ranges of a buffer and
// go wherever a buffer goes. Here a KV-cache-like buffer of 4 rows of 3
// gets row 2 written by a Copy and is read back whole; a view of its
// bytes as uint32 shows a float's bits. A view holds its buffer's memory
// until the view closes too.
func ExampleBuffer_View() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()

	cache, _ := vkc.FromSlice(dev, make([]float32, 4*3))
	defer cache.Close()
	row2, err := cache.View(2*3, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer row2.Close()
	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3})
	if err := vkc.Copy(dev.Stream(), x, row2); err != nil { // row2 = x
		log.Fatal(err)
	}
	all, _ := cache.Read(ctx)
	fmt.Println(all)

	bits, err := vkc.ViewAs[uint32](row2, 4, 1) // the second element's bits
	if err != nil {
		log.Fatal(err)
	}
	defer bits.Close()
	b, _ := bits.Read(ctx)
	fmt.Printf("%#x\n", b[0])

	if _, err := cache.View(11, 2); errors.Is(err, vkc.ErrOutOfRange) {
		fmt.Println("a view past the end is refused")
	}
	// Output:
	// [0 0 0 0 0 0 1 2 3 0 0 0]
	// 0x40000000
	// a view past the end is refused
}
