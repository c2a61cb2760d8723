package blackbox_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/alloc"
)

// Attacks on the public API, each named after what it attacks: sizes that
// overflow, arguments that alias, nil receivers and contexts, and captured
// functions that are nil or panic. Each asserts the exact behaviour a user
// is promised (an error, never a panic; the buffers untouched; the slot
// usable afterwards); openDevice fails any of them on a validation message or
// a Vulkan object left alive.

// sentinel is a buffer with a recognisable pattern, which a refused call
// must leave intact.
type sentinel struct {
	buf  *vkc.Buffer[float32]
	want []float32
}

// newSentinel writes a recognisable pattern into a fresh buffer on dev.
func newSentinel(t testing.TB, dev *vkc.Device) *sentinel {
	t.Helper()
	want := make([]float32, 777)
	for i := range want {
		want[i] = float32(i)*0.5 - 100
	}
	return &sentinel{buf: upload(t, dev, want), want: want}
}

// refuse runs a call that must fail (and must not panic), checks the error
// against sentinel errors where the call has one, then checks that the
// sentinel still reads back intact.
func refuse(t *testing.T, s *sentinel, what string, call func() error, is ...error) {
	t.Helper()
	var err error
	require.NotPanics(t, func() { err = call() }, what)
	require.Error(t, err, what)
	for _, target := range is {
		require.ErrorIs(t, err, target, what)
	}
	got, err := s.buf.Read(context.Background())
	require.NoError(t, err, "sentinel unreadable after %s", what)
	require.Equal(t, s.want, got, "sentinel changed after %s", what)
}

// wraps is an element count whose byte size (n*4) overflows 64 bits to 4:
// without an overflow check it passes every limit as a 4-byte request.
const wraps = 1<<62 + 1

func TestAttackBufferLengthWhoseByteSizeOverflows(t *testing.T) {
	dev := openDevice(t)
	s := newSentinel(t, dev)
	live := dev.MemoryStats().LiveClaims
	for _, n := range []int{wraps, math.MaxInt/f32Size + 1, math.MaxInt} {
		var b *vkc.Buffer[float32]
		refuse(t, s, "NewBuffer whose byte size overflows", func() error {
			var err error
			b, err = vkc.NewBuffer[float32](dev, n)
			return err
		}, alloc.ErrTooLarge)
		require.Nil(t, b)
		if b != nil {
			// What the user meets next when the length was accepted.
			require.NotPanics(t, func() { _, _ = b.Read(context.Background()) }, "Read of a buffer of %d elements", n)
		}
	}
	assert.Equal(t, live, dev.MemoryStats().LiveClaims, "a refused length kept a claim")
}

func TestAttackMatmulShapeProductsThatOverflow(t *testing.T) {
	dev := openDevice(t)
	s := newSentinel(t, dev)
	st := dev.Stream()
	four, sixteen := ramp(4, 1, 1), ramp(16, 1, 1)
	for _, c := range []struct {
		name            string
		m, n, k         int
		aLen, bLen, cLn int
	}{
		// Each shape's products wrap to the buffers' lengths modulo 2^64.
		{"m*k and m*n wrap", wraps, 4, 4, 4, 16, 4},
		{"k*n and m*n wrap", 4, wraps, 4, 16, 4, 4},
		{"m*k and k*n wrap", 4, 4, wraps, 4, 4, 16},
	} {
		a := upload(t, dev, ramp(c.aLen, 1, 1))
		b := upload(t, dev, ramp(c.bLen, 1, 2))
		out := upload(t, dev, ramp(c.cLn, 1, 50))
		refuse(t, s, "Matmul "+c.name, func() error { return opMatmul(st, a, b, out, c.m, c.n, c.k) })
		require.Equal(t, ramp(c.cLn, 1, 50), readAll(t, out), "Matmul %s wrote its output", c.name)
	}
	src, dst := upload(t, dev, four), upload(t, dev, sixteen)
	dst4 := upload(t, dev, ramp(4, 1, 9))
	refuse(t, s, "Transpose rows*cols wraps", func() error { return opTranspose(st, src, dst4, wraps, 4) })
	refuse(t, s, "Transpose cols*rows wraps", func() error { return opTranspose(st, src, dst4, 4, wraps) })
	refuse(t, s, "Softmax rows*cols wraps", func() error { return opSoftmax(st, src, dst4, wraps, 4) })
	refuse(t, s, "Softmax cols*rows wraps", func() error { return opSoftmax(st, src, dst4, 4, wraps) })
	src16 := upload(t, dev, ramp(16, 1, 5))
	refuse(t, s, "Transpose rows*cols wraps to 16", func() error { return opTranspose(st, src16, dst, wraps, 16) })
	refuse(t, s, "Softmax rows*cols wraps to 16", func() error { return opSoftmax(st, src16, dst, 16, wraps) })
	assert.Equal(t, ramp(4, 1, 9), readAll(t, dst4), "a refused shape wrote its output")
	assert.Equal(t, sixteen, readAll(t, dst), "a refused shape wrote its output")
}

// vkCmdCopyBuffer forbids overlapping source and destination regions
// (VUID-vkCmdCopyBuffer-pRegions-00117): a copy of a buffer onto itself is
// refused before it reaches the driver, and the buffer keeps its contents.
func TestAttackCopyOntoItself(t *testing.T) {
	dev := openDevice(t)
	s := newSentinel(t, dev)
	x := upload(t, dev, ramp(64, 1, 3))
	aliasCopy := *x // a copy of the handle
	alias := &aliasCopy
	refuse(t, s, "Copy(x, x)", func() error { return vkc.Copy(dev.Stream(), x, x) })
	refuse(t, s, "Copy through two handles of one buffer", func() error { return vkc.Copy(dev.NewStream(), x, alias) })
	require.Equal(t, ramp(64, 1, 3), readAll(t, x))
}

// Ops whose kernels read an input while other invocations write the
// output cannot run in place: Matmul with C aliasing A or B, Transpose with
// dst aliasing src, Sum with its output in its input. They are refused; the elementwise ops, where every
// invocation reads and writes only its own element, and Softmax, whose
// rows are read and written by one invocation each, keep working in place.
func TestAttackAliasedOutputs(t *testing.T) {
	dev := openDevice(t)
	s := newSentinel(t, dev)
	st := dev.Stream()
	sq := ramp(16, 1, 1) // 4x4
	a := upload(t, dev, sq)
	b := upload(t, dev, ramp(16, 1, 2))
	c1 := upload(t, dev, []float32{-3})
	refuse(t, s, "Matmul C = A", func() error { return opMatmul(st, a, b, a, 4, 4, 4) })
	refuse(t, s, "Matmul C = B", func() error { return opMatmul(st, a, b, b, 4, 4, 4) })
	refuse(t, s, "Transpose in place", func() error { return opTranspose(st, a, a, 4, 4) })
	refuse(t, s, "Sum into its input", func() error { return opSum(st, a, view(t, a, 0, 1)) })
	refuse(t, s, "Sum of one element into itself", func() error { return opSum(st, c1, c1) }, vkc.ErrOverlap)
	require.Equal(t, sq, readAll(t, a))
	require.Equal(t, ramp(16, 1, 2), readAll(t, b))
	require.Equal(t, []float32{-3}, readAll(t, c1))

	// A·A reads A twice and writes C: allowed.
	c := newBuffer[float32](t, dev, 16)
	require.NoError(t, opMatmul(st, a, a, c, 4, 4, 4))
	want := make([]float32, 16)
	for i := range 4 {
		for j := range 4 {
			for k := range 4 {
				want[i*4+j] += sq[i*4+k] * sq[k*4+j]
			}
		}
	}
	require.Equal(t, want, readAll(t, c))

	// Elementwise in place: x = x + y, y = 2*y + y, y = 3*y.
	xs, ys := ramp(32, 1, 1), ramp(32, 1, 100)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	require.NoError(t, opAdd(st, x, y, x))
	require.NoError(t, opAxpy(st, 2, y, y))
	require.NoError(t, opScale(st, 3, y, y))
	for i := range xs {
		xs[i] += ys[i]
		ys[i] = 3 * (2*ys[i] + ys[i])
	}
	require.Equal(t, xs, readAll(t, x))
	require.Equal(t, ys, readAll(t, y))

	// A dot product (a product, then its sum) into its own one-element
	// input, and x·x.
	one := upload(t, dev, []float32{-3})
	require.NoError(t, opDot(t, st, one, one, one))
	require.Equal(t, []float32{9}, readAll(t, one))
	sq2 := newBuffer[float32](t, dev, 1)
	require.NoError(t, opDot(t, st, x, x, sq2))
	var dot float32
	for _, v := range xs {
		dot += v * v
	}
	require.Equal(t, []float32{dot}, readAll(t, sq2))

	// Softmax in place equals Softmax into another buffer.
	rows := randFloats(rng(71), 3*40, -4, 4)
	in, ref := upload(t, dev, rows), newBuffer[float32](t, dev, len(rows))
	require.NoError(t, opSoftmax(st, in, ref, 3, 40))
	require.NoError(t, opSoftmax(st, in, in, 3, 40))
	require.Equal(t, readAll(t, ref), readAll(t, in))
}

// A nil context is a programming error that must come back as an error
// (waiting on pending work would call its Done and panic), and it must not
// disturb the work it refused to wait for.
func TestAttackNilContext(t *testing.T) {
	dev := openDevice(t)
	s := newSentinel(t, dev)
	st := dev.NewStream()
	var nilCtx context.Context
	x := upload(t, dev, ramp(64, 1, 1))
	y := upload(t, dev, ramp(64, 1, 10))
	out := make([]float32, 64)
	pending := func() {
		require.NoError(t, opAxpy(st, 1, x, y))
		require.NoError(t, st.Flush()) // in flight: a wait would need the context
		require.NoError(t, opAxpy(st, 1, x, y))
	}
	calls := map[string]func() error{
		"Read":     func() error { _, err := y.Read(nilCtx); return err },
		"ReadOn":   func() error { _, err := y.ReadOn(nilCtx, st); return err },
		"ReadInto": func() error { return y.ReadInto(nilCtx, st, out) },
		"Sync":     func() error { return st.Sync(nilCtx) },
	}
	want := ramp(64, 1, 10)
	for name, call := range calls {
		pending()
		refuse(t, s, name+" with a nil context", call)
		for i := range want {
			want[i] += 2 * float32(i+1)
		}
		got, err := y.ReadOn(context.Background(), st)
		require.NoError(t, err, "after %s", name)
		require.Equal(t, want, got, "after %s", name)
	}
}

// Every exported method of a nil or zero *Device, *Stream, *Graph and
// *Kernel returns an error, or a zero value for a pure query; none panics.
func TestAttackNilAndZeroReceivers(t *testing.T) {
	ctx := context.Background()
	dev := openDevice(t)
	buf := upload(t, dev, ramp(4, 1, 1))
	for _, d := range []*vkc.Device{nil, {}} {
		require.NotPanics(t, func() {
			assert.Zero(t, d.Info())
			assert.Zero(t, d.Slots())
			assert.Zero(t, d.MemoryStats())
			errs, warns, recent := d.ValidationMessages()
			assert.Zero(t, errs+warns)
			assert.Empty(t, recent)
			assert.False(t, d.Validating())
			assert.Empty(t, d.LiveObjects())
			assert.Zero(t, d.LiveStaging())
			_, err := d.LoadKernel(affineSpec(t))
			assert.Error(t, err)
			_, err = vkc.NewBuffer[float32](d, 4)
			assert.Error(t, err)
			_, err = vkc.FromSlice(d, []float32{1})
			assert.Error(t, err)
			for _, st := range []*vkc.Stream{d.Stream(), d.NewStream(), d.StreamWithID(3)} {
				assert.Error(t, st.Sync(ctx))
				assert.Error(t, st.Flush())
				assert.Error(t, vkc.Fill(st, buf, 1))
				assert.Error(t, buf.WriteOn(st, []float32{1, 2, 3, 4}))
				_, err := buf.ReadOn(ctx, st)
				assert.Error(t, err)
			}
			assert.NoError(t, d.Close(), "closing nothing is harmless")
		}, "device %#v", d)
	}
	for _, st := range []*vkc.Stream{nil, {}} {
		require.NotPanics(t, func() {
			assert.Zero(t, st.ID())
			assert.Nil(t, st.Device())
			assert.Error(t, st.Sync(ctx))
			assert.Error(t, st.Flush())
			assert.Error(t, st.PrepareCapture())
			assert.Error(t, st.BeginCapture())
			_, err := st.EndCapture()
			assert.Error(t, err)
			assert.Error(t, st.AbortCapture())
			_, err = st.Capture(func(*vkc.Stream) error { return nil })
			assert.Error(t, err)
			assert.Error(t, vkc.Fill(st, buf, 1))
			assert.Error(t, vkc.Copy(st, buf, buf))
			assert.Error(t, buf.WriteOn(st, []float32{1, 2, 3, 4}))
			_, err = buf.ReadOn(ctx, st)
			assert.Error(t, err)
		}, "stream %#v", st)
	}
	for _, g := range []*vkc.Graph{nil, {}} {
		require.NotPanics(t, func() {
			assert.Error(t, g.Replay())
			assert.NoError(t, g.Close(), "closing nothing is harmless")
		}, "graph %#v", g)
	}
	for _, k := range []*vkc.Kernel{nil, {}} {
		require.NotPanics(t, func() {
			assert.Empty(t, k.Name())
			assert.Error(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil))
			assert.Error(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(1, 0, 4), buf, buf))
			assert.NoError(t, k.Close(), "closing nothing is harmless")
		}, "kernel %#v", k)
	}
	var nilBuf *vkc.Buffer[float32]
	for _, b := range []*vkc.Buffer[float32]{nilBuf, {}} {
		require.NotPanics(t, func() {
			assert.Error(t, b.WriteOn(dev.Stream(), []float32{1}))
			_, err := b.ReadOn(ctx, dev.Stream())
			assert.Error(t, err)
			assert.Error(t, b.ReadInto(ctx, dev.Stream(), make([]float32, 1)))
		})
	}
	assert.Equal(t, ramp(4, 1, 1), readAll(t, buf))
}

// Capture(nil) is an error that leaves the slot idle: a capture and eager
// work on it succeed afterwards.
func TestAttackCaptureNilFunction(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	var g *vkc.Graph
	var err error
	require.NotPanics(t, func() { g, err = s.Capture(nil) })
	require.Error(t, err)
	require.Nil(t, g)
	requireSlotIdle(t, s)
}

// capturePanic is the value the attacked captured functions panic with.
type capturePanic struct{ run int }

// capturePanicking runs s.Capture(fn) and returns what it panicked with.
func capturePanicking(t *testing.T, s *vkc.Stream, fn func(*vkc.Stream) error) (recovered any) {
	t.Helper()
	defer func() { recovered = recover() }()
	g, err := s.Capture(fn)
	t.Errorf("Capture returned (%v, %v) instead of panicking", g, err)
	return nil
}

// requireSlotIdle checks that s's slot holds no window: a neighbour on the
// slot runs eager work (not refused), the slot captures and replays again,
// and eager work on s itself runs.
func requireSlotIdle(t *testing.T, s *vkc.Stream) {
	t.Helper()
	dev := s.Device()
	axpyRuns(t, dev.StreamWithID(s.ID()+uint64(dev.Slots())))
	xs, ys := ramp(16, 1, 1), ramp(16, 2, 5)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err, "the slot captures again")
	require.NoError(t, g.Replay())
	require.Equal(t, axpyRef(2, xs, ys), read(t, s, y))
	require.NoError(t, g.Close())
	axpyRuns(t, s)
	require.NoError(t, x.Close())
	require.NoError(t, y.Close())
}

// A panic in the warmup aborts the window (the slot is idle again) and
// then propagates with the original value: a panic is a programming error
// that Capture must not swallow, nor leave the slot Prepared behind it.
func TestAttackCapturePanicInWarmup(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	x, y := upload(t, dev, ramp(16, 1, 1)), upload(t, dev, ramp(16, 0, 3))
	runs := 0
	got := capturePanicking(t, s, func(s *vkc.Stream) error {
		runs++
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		panic(&capturePanic{run: runs})
	})
	require.Equal(t, &capturePanic{run: 1}, got, "the original panic value propagates")
	require.Equal(t, 1, runs)
	require.Equal(t, axpyRef(1, ramp(16, 1, 1), ramp(16, 0, 3)), read(t, s, y), "the warmup's launch ran")
	requireSlotIdle(t, s)
}

// A panic in the recorded run aborts the window: the slot stops recording
// (its work runs again, a neighbour is not refused), the allocator grows
// again (a new page is no longer refused device-wide), what the window
// recorded reads as unwritten (it never ran), and the panic propagates.
func TestAttackCapturePanicInRecordedRun(t *testing.T) {
	const page = 64 << 10
	dev := openDevice(t, vkc.WithPageSize(page))
	s := dev.NewStream()
	x, y := upload(t, dev, ramp(16, 1, 1)), upload(t, dev, ramp(16, 0, 3))
	runs := 0
	got := capturePanicking(t, s, func(s *vkc.Stream) error {
		runs++
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		if runs == 2 {
			panic(&capturePanic{run: runs})
		}
		return nil
	})
	require.Equal(t, &capturePanic{run: 2}, got, "the original panic value propagates")

	big, err := vkc.NewBuffer[float32](dev, page/f32Size)
	require.NoError(t, err, "a new page after the panic")
	require.NoError(t, vkc.Fill(dev.NewStream(), big, 2))
	require.NoError(t, big.Close())
	requireUnwritten(t, s, y, vkc.ErrCaptureState)
	require.Equal(t, ramp(16, 1, 1), read(t, s, x))
	requireSlotIdle(t, s)
}

// Kernel.Close racing Device.Close: both want to destroy the pipeline.
// It is destroyed exactly once, before the device, whichever comes first;
// neither call fails, nothing stays alive and the layer is silent.
func TestAttackKernelCloseRacingDeviceClose(t *testing.T) {
	if !isolated(t) {
		return
	}
	spec := affineSpec(t)
	for round := range 15 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		ks := make([]*vkc.Kernel, 4)
		for i := range ks {
			ks[i], err = dev.LoadKernel(spec)
			require.NoError(t, err)
		}
		big, err := vkc.NewBuffer[float32](dev, 4<<20)
		require.NoError(t, err)
		require.NoError(t, vkc.Fill(dev.NewStream(), big, 1)) // pending: closes wait for it
		start := make(chan struct{})
		errs := make(chan error, len(ks))
		for _, k := range ks {
			go func() {
				<-start
				errs <- k.Close()
			}()
		}
		close(start)
		require.NoError(t, dev.Close(), "round %d", round)
		for range ks {
			require.NoError(t, <-errs, "round %d", round)
		}
		closeAndCheck(t, dev)
	}
}
