package ops

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Zero tensors, tensors of a nil buffer, a nil stream, a nil param: an
// error from every op, never a panic.
func TestBadOperandsAreErrors(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	good := Of(upload[float32](t, dev, []float64{1, 2, 3, 4}), 4)
	out := Of(fresh[float32](t, dev, 4), 4)
	var zero Tensor[float32]
	nilBuf := Of[float32](nil, 4)
	for name, err := range map[string]error{
		"zero a":           Add(s, zero, good, out),
		"nil buffer":       Mul(s, good, nilBuf, out),
		"zero out":         Exp(s, good, zero),
		"nil stream":       Add(nil, good, good, out),
		"zero x of Sum":    Sum(s, zero, 0, out.Slice(0, 0, 1)),
		"zero idx":         Gather(s, Of(fresh[float32](t, dev, 4), 2, 2), Tensor[uint32]{}, Of(fresh[float32](t, dev, 4), 2, 2)),
		"nil param scalar": Scale(s, ParamOf[float32](nil), good, out),
		"zero Softmax y":   Softmax(s, good, 0, zero),
		"zero Convert":     Convert(s, zero, Of(fresh[int32](t, dev, 4))),
	} {
		assert.Error(t, err, name)
	}
}

// Wrong shapes, axes and layouts are errors naming the shapes.
func TestShapeErrorsNameTheShapes(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	a := Of(upload[float32](t, dev, make([]float64, 6)), 2, 3)
	b := Of(upload[float32](t, dev, make([]float64, 4)), 4)
	out := Of(fresh[float32](t, dev, 6), 2, 3)

	err := Add(s, a, b, out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[2 3]")
	assert.Contains(t, err.Error(), "[4]")

	err = Add(s, a, a, out.Reshape(3, 2))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "[3 2]")

	err = Sum(s, a, 2, out.Slice(1, 0, 1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "axis 2")
	err = Sum(s, a, 1, Of(fresh[float32](t, dev, 3), 3))
	require.Error(t, err, "out of the wrong shape")
	assert.Contains(t, err.Error(), "[2]")

	// A broadcast output writes some elements twice.
	row := Of(fresh[float32](t, dev, 3), 3).BroadcastTo(2, 3)
	err = Add(s, a, a, row)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than once")

	// Shapes past what 32-bit indices address are refused when built.
	big := Of(fresh[float32](t, dev, 4), 1<<20, 1<<20)
	assert.Error(t, big.Err())
	assert.Error(t, Add(s, big, big, big))
	huge := Strided(fresh[float32](t, dev, 4), 0, []int{2, 2}, []int{math.MaxInt32, 1})
	assert.Error(t, huge.Err())
}

// An output may be an input with the same layout (in place); an output
// overlapping an input any other way, through the buffer or through
// overlapping views, is ErrOverlap; disjoint views of one buffer are
// fine.
func TestOutputsAliasingInputs(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	ab := upload[float32](t, dev, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9})
	a := Of(ab, 3, 3)
	require.NoError(t, Add(s, a, a, a), "in place")
	assert.Equal(t, []float64{2, 4, 6, 8, 10, 12, 14, 16, 18}, download(t, ab))

	err := Add(s, a, a, a.T())
	assert.True(t, errors.Is(err, vkc.ErrOverlap), "a transposed into itself: %v", err)
	err = Transpose(s, a, a)
	assert.True(t, errors.Is(err, vkc.ErrOverlap), "Transpose in place: %v", err)
	err = Sum(s, a, 1, a.Slice(1, 0, 1))
	assert.True(t, errors.Is(err, vkc.ErrOverlap), "Sum into its input: %v", err)

	buf := upload[float32](t, dev, []float64{1, 2, 3, 4, 5, 6, 7, 8})
	v1, err := buf.View(0, 4)
	require.NoError(t, err)
	defer v1.Close()
	v2, err := buf.View(2, 4)
	require.NoError(t, err)
	defer v2.Close()
	v3, err := buf.View(4, 4)
	require.NoError(t, err)
	defer v3.Close()
	err = Relu(s, Of(v1), Of(v2))
	assert.True(t, errors.Is(err, vkc.ErrOverlap), "overlapping views: %v", err)
	require.NoError(t, Scale(s, Const(-1), Of(v1), Of(v3)), "disjoint views")
	assert.Equal(t, []float64{1, 2, 3, 4, -1, -2, -3, -4}, download(t, buf))

	// Softmax and the norms may work in place.
	x := upload[float32](t, dev, []float64{0, 0, 0, 0})
	require.NoError(t, Softmax(s, Of(x, 2, 2), -1, Of(x, 2, 2)))
	assert.Equal(t, []float64{0.5, 0.5, 0.5, 0.5}, download(t, x))
	// A weight sharing memory with the output is refused.
	err = RMSNorm(s, Of(x, 2, 2), Of(x, 4).Slice(0, 0, 2), Tensor[float32]{}, Const(0), Of(x, 2, 2))
	assert.True(t, errors.Is(err, vkc.ErrOverlap), "weight in y: %v", err)
}

// A write-only output no work has written reads back what the op wrote,
// and an input no work wrote leaves the output unwritten rather than
// computed from stale bytes.
func TestUnwrittenOutputsAndInputs(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	x := Of(upload[float32](t, dev, []float64{1, 4, 9, 16}), 4)
	yb := fresh[float32](t, dev, 4)
	require.NoError(t, Sqrt(s, x, Of(yb)))
	assert.Equal(t, []float64{1, 2, 3, 4}, download(t, yb))

	never := fresh[float32](t, dev, 4)
	zb := fresh[float32](t, dev, 4)
	require.NoError(t, Add(s, x, Of(never), Of(zb)))
	_, err := zb.Read(context.Background())
	assert.True(t, errors.Is(err, vkc.ErrUnwritten), "an output of an unwritten input: %v", err)
}

// Dynamic operands must agree: one param, the output dynamic when an
// input is (unless the op reduces the dynamic axis), the param within the
// capacity, never a broadcast axis 0.
func TestDynamicOperandsMustAgree(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	p, err := vkc.NewParam[uint32](dev, 2)
	require.NoError(t, err)
	defer p.Close()
	q, err := vkc.NewParam[uint32](dev, 2)
	require.NoError(t, err)
	defer q.Close()
	x := Of(upload[float32](t, dev, make([]float64, 8)), 4, 2)
	y := Of(fresh[float32](t, dev, 8), 4, 2)
	assert.Error(t, Add(s, x.Dynamic(p), x, y), "dynamic input, static output")
	assert.Error(t, Add(s, x.Dynamic(q), x, y.Dynamic(p)), "two params")
	assert.Error(t, Softmax(s, x.Dynamic(p), 0, y), "normalising the dynamic axis into a static output")
	assert.Error(t, Sum(s, x.Dynamic(p), 1, Of(fresh[float32](t, dev, 4), 4)), "a reduction keeping the dynamic axis into a static output")
	assert.Error(t, Sum(s, x, 0, Of(fresh[float32](t, dev, 2), 2).Dynamic(p)), "a dynamic output of the reduced axis 0")
	assert.Error(t, Sum(s, x.Dynamic(q), 1, Of(fresh[float32](t, dev, 4), 4).Dynamic(p)), "a reduction over two params")
	idx := Of(upload[uint32](t, dev, []float64{0, 1, 0, 1}), 4)
	assert.Error(t, ScatterAdd(s, x, idx, y.Dynamic(p)), "ScatterAdd into a dynamic out")
	assert.Error(t, ScatterAdd(s, x.Dynamic(p), idx.Dynamic(q), y), "ScatterAdd over two params")
	require.NoError(t, p.Set(5))
	assert.Error(t, Relu(s, x.Dynamic(p), y.Dynamic(p)), "rows past the capacity")
	require.NoError(t, p.Set(3))
	require.NoError(t, Relu(s, x.Dynamic(p), y.Dynamic(p)))
	assert.Error(t, x.Dynamic(nil).Err())
}

// Scalars of the wrong precision, and tensors of another device, are
// refused.
func TestScalarsAndDevicesMustMatch(t *testing.T) {
	dev := openTest(t)
	other := openTest(t)
	s := dev.Stream()
	x := Of(upload[float32](t, dev, []float64{1, 2}), 2)
	y := Of(fresh[float32](t, dev, 2), 2)
	p64, err := vkc.NewParam[float64](dev, 2)
	require.NoError(t, err)
	defer p64.Close()
	err = Scale(s, ParamOf(p64), x, y)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "float32")
	elsewhere := Of(upload[float32](t, other, []float64{1, 2}), 2)
	err = Add(s, x, elsewhere, y)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another device")
	pOther, err := vkc.NewParam[float32](other, 1)
	require.NoError(t, err)
	defer pOther.Close()
	assert.Error(t, Scale(s, ParamOf(pOther), x, y))
}

// Integer division by zero is 0, not a fault; float division is IEEE's.
func TestDivisionByZero(t *testing.T) {
	dev := openTest(t)
	s := dev.Stream()
	ib := fresh[int32](t, dev, 2)
	require.NoError(t, Div(s, Of(upload[int32](t, dev, []float64{7, -7})), Of(upload[int32](t, dev, []float64{0, 2})), Of(ib)))
	assert.Equal(t, []float64{0, -3}, download(t, ib))
	fb := fresh[float32](t, dev, 2)
	require.NoError(t, Div(s, Of(upload[float32](t, dev, []float64{1, -1})), Of(upload[float32](t, dev, []float64{0, 0})), Of(fb)))
	assert.Equal(t, []float64{math.Inf(1), math.Inf(-1)}, download(t, fb))
}

// Kernels load once per device and the cache forgets a device when it
// closes.
func TestKernelCachePerDevice(t *testing.T) {
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	before := cachedDevices()
	x := Of(upload[float32](t, dev, []float64{1, 2}), 2)
	require.NoError(t, Relu(dev.Stream(), x, x))
	require.NoError(t, Relu(dev.Stream(), x, x))
	dk, err := kernelsOf(dev)
	require.NoError(t, err)
	assert.Len(t, dk.kernels, 1)
	assert.Equal(t, before+1, cachedDevices())
	require.NoError(t, dev.Close())
	assert.Equal(t, before, cachedDevices())
	assert.Empty(t, dev.LiveObjects())
	assert.Error(t, Relu(dev.Stream(), x, x), "a closed device")
	assert.Equal(t, before, cachedDevices(), "a closed device is not cached again")
}

// A device closing while another goroutine runs two-pass reductions
// (which hold their scratch while they load kernels) closes: each Sum
// either works or is refused as closed.
func TestCloseDuringTwoPassSums(t *testing.T) {
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	const n = 1 << 17 // more than one group's share: two passes
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 1
	}
	xf := Of(upload[float32](t, dev, vs), n)
	xi := Of(upload[int32](t, dev, vs), n)
	of, oi := Of(fresh[float32](t, dev, 1)), Of(fresh[int32](t, dev, 1))
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		s := dev.NewStream()
		for i := 0; ; i++ {
			err := errors.Join(Sum(s, xf, 0, of), Sum(s, xi, 0, oi))
			if i == 0 {
				close(started)
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- dev.Close() }()
	timeout := time.After(60 * time.Second)
	for range 2 {
		select {
		case err := <-closed:
			require.NoError(t, err)
			closed = nil
		case err := <-done:
			assert.ErrorIs(t, err, vkc.ErrClosed)
			done = nil
		case <-timeout:
			t.Fatal("the device's Close or the Sums still running after a minute")
		}
	}
	assert.Empty(t, dev.LiveObjects())
}

// The device's close releases the ops cache while an op holds its
// scratch: it marks the cache closed without waiting for the scratch, a
// kernel lookup then fails as closed (loading nothing), and the close
// ends once the op lets the scratch go.
func TestCloseWhileScratchHeld(t *testing.T) {
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	dk, err := kernelsOf(dev)
	require.NoError(t, err)
	_, release, err := scratchOf[float32](dk, 16)
	require.NoError(t, err)
	closed := make(chan error, 1)
	go func() { closed <- dev.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if dk.mu.TryLock() {
			done := dk.closed
			dk.mu.Unlock()
			if done {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the close holds the cache's lock while it waits for the scratch")
		}
		time.Sleep(time.Millisecond)
	}
	_, err = dk.kernel("reduce_f32")
	assert.ErrorIs(t, err, vkc.ErrClosed)
	release()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("the device's Close still running a minute after the scratch was released")
	}
	_, _, err = scratchOf[float32](dk, 16)
	assert.ErrorIs(t, err, vkc.ErrClosed)
	assert.Nil(t, dk.kernels)
	assert.Empty(t, dev.LiveObjects())
}

// Ops on one device from several goroutines, each on its own stream,
// load each kernel once and compute the same as alone.
func TestConcurrentFirstUse(t *testing.T) {
	dev := openTest(t)
	const workers = 4
	errs := make(chan error, workers)
	outs := make([]*vkc.Buffer[float32], workers)
	x := Of(upload[float32](t, dev, []float64{-1, 2, -3, 4}), 4)
	for w := range workers {
		outs[w] = fresh[float32](t, dev, 4)
		go func() {
			s := dev.NewStream()
			errs <- errors.Join(Relu(s, x, Of(outs[w])), syncStream(s))
		}()
	}
	for range workers {
		require.NoError(t, <-errs)
	}
	for _, o := range outs {
		assert.Equal(t, []float64{0, 2, 0, 4}, download(t, o))
	}
	dk, err := kernelsOf(dev)
	require.NoError(t, err)
	assert.Len(t, dk.kernels, 1)
}

// syncStream waits for s's work.
func syncStream(s *vkc.Stream) error { return s.Sync(context.Background()) }
