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
	"github.com/vkcompute/vkc/ops"
)

// The main path: open the best device (lavapipe on a machine with no GPU),
// put data on it, run an op of package ops on it and read the result back.
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
	y, err := vkc.FromSlice(dev, []float32{10, 20, 30})
	if err != nil {
		log.Fatal(err)
	}
	// y = 2*x + y, on the default stream.
	if err := ops.Axpy(dev.Stream(), ops.Const(2), ops.Of(x), ops.Of(y)); err != nil {
		log.Fatal(err)
	}
	out, err := y.Read(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [12 24 36]
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
	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3})
	y, _ := vkc.NewBuffer[float32](dev, 3)
	total, _ := vkc.NewBuffer[float32](dev, 1)

	// fn runs twice: once executed (the warmup), once recorded.
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := ops.Scale(s, ops.Const(10), ops.Of(x), ops.Of(y)); err != nil {
			return err
		}
		return ops.Sum(s, ops.Of(y), 0, ops.Of(total))
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	warm, _ := total.ReadOn(ctx, s)
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
		sum, _ := total.ReadOn(ctx, s)
		fmt.Println("replay:", out, sum)
	}
	// Output:
	// warmup: [60]
	// replay: [40 50 60] [150]
	// replay: [-10 0 10] [0]
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
	x, _ := vkc.FromSlice(dev, make([]float32, 1<<16))
	y, _ := vkc.NewBuffer[float32](dev, 1<<16)
	g, err := s.CaptureWith(vkc.CaptureOptions{Profile: true}, func(s *vkc.Stream) error {
		if err := ops.Scale(s, ops.Const(2), ops.Of(x), ops.Of(y)); err != nil {
			return err
		}
		return ops.Axpy(s, ops.Const(1), ops.Of(y), ops.Of(x))
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
		// An ops kernel is named by its package and kernel, with a
		// suffix for the element type (ops/axpy_f32).
		kernel, _, _ := strings.Cut(l.Kernel, "_")
		fmt.Println(kernel, l.Device > 0)
		sum += l.Device
	}
	fmt.Println("within the total:", sum <= p.Total)
	// Output:
	// ops/unary true
	// ops/axpy true
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

// A graph whose scalar and length change on every replay, with no
// re-capture: the op reads a Param for the scale and another for how many
// elements to touch (Tensor.Dynamic), and Set changes both between
// replays. Elements past the length are left as they were.
func ExampleParam() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	s := dev.NewStream()

	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6})
	y, _ := vkc.FromSlice(dev, []float32{0, 0, 0, 0, 0, 0})
	a, _ := vkc.NewParam(dev, float32(1)) // the scale
	n, _ := vkc.NewParam(dev, uint32(6))  // how many elements

	g, err := s.Capture(func(s *vkc.Stream) error {
		// y[:n] = a * x[:n]
		return ops.Scale(s, ops.ParamOf(a), ops.Of(x).Dynamic(n), ops.Of(y).Dynamic(n))
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	for _, step := range []struct {
		a float32
		n uint32
	}{{10, 2}, {100, 3}, {-1, 6}} {
		if err := a.Set(step.a); err != nil {
			log.Fatal(err)
		}
		if err := n.Set(step.n); err != nil {
			log.Fatal(err)
		}
		if err := g.Replay(); err != nil {
			log.Fatal(err)
		}
		ys, _ := y.ReadOn(ctx, s)
		fmt.Println(ys)
	}
	// A length above what the graph's buffers hold is refused at Set.
	fmt.Println(n.Set(7))
	// Output:
	// [10 20 3 4 5 6]
	// [100 200 300 4 5 6]
	// [-1 -2 -3 -4 -5 -6]
	// vkc: length 7 above 6, what the buffers of a live graph or a recording window sized by this param hold
}

// One allocation carved into tensors: views alias ranges of a buffer and
// go wherever a buffer goes. Here a KV-cache-like buffer of 4 rows of 3
// gets row 2 written by an op and is read back whole; a view of its
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
	if err := ops.Axpy(dev.Stream(), ops.Const(10), ops.Of(x), ops.Of(row2)); err != nil { // row2 += 10*x
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
	// [0 0 0 0 0 0 10 20 30 0 0 0]
	// 0x41a00000
	// a view past the end is refused
}
