package vkc

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// updateSetFaults opens a device on which a test makes the next UpdateSet
// calls fail (fail(n, cause): the next n; heal: none more).
type updateSetFaults struct {
	name string
	open func(t *testing.T) (dev *Device, fail func(n int, cause error), heal func())
}

var texelFaultDevices = []updateSetFaults{
	{"lavapipe", func(t *testing.T) (*Device, func(int, error), func()) {
		dev, fd := openFaulty(t)
		return dev, func(n int, cause error) { fd.failNext(callUpdateSet, n, cause) }, func() { fd.heal(callUpdateSet) }
	}},
	{"hostdev", func(t *testing.T) (*Device, func(int, error), func()) {
		host := hostdev.New(hostdev.Options{})
		dev := openTest(t, withRecorderDevice(func() (recorder.Device, error) { return host, nil }))
		return dev, func(n int, cause error) {
				if n == 1 {
					host.FailNth(hostdev.UpdateSet, 1, cause)
				} else {
					host.FailFrom(hostdev.UpdateSet, 0, cause)
				}
			}, func() {
				host.Heal(hostdev.UpdateSet)
			}
	}},
}

// requireUnwrittenWith checks that reading b fails with ErrUnwritten
// unwrapping to cause.
func requireUnwrittenWith[T Element](t *testing.T, s *Stream, b *Buffer[T], cause error, what string) {
	t.Helper()
	_, err := b.ReadOn(context.Background(), s)
	require.ErrorIs(t, err, ErrUnwritten, what)
	require.ErrorIs(t, err, cause, what)
}

// texelSets is the count of descriptor sets and texel views alive.
func texelSets(dev *Device) [2]int64 {
	live := dev.LiveObjects()
	return [2]int64{live["descriptor-set"], live["buffer-view"]}
}

// A texel Matmul whose descriptor-set write fails (a texel binding's view
// refused), on lavapipe behind a faulty wrapper and on the host device:
// the call returns the failure, its output (fresh or written before)
// reads as ErrUnwritten unwrapping to it, a launch reading that output
// passes it on, the failed set leaves no set or view behind, and once the
// fault clears the same call computes the product. In a recording window
// the failure dooms the window: EndCapture returns it, the recorded output
// reads unwritten with it, and the stream captures again.
func TestTexelMatmulUpdateSetFault(t *testing.T) {
	for _, fd := range texelFaultDevices {
		t.Run(fd.name, func(t *testing.T) {
			dev, fail, heal := fd.open(t)
			s := dev.Stream()
			const m, n, k = 8, 16, 24
			as, bs := ramp(m*k, -20), ramp(k*n, -50)
			in := func(xs []float32) *Buffer[float32] { return texelView(t, dev, xs) }
			a, b := in(as), in(bs)
			require.Equal(t, "matmul_texel", dev.matmulKernel("", n, k, a.core, b.core))
			want := make([]float32, m*n)
			for i := range m {
				for j := range n {
					var sum float64
					for p := range k {
						sum += float64(as[i*k+p]) * float64(bs[p*n+j])
					}
					want[i*n+j] = float32(sum)
				}
			}
			c, err := NewBuffer[float32](dev, m*n)
			require.NoError(t, err)
			old, err := FromSlice(dev, ramp(m*n, 7))
			require.NoError(t, err)

			before := texelSets(dev)
			cause := injected("vkCreateBufferView", errs.OutOfMemory)
			fail(1, cause)
			require.ErrorIs(t, Matmul(s, a, b, c, m, n, k), cause)
			requireUnwrittenWith(t, s, c, cause, "a fresh C")
			assert.Equal(t, before, texelSets(dev), "the failed set is freed with its views")

			again := injected("vkCreateBufferView", errs.OutOfMemory)
			fail(1, again)
			require.ErrorIs(t, Matmul(s, a, b, old, m, n, k), again)
			requireUnwrittenWith(t, s, old, again, "a C written before")
			assert.Equal(t, before, texelSets(dev))

			sq, err := FromSlice(dev, ramp(n*n, 1))
			require.NoError(t, err)
			d, err := NewBuffer[float32](dev, m*n)
			require.NoError(t, err)
			require.NoError(t, Matmul(s, c, sq, d, m, n, n), "a launch over a tainted input is skipped")
			requireUnwrittenWith(t, s, d, cause, "a Matmul reading the failed C")

			// Every UpdateSet failing: Float16 and the dynamic form fail
			// the same way.
			fail(-1, cause)
			if dev.Info().Features.Has(FeatureStorage16) {
				h, err := NewBuffer[Float16](dev, 8+m*k)
				require.NoError(t, err)
				ha, err := h.View(8, m*k)
				require.NoError(t, err)
				require.NoError(t, ha.Write(make([]Float16, m*k)))
				hb, err := FromSlice(dev, make([]Float16, k*n))
				require.NoError(t, err)
				hc, err := NewBuffer[Float16](dev, m*n)
				require.NoError(t, err)
				require.Equal(t, "matmul_texel_f16", dev.matmulKernel("_f16", n, k, ha.core, hb.core))
				require.ErrorIs(t, MatmulOf(s, ha, hb, hc, m, n, k), cause)
				requireUnwrittenWith(t, s, hc, cause, "Float16 C")
			}
			rows, err := NewParam(dev, uint32(m))
			require.NoError(t, err)
			require.ErrorIs(t, MatmulDyn(s, a, b, c, rows, n, k), cause)
			requireUnwrittenWith(t, s, c, cause, "MatmulDyn's C")
			assert.Equal(t, before, texelSets(dev))

			heal()
			require.NoError(t, Matmul(s, a, b, c, m, n, k))
			got, err := c.ReadOn(context.Background(), s)
			require.NoError(t, err)
			assert.Equal(t, want, got, "after the fault cleared")

			// In a window: a Matmul on claims no set binds yet.
			e, err := NewBuffer[float32](dev, m*n)
			require.NoError(t, err)
			require.NoError(t, s.PrepareCapture())
			require.NoError(t, s.BeginCapture())
			inWindow := injected("vkCreateBufferView", errs.OutOfMemory)
			fail(1, inWindow)
			require.ErrorIs(t, Matmul(s, a, b, e, m, n, k), inWindow)
			_, err = s.EndCapture()
			require.ErrorIs(t, err, inWindow, "the doomed window")
			requireUnwrittenWith(t, s, e, inWindow, "the doomed window's output")
			g, err := s.Capture(func(s *Stream) error { return Matmul(s, a, b, e, m, n, k) })
			require.NoError(t, err)
			require.NoError(t, g.Replay())
			got, err = e.ReadOn(context.Background(), s)
			require.NoError(t, err)
			assert.Equal(t, want, got, "a graph captured after the doomed window")
			require.NoError(t, errors.Join(g.Close(), s.Sync(context.Background())))
		})
	}
}

// A texel graph whose Close cannot wait for its last replay (the fence
// wait fails) keeps its command buffer and its texel sets, views and all,
// until the device's Close has waited for the device: no view is
// destroyed under the replay, and nothing is left after Close.
func TestTexelGraphCloseWithFailedWaitKeepsItsViews(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	const m, n, k = 8, 16, 24
	in := func(xs []float32) *Buffer[float32] { return texelView(t, dev, xs) }
	a, b := in(ramp(m*k, -20)), in(ramp(k*n, -50))
	c, err := NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return Matmul(s, a, b, c, m, n, k) })
	require.NoError(t, err)
	views := dev.LiveObjects()["buffer-view"]
	require.Positive(t, views, "the graph reads through texel views")
	for range 3 {
		require.NoError(t, g.Replay())
	}
	cause := fenceFailure()
	fd.failNext(callWaitFence, 1, cause)
	require.ErrorIs(t, g.Close(), cause)
	assert.Equal(t, views, dev.LiveObjects()["buffer-view"], "the views stay with the possibly pending replay")
	for range 2 {
		// Later texel work on fresh inputs still runs (new sets, new views).
		x, y := in(ramp(m*k, 3)), in(ramp(k*n, 5))
		z, err := NewBuffer[float32](dev, m*n)
		require.NoError(t, err)
		require.NoError(t, Matmul(s, x, y, z, m, n, k))
		_, err = z.ReadOn(context.Background(), s)
		require.NoError(t, err)
	}
}

// A texel graph's replay whose submit fails: the replay returns the
// failure, C reads as unwritten with it (a Matmul reading C passes it
// on), and the next replay computes the product again.
func TestTexelGraphFailedReplayTaintsItsOutput(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.Stream()
	const m, n, k = 8, 16, 24
	in := func(xs []float32) *Buffer[float32] { return texelView(t, dev, xs) }
	a, b := in(ramp(m*k, -20)), in(ramp(k*n, -50))
	c, err := NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	g, err := s.Capture(func(s *Stream) error { return Matmul(s, a, b, c, m, n, k) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	want, err := c.ReadOn(context.Background(), s)
	require.NoError(t, err)

	cause := submitFailure()
	fd.failNext(callSubmit, 1, cause)
	require.ErrorIs(t, g.Replay(), cause)
	requireUnwrittenWith(t, s, c, cause, "C after the failed replay")
	sq, err := FromSlice(dev, ramp(n*n, 1))
	require.NoError(t, err)
	d, err := NewBuffer[float32](dev, m*n)
	require.NoError(t, err)
	require.NoError(t, Matmul(s, c, sq, d, m, n, n))
	requireUnwrittenWith(t, s, d, cause, "a texel Matmul over the failed replay's C")

	require.NoError(t, g.Replay())
	got, err := c.ReadOn(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the next replay")
}

// texelView is a view 16 bytes into a fresh buffer, holding xs: an input
// a CPU driver's Matmul reads as texels at a nonzero offset.
func texelView(t *testing.T, dev *Device, xs []float32) *Buffer[float32] {
	t.Helper()
	buf, err := NewBuffer[float32](dev, 4+len(xs))
	require.NoError(t, err)
	v, err := buf.View(4, len(xs))
	require.NoError(t, err)
	require.NoError(t, v.Write(xs))
	return v
}
