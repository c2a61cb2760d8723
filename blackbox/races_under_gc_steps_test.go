package blackbox_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/vkcompute/vkc"
)

// The steps the stress tests are made of. Each step is a short program a
// user could write: it allocates its buffers, runs one kind of work on its
// worker's stream, checks every result against a host reference and closes
// what it allocated. Steps return errors instead of failing the test, so
// they can run on any goroutine; the first failed call or wrong result
// ends the step.

// stressTally counts what a stress test did, across its goroutines.
type stressTally struct {
	calls  atomic.Int64 // public calls made
	checks atomic.Int64 // results compared with the host reference
}

// stressShared is what the workers of one device share: a user kernel
// loaded once and launched by everyone, and an input buffer everyone reads
// and nobody writes after setup.
type stressShared struct {
	spec      vkc.KernelSpec
	kernel    *vkc.Kernel
	input     *vkc.Buffer[float32]
	inputData []float32
	// spares are kernels loaded ahead, each launched and closed once by
	// the "kernel closed" step (so a test can race Kernel.Close without
	// racing LoadKernel).
	spares chan *vkc.Kernel
}

// newStressShared loads affine (and spares more of it) and uploads the
// shared input. It also grows the host staging pool once (a capture of a
// host write), as a program's first captures do.
func newStressShared(dev *vkc.Device, spec vkc.KernelSpec, spares int) (*stressShared, error) {
	if err := warmStaging(dev); err != nil {
		return nil, err
	}
	k, err := dev.LoadKernel(spec)
	if err != nil {
		return nil, err
	}
	data := smallInts(rng(97), 1000, -8, 8)
	in, err := vkc.FromSlice(dev, data)
	if err != nil {
		return nil, errors.Join(err, k.Close())
	}
	sh := &stressShared{spec: spec, kernel: k, input: in, inputData: data, spares: make(chan *vkc.Kernel, spares)}
	for range spares {
		k, err := dev.LoadKernel(spec)
		if err != nil {
			return nil, errors.Join(err, sh.close())
		}
		sh.spares <- k
	}
	return sh, nil
}

// warmStaging captures a host write, so the upload pool holds a page
// (an empty one is kept) before workers capture concurrently.
func warmStaging(dev *vkc.Device) error {
	b, err := vkc.NewBuffer[float32](dev, 1)
	if err != nil {
		return err
	}
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error { return b.WriteOn(s, []float32{1}) })
	if err != nil {
		return errors.Join(err, b.Close())
	}
	return errors.Join(g.Close(), b.Close())
}

// close closes the input, the kernel and the spares left.
func (sh *stressShared) close() error {
	err := errors.Join(sh.input.Close(), sh.kernel.Close())
	for {
		select {
		case k := <-sh.spares:
			err = errors.Join(err, k.Close())
		default:
			return err
		}
	}
}

// stressWorker is one goroutine's share of a stress test.
type stressWorker struct {
	dev    *vkc.Device
	s      *vkc.Stream
	r      *rand.Rand
	shared *stressShared
	tally  *stressTally
}

// stressStep is one checked program on a worker's stream.
type stressStep struct {
	name string
	run  func(w *stressWorker) error
	// loads says the step calls LoadKernel (which racing Device.Close
	// awaits its fix; see capture_edges_test.go).
	loads bool
}

// stressSteps covers every constructor and every op of the package.
var stressSteps = []stressStep{
	{name: "elementwise", run: func(w *stressWorker) error { return w.elementwise(w.r.IntN(numElementwise)) }},
	{name: "typed fill and copy", run: (*stressWorker).typedFillCopy},
	{name: "reductions", run: (*stressWorker).reductions},
	{name: "matrices", run: (*stressWorker).matrices},
	{name: "user kernel load, launch, close", run: (*stressWorker).userKernel, loads: true},
	{name: "shared kernel and input", run: (*stressWorker).sharedKernel},
	{name: "kernel launched and closed", run: (*stressWorker).spareKernel},
	{name: "capture and replays", run: (*stressWorker).captureReplay},
	{name: "capture window step by step", run: (*stressWorker).manualWindow},
	{name: "queries, flush and sync", run: (*stressWorker).queries},
	{name: "buffer closed with work in flight", run: (*stressWorker).closeInFlight},
}

// call counts one public call and passes its error on.
func (w *stressWorker) call(err error) error {
	w.tally.calls.Add(1)
	return err
}

// owned closes, last first, what a step allocated; the first error of a
// close becomes the step's error if it had none.
type owned []interface{ Close() error }

func (o owned) closeAll(w *stressWorker, err *error) {
	for i := len(o) - 1; i >= 0; i-- {
		if cerr := w.call(o[i].Close()); cerr != nil && *err == nil {
			*err = cerr
		}
	}
}

func (w *stressWorker) upload(o *owned, xs []float32) (*vkc.Buffer[float32], error) {
	b, err := vkc.FromSlice(w.dev, xs)
	if w.call(err) != nil {
		return nil, err
	}
	*o = append(*o, b)
	return b, nil
}

// uploadOn is NewBuffer and a WriteOn on the worker's stream.
func (w *stressWorker) uploadOn(o *owned, xs []float32) (*vkc.Buffer[float32], error) {
	b, err := w.alloc(o, len(xs))
	if err != nil {
		return nil, err
	}
	return b, w.call(b.WriteOn(w.s, xs))
}

func (w *stressWorker) alloc(o *owned, n int) (*vkc.Buffer[float32], error) {
	b, err := vkc.NewBuffer[float32](w.dev, n)
	if w.call(err) != nil {
		return nil, err
	}
	*o = append(*o, b)
	return b, nil
}

// read reads b on the worker's stream, through ReadOn or ReadInto.
func (w *stressWorker) read(b *vkc.Buffer[float32]) ([]float32, error) {
	ctx := context.Background()
	if w.r.IntN(2) == 0 {
		got, err := b.ReadOn(ctx, w.s)
		return got, w.call(err)
	}
	got := make([]float32, b.Len())
	return got, w.call(b.ReadInto(ctx, w.s, got))
}

// expect compares got with want exactly (every value in the steps is a
// small integer, or a sum of few, so float32 arithmetic is exact).
func (w *stressWorker) expect(what string, want, got []float32) error {
	w.tally.checks.Add(1)
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s: element %d of %d is %g, want %g", what, i, len(want), got[i], want[i])
		}
	}
	return nil
}

// expectNear compares got with a float64 reference within tol(i).
func (w *stressWorker) expectNear(what string, want []float64, got []float32, tol func(i int) float64) error {
	w.tally.checks.Add(1)
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol(i)) {
			return fmt.Errorf("%s: element %d of %d is %g, want %g (|diff| %g > %g)", what, i, len(want), got[i], want[i], d, tol(i))
		}
	}
	return nil
}

// readExpect reads b on the worker's stream and compares it with want.
func (w *stressWorker) readExpect(what string, b *vkc.Buffer[float32], want []float32) error {
	got, err := w.read(b)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return w.expect(what, want, got)
}

// smallInts returns n integers in [lo, hi] as float32s.
func smallInts(r *rand.Rand, n, lo, hi int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(lo + r.IntN(hi-lo+1))
	}
	return xs
}

// nonZero returns n integers in [-8, 8] without 0, divisors for Div.
func nonZero(r *rand.Rand, n int) []float32 {
	xs := smallInts(r, n, 1, 8)
	for i := range xs {
		if r.IntN(2) == 0 {
			xs[i] = -xs[i]
		}
	}
	return xs
}

// The elementwise ops, by index.
const (
	kindAdd = iota
	kindSub
	kindMul
	kindDiv
	kindAxpy
	kindScale
	kindFill
	kindCopy
	numElementwise
)

// elementwise runs one elementwise op (Add, Sub, Mul, Div, Axpy, Scale,
// Fill or Copy) over a random length and checks every element.
func (w *stressWorker) elementwise(op int) (err error) {
	var o owned
	defer o.closeAll(w, &err)
	n := 1 + w.r.IntN(700)
	xs, ys := smallInts(w.r, n, -8, 8), nonZero(w.r, n)
	x, err := w.upload(&o, xs)
	if err != nil {
		return err
	}
	y, err := w.uploadOn(&o, ys)
	if err != nil {
		return err
	}
	z, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	want := make([]float32, n)
	out := z
	s := w.s
	switch op {
	case kindAdd:
		err = opAdd(s, x, y, z)
		for i := range want {
			want[i] = xs[i] + ys[i]
		}
	case kindSub:
		err = opSub(s, x, y, z)
		for i := range want {
			want[i] = xs[i] - ys[i]
		}
	case kindMul:
		err = opMul(s, x, y, z)
		for i := range want {
			want[i] = xs[i] * ys[i]
		}
	case kindDiv:
		if err := w.call(opDiv(s, x, y, z)); err != nil {
			return err
		}
		got, err := w.read(z)
		if err != nil {
			return err
		}
		ref := make([]float64, n)
		for i := range ref {
			ref[i] = float64(xs[i]) / float64(ys[i])
		}
		// Vulkan allows division 2.5 ULP.
		return w.expectNear("Div", ref, got, func(i int) float64 { return ulps(3, math.Abs(ref[i])) })
	case kindAxpy:
		err, out = opAxpy(s, 2, x, y), y
		for i := range want {
			want[i] = 2*xs[i] + ys[i]
		}
	case kindScale:
		err = opScale(s, -3, x, z)
		for i := range want {
			want[i] = -3 * xs[i]
		}
	case kindFill:
		v := float32(w.r.IntN(100))
		err = vkc.Fill(s, z, v)
		for i := range want {
			want[i] = v
		}
	case kindCopy:
		err = vkc.Copy(s, x, z)
		copy(want, xs)
	}
	if w.call(err) != nil {
		return err
	}
	return w.readExpect(fmt.Sprintf("elementwise op %d", op), out, want)
}

// typedFillCopy runs Fill and Copy on int32 and uint32 buffers, which
// move 32-bit words whatever they hold.
func (w *stressWorker) typedFillCopy() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	ctx := context.Background()
	n := 1 + w.r.IntN(500)
	is := make([]int32, n)
	for i := range is {
		is[i] = w.r.Int32() - math.MaxInt32/2
	}
	src, err := vkc.FromSlice(w.dev, is)
	if w.call(err) != nil {
		return err
	}
	o = append(o, src)
	dst, err := vkc.NewBuffer[int32](w.dev, n)
	if w.call(err) != nil {
		return err
	}
	o = append(o, dst)
	if err := w.call(vkc.Copy(w.s, src, dst)); err != nil {
		return err
	}
	got, err := dst.ReadOn(ctx, w.s)
	if w.call(err) != nil {
		return err
	}
	w.tally.checks.Add(1)
	for i := range is {
		if got[i] != is[i] {
			return fmt.Errorf("int32 Copy: element %d is %d, want %d", i, got[i], is[i])
		}
	}
	u, err := vkc.NewBuffer[uint32](w.dev, n)
	if w.call(err) != nil {
		return err
	}
	o = append(o, u)
	v := w.r.Uint32()
	if err := w.call(vkc.Fill(w.s, u, v)); err != nil {
		return err
	}
	us := make([]uint32, n)
	if err := w.call(u.ReadInto(ctx, w.s, us)); err != nil {
		return err
	}
	w.tally.checks.Add(1)
	for i, x := range us {
		if x != v {
			return fmt.Errorf("uint32 Fill: element %d is %d, want %d", i, x, v)
		}
	}
	return nil
}

// reductions checks Sum and a dot product (Mul, then Sum) over a random length (integers, so the
// result is exact in any order of summation).
func (w *stressWorker) reductions() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	n := 1 + w.r.IntN(3000)
	xs, ys := smallInts(w.r, n, -8, 8), smallInts(w.r, n, -8, 8)
	x, err := w.upload(&o, xs)
	if err != nil {
		return err
	}
	y, err := w.uploadOn(&o, ys)
	if err != nil {
		return err
	}
	out, err := w.alloc(&o, 1)
	if err != nil {
		return err
	}
	var sum, dot float32
	for i := range xs {
		sum += xs[i]
		dot += xs[i] * ys[i]
	}
	if err := w.call(opSum(w.s, x, out)); err != nil {
		return err
	}
	if err := w.readExpect("Sum", out, []float32{sum}); err != nil {
		return err
	}
	prod, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	if err := w.call(opMul(w.s, x, y, prod)); err != nil {
		return err
	}
	if err := w.call(opSum(w.s, prod, out)); err != nil {
		return err
	}
	return w.readExpect("Dot", out, []float32{dot})
}

// matrices checks Matmul and Transpose exactly and Softmax within the
// tolerance Vulkan allows exp.
func (w *stressWorker) matrices() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	m, k, n := 1+w.r.IntN(20), 1+w.r.IntN(20), 1+w.r.IntN(20)
	as, bs := smallInts(w.r, m*k, -4, 4), smallInts(w.r, k*n, -4, 4)
	a, err := w.upload(&o, as)
	if err != nil {
		return err
	}
	b, err := w.uploadOn(&o, bs)
	if err != nil {
		return err
	}
	c, err := w.alloc(&o, m*n)
	if err != nil {
		return err
	}
	if err := w.call(opMatmul(w.s, a, b, c, m, n, k)); err != nil {
		return err
	}
	want := make([]float32, m*n)
	for i := range m {
		for j := range n {
			for l := range k {
				want[i*n+j] += as[i*k+l] * bs[l*n+j]
			}
		}
	}
	if err := w.readExpect("Matmul", c, want); err != nil {
		return err
	}
	at, err := w.alloc(&o, m*k)
	if err != nil {
		return err
	}
	if err := w.call(opTranspose(w.s, a, at, m, k)); err != nil {
		return err
	}
	tw := make([]float32, m*k)
	for i := range m {
		for j := range k {
			tw[j*m+i] = as[i*k+j]
		}
	}
	if err := w.readExpect("Transpose", at, tw); err != nil {
		return err
	}
	rows, cols := 1+w.r.IntN(5), 1+w.r.IntN(300)
	xs := randFloats(w.r, rows*cols, -4, 4)
	src, err := w.upload(&o, xs)
	if err != nil {
		return err
	}
	dst, err := w.alloc(&o, rows*cols)
	if err != nil {
		return err
	}
	if err := w.call(opSoftmax(w.s, src, dst, rows, cols)); err != nil {
		return err
	}
	ref := make([]float64, rows*cols)
	for r := range rows {
		row := xs[r*cols : (r+1)*cols]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for j, v := range row {
			ref[r*cols+j] = math.Exp(float64(v) - mx)
			sum += ref[r*cols+j]
		}
		for j := range row {
			ref[r*cols+j] /= sum
		}
	}
	got, err := w.read(dst)
	if err != nil {
		return err
	}
	return w.expectNear("Softmax", ref, got, func(i int) float64 { return ulps(64, ref[i]) + 1e-12 })
}

// affineRef is affine's result for integer inputs: a*x + b, exact.
func affineRef(a, b float32, xs []float32) []float32 {
	out := make([]float32, len(xs))
	for i, v := range xs {
		out[i] = a*v + b
	}
	return out
}

// userKernel loads affine, launches it, checks the result and closes it.
func (w *stressWorker) userKernel() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	k, err := w.dev.LoadKernel(w.shared.spec)
	if w.call(err) != nil {
		return err
	}
	o = append(o, k)
	n := 1 + w.r.IntN(1000)
	xs := smallInts(w.r, n, -8, 8)
	x, err := w.upload(&o, xs)
	if err != nil {
		return err
	}
	y, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	if err := w.call(k.Launch(w.s, [3]uint32{ceilDiv(n, 64), 1, 1}, affinePush(2, -1, uint32(n)), x, y)); err != nil {
		return err
	}
	return w.readExpect("user kernel", y, affineRef(2, -1, xs))
}

// sharedKernel launches the shared kernel over the shared input, which
// every worker reads at once on its own stream.
func (w *stressWorker) sharedKernel() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	sh := w.shared
	n := len(sh.inputData)
	y, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	if err := w.call(sh.kernel.Launch(w.s, [3]uint32{ceilDiv(n, 64), 1, 1}, affinePush(-1, 3, uint32(n)), sh.input, y)); err != nil {
		return err
	}
	if err := w.readExpect("shared kernel", y, affineRef(-1, 3, sh.inputData)); err != nil {
		return err
	}
	return w.readExpect("shared input", sh.input, sh.inputData)
}

// spareKernel launches a spare kernel over the shared input, checks the
// result and closes the kernel; with no spare left it is sharedKernel.
func (w *stressWorker) spareKernel() (err error) {
	var k *vkc.Kernel
	select {
	case k = <-w.shared.spares:
	default:
		return w.sharedKernel()
	}
	var o owned
	defer o.closeAll(w, &err)
	o = append(o, k)
	sh := w.shared
	n := len(sh.inputData)
	y, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	if err := w.call(k.Launch(w.s, [3]uint32{ceilDiv(n, 64), 1, 1}, affinePush(2, 2, uint32(n)), sh.input, y)); err != nil {
		return err
	}
	return w.readExpect("spare kernel", y, affineRef(2, 2, sh.inputData))
}

// captureReplay captures a host write, an Axpy and a shared-kernel launch,
// replays the graph a few times and with fresh input, and checks both
// outputs after each.
func (w *stressWorker) captureReplay() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	n := 1 + w.r.IntN(500)
	xs := smallInts(w.r, n, -8, 8)
	x, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	acc, err := w.uploadOn(&o, make([]float32, n))
	if err != nil {
		return err
	}
	y, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	k := w.shared.kernel
	g, err := w.s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, xs); err != nil {
			return err
		}
		if err := opAxpy(s, 1, x, acc); err != nil {
			return err
		}
		return k.Launch(s, [3]uint32{ceilDiv(n, 64), 1, 1}, affinePush(3, 1, uint32(n)), x, y)
	})
	if w.call(err) != nil {
		return err
	}
	o = append(o, g)
	replays := 1 + w.r.IntN(3)
	for range replays {
		if err := w.call(g.Replay()); err != nil {
			return err
		}
	}
	want := make([]float32, n)
	for i := range want {
		want[i] = float32(1+replays) * xs[i]
	}
	if err := w.readExpect("replayed Axpy", acc, want); err != nil {
		return err
	}
	fresh := smallInts(w.r, n, -8, 8)
	if err := w.call(x.WriteOn(w.s, fresh)); err != nil {
		return err
	}
	if err := w.call(g.Replay()); err != nil {
		return err
	}
	for i := range want {
		want[i] += fresh[i]
	}
	if err := w.readExpect("replayed Axpy of a fresh input", acc, want); err != nil {
		return err
	}
	return w.readExpect("replayed kernel of a fresh input", y, affineRef(3, 1, fresh))
}

// closeInFlight closes a buffer right after a launch wrote it, without a
// sync: Close must wait for the launch, so a buffer allocated next (which
// may reuse the memory) keeps exactly what it was given.
func (w *stressWorker) closeInFlight() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	n := 1 + w.r.IntN(2000)
	x, err := w.upload(&o, smallInts(w.r, n, -8, 8))
	if err != nil {
		return err
	}
	y, err := vkc.FromSlice(w.dev, smallInts(w.r, n, -8, 8))
	if w.call(err) != nil {
		return err
	}
	if err := w.call(opAxpy(w.s, 1, x, y)); err != nil {
		return errors.Join(err, y.Close())
	}
	if err := w.call(y.Close()); err != nil {
		return err
	}
	pattern := smallInts(w.r, n, 100, 200)
	z, err := w.upload(&o, pattern)
	if err != nil {
		return err
	}
	if err := w.call(w.s.Sync(context.Background())); err != nil {
		return err
	}
	return w.readExpect("a buffer allocated after Close", z, pattern)
}

// manualWindow drives a window through PrepareCapture, BeginCapture and
// EndCapture and replays it, then records one more and aborts it: what the
// aborted window recorded never ran, so it reads as ErrUnwritten.
func (w *stressWorker) manualWindow() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	ctx := context.Background()
	n := 1 + w.r.IntN(300)
	xs, ys := smallInts(w.r, n, -8, 8), smallInts(w.r, n, -8, 8)
	x, err := w.upload(&o, xs)
	if err != nil {
		return err
	}
	y, err := w.uploadOn(&o, ys)
	if err != nil {
		return err
	}
	s := w.s
	if err := w.call(s.PrepareCapture()); err != nil {
		return err
	}
	for _, c := range []func() error{
		func() error { return opAxpy(s, 1, x, y) },
		func() error { return s.Sync(ctx) },
		s.BeginCapture,
		func() error { return opAxpy(s, 1, x, y) },
	} {
		if err := w.call(c()); err != nil {
			return errors.Join(err, s.AbortCapture())
		}
	}
	g, err := s.EndCapture()
	if w.call(err) != nil {
		return err
	}
	o = append(o, g)
	if err := w.call(g.Replay()); err != nil {
		return err
	}
	want := make([]float32, n)
	for i := range want {
		want[i] = 2*xs[i] + ys[i]
	}
	if err := w.readExpect("replayed window", y, want); err != nil {
		return err
	}
	for _, c := range []func() error{s.PrepareCapture, s.BeginCapture, func() error { return opScale(s, 2, x, y) }, s.AbortCapture} {
		if err := w.call(c()); err != nil {
			return errors.Join(err, s.AbortCapture())
		}
	}
	_, err = y.ReadOn(ctx, s)
	w.tally.checks.Add(1)
	switch {
	case w.call(err) == nil:
		return errors.New("read after an aborted window succeeded, want ErrUnwritten")
	case !errors.Is(err, vkc.ErrUnwritten):
		return fmt.Errorf("read after an aborted window: %w (want ErrUnwritten)", err)
	}
	return nil
}

// queries calls the device's queries, and the stream's Flush and Sync
// around a launch whose result it checks, while others use the device.
func (w *stressWorker) queries() (err error) {
	var o owned
	defer o.closeAll(w, &err)
	d := w.dev
	if d.Info().Name == "" || d.Slots() <= 0 {
		return fmt.Errorf("device queries: name %q, %d slots", d.Info().Name, d.Slots())
	}
	_ = d.MemoryStats()
	_ = d.LiveObjects()
	_ = d.LiveStaging()
	_, _, _ = d.ValidationMessages()
	_ = d.Validating()
	w.tally.calls.Add(7)
	if d.NewStream() == nil || d.StreamWithID(w.s.ID()) == nil || d.Stream() == nil {
		return errors.New("a stream of an open device is nil")
	}
	w.tally.calls.Add(3)
	n := 1 + w.r.IntN(300)
	xs := smallInts(w.r, n, -8, 8)
	x, err := w.upload(&o, xs)
	if err != nil {
		return err
	}
	y, err := w.alloc(&o, n)
	if err != nil {
		return err
	}
	if err := w.call(opScale(w.s, 2, x, y)); err != nil {
		return err
	}
	if err := w.call(w.s.Flush()); err != nil {
		return err
	}
	if err := w.call(w.s.Sync(context.Background())); err != nil {
		return err
	}
	want := make([]float32, n)
	for i, v := range xs {
		want[i] = 2 * v
	}
	return w.readExpect("Scale after Flush and Sync", y, want)
}
