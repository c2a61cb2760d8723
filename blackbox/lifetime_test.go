package blackbox_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// Promise (docs/guide/errors.md): "No exported function panics on bad input: nil
// receivers and zero values ... are errors. Close is idempotent
// everywhere." Every method of every type on a nil and a zero value, and
// every op with nil and zero arguments.
func TestNilAndZeroValuesAreErrors(t *testing.T) {
	ctx := context.Background()
	for _, d := range []*vkc.Device{nil, {}} {
		noPanic(t, "device methods", func() {
			assert.NoError(t, d.Close())
			assert.NoError(t, d.Close())
			_ = d.Info()
			_ = d.Slots()
			_ = d.MemoryStats()
			_, _, _ = d.ValidationMessages()
			_ = d.Validating()
			_ = d.LiveObjects()
			_ = d.LiveStaging()
			assert.Nil(t, d.Stream())
			assert.Nil(t, d.NewStream())
			assert.Nil(t, d.StreamWithID(3))
			_, err := d.LoadKernel(vkc.KernelSpec{})
			assert.Error(t, err, "LoadKernel")
			_, err = d.NewSwapchain(vkc.SwapchainConfig{Width: 1, Height: 1})
			assert.Error(t, err, "NewSwapchain")
			_, err = vkc.NewBuffer[float32](d, 4)
			assert.Error(t, err, "NewBuffer")
			_, err = vkc.FromSlice(d, []int32{1})
			assert.Error(t, err, "FromSlice")
			_, err = vkc.NewParam(d, float32(1))
			assert.Error(t, err, "NewParam")
		})
	}

	var ns *vkc.Stream
	zs := &vkc.Stream{}
	var nb *vkc.Buffer[float32]
	zb := &vkc.Buffer[float32]{}
	var np *vkc.Param[uint32]
	zp := &vkc.Param[uint32]{}
	var nf *vkc.Param[float32]

	for _, s := range []*vkc.Stream{ns, zs} {
		noPanic(t, "stream methods", func() {
			_ = s.ID()
			_ = s.Device()
			for name, err := range map[string]error{
				"Sync":           s.Sync(ctx),
				"Sync nil ctx":   s.Sync(nil), //nolint:staticcheck // a nil context is the bad input under test
				"Flush":          s.Flush(),
				"PrepareCapture": s.PrepareCapture(),
				"BeginCapture":   s.BeginCapture(),
				"AbortCapture":   s.AbortCapture(),
			} {
				assert.Error(t, err, name)
			}
			_, err := s.EndCapture()
			assert.Error(t, err, "EndCapture")
			_, err = s.Capture(func(*vkc.Stream) error { return nil })
			assert.Error(t, err, "Capture")
		})
	}
	for _, b := range []*vkc.Buffer[float32]{nb, zb} {
		noPanic(t, "buffer methods", func() {
			_ = b.Len()
			_ = b.Device()
			assert.NoError(t, b.Close())
			assert.NoError(t, b.Close())
			assert.Error(t, b.Write([]float32{1}), "Write")
			assert.Error(t, b.WriteOn(ns, nil), "WriteOn")
			_, err := b.Read(ctx)
			assert.Error(t, err, "Read")
			_, err = b.ReadOn(ctx, zs)
			assert.Error(t, err, "ReadOn")
			assert.Error(t, b.ReadInto(ctx, zs, nil), "ReadInto")
		})
	}
	for _, p := range []*vkc.Param[uint32]{np, zp} {
		noPanic(t, "param methods", func() {
			assert.Zero(t, p.Value())
			_ = p.Device()
			assert.NoError(t, p.Close())
			assert.Error(t, p.Set(3), "Set")
		})
	}
	for _, k := range []*vkc.Kernel{nil, {}} {
		noPanic(t, "kernel methods", func() {
			_ = k.Name()
			_ = k.Spec()
			assert.NoError(t, k.Close())
			assert.Error(t, k.Launch(zs, [3]uint32{1, 1, 1}, nil), "Launch")
			assert.Error(t, k.LaunchIndirect(zs, vkc.GroupsOf(np, 1), nil), "LaunchIndirect")
			assert.Error(t, k.LaunchIndirect(zs, vkc.Groups{}, nil), "LaunchIndirect with zero Groups")
		})
	}
	for _, g := range []*vkc.Graph{nil, {}} {
		noPanic(t, "graph methods", func() {
			assert.NoError(t, g.Close())
			assert.Error(t, g.Replay(), "Replay")
		})
	}
	for _, sc := range []*vkc.Swapchain{nil, {}} {
		noPanic(t, "swapchain methods", func() {
			assert.NoError(t, sc.Close())
			_, _ = sc.Size()
			_ = sc.BGRA()
			assert.Error(t, sc.Present(zs, nil, 1, 1), "Present")
			assert.Error(t, sc.PresentAndCopy(zs, nil, 1, 1, nil), "PresentAndCopy")
			assert.Error(t, sc.Resize(2, 2), "Resize")
		})
	}
	noPanic(t, "ops", func() {
		for name, err := range map[string]error{
			"Fill":                 vkc.Fill(ns, nb, 1),
			"Fill zero":            vkc.Fill(zs, zb, 1),
			"Copy":                 vkc.Copy(ns, nb, zb),
			"Axpy":                 opAxpy(zs, 1, zb, zb),
			"Scale":                opScale(ns, 1, nb, nb),
			"Add":                  opAdd(ns, nb, nb, nb),
			"Sub":                  opSub(zs, zb, zb, zb),
			"Mul":                  opMul(ns, nb, nb, nb),
			"Div":                  opDiv(ns, nb, nb, nb),
			"Sum":                  opSum(ns, nb, nb),
			"Dot":                  opDot(t, ns, nb, nb, nb),
			"Matmul":               opMatmul(ns, nb, nb, nb, 1, 1, 1),
			"Transpose":            opTranspose(ns, nb, nb, 1, 1),
			"Softmax":              opSoftmax(ns, nb, nb, 1, 1),
			"FillDyn":              opFillDyn[float32](t, ns, nb, ops.Const(1), nil),
			"FillDyn zero params":  opFillDyn[float32](t, zs, zb, ops.ParamOf(nf), np),
			"CopyDyn":              opCopyDyn(ns, nb, nb, np),
			"AxpyDyn":              opAxpyDyn(ns, ops.Const(1), nb, nb, nil),
			"ScaleDyn":             opScaleDyn(ns, ops.Const(1), zb, zb, zp),
			"AddDyn":               opAddDyn(ns, nb, nb, nb, nil),
			"SumDyn":               opSumDyn(ns, nb, nb, nil),
			"DotDyn":               opDotDyn(t, ns, nb, nb, nb, nil),
			"SoftmaxDyn":           opSoftmaxDyn(ns, nb, nb, nil, 1),
			"MatmulDyn":            opMatmulDyn(ns, nb, nb, nb, nil, 1, 1),
			"ScaleDyn zero stream": opScaleDyn(zs, ops.Const(1), nb, nb, nil),
		} {
			assert.Error(t, err, name)
		}
	})
}

// Promise (docs/guide/errors.md: nil receivers and zero values are errors, never
// a panic): nil and zero arguments mixed with real ones on a real device.
func TestNilAndZeroArgumentsOnRealDevice(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	x := upload(t, dev, ramp(64, 1, 0))
	y := upload(t, dev, ramp(64, 1, 0))
	one := upload(t, dev, []float32{0})
	zb := &vkc.Buffer[float32]{}
	zs := &vkc.Stream{}
	var np *vkc.Param[uint32]
	zp := &vkc.Param[uint32]{}
	var nf *vkc.Param[float32]
	n := newParam(t, dev, uint32(8))
	k := loadAffine(t, dev)
	pc := affinePush(1, 1, 64)
	noPanic(t, "mixed arguments", func() {
		for name, err := range map[string]error{
			"Axpy zero stream":          opAxpy(zs, 1, x, y),
			"Axpy zero buffer":          opAxpy(s, 1, x, zb),
			"Sum zero out":              opSum(s, x, zb),
			"AxpyDyn typed nil param":   opAxpyDyn(s, ops.ParamOf(nf), x, y, n),
			"AxpyDyn zero param":        opAxpyDyn(s, ops.ParamOf(&vkc.Param[float32]{}), x, y, n),
			"ScaleDyn zero length":      opScaleDyn(s, ops.Const(1), x, y, zp),
			"SumDyn zero stream":        opSumDyn(zs, x, one, n),
			"SumDyn zero length":        opSumDyn(s, x, one, zp),
			"FillDyn nil value":         opFillDyn[float32](t, s, x, ops.ParamOf(nf), n),
			"ReadInto nil ctx":          x.ReadInto(nil, s, make([]float32, 64)), //nolint:staticcheck // bad input under test
			"Sync nil ctx":              s.Sync(nil),                             //nolint:staticcheck // bad input under test
			"WriteOn nil stream":        x.WriteOn(nil, ramp(64, 0, 0)),
			"WriteOn zero stream":       x.WriteOn(zs, ramp(64, 0, 0)),
			"Launch nil arg":            k.Launch(s, [3]uint32{1, 1, 1}, pc, x, nil),
			"Launch zero buffer arg":    k.Launch(s, [3]uint32{1, 1, 1}, pc, x, zb),
			"Launch nil param arg":      k.Launch(s, [3]uint32{1, 1, 1}, pc, x, np),
			"Launch nil stream":         k.Launch(nil, [3]uint32{1, 1, 1}, pc, x, y),
			"LaunchIndirect zero param": k.LaunchIndirect(s, vkc.GroupsOf(zp, 64), pc, x, y),
			"LaunchIndirect per 0":      k.LaunchIndirect(s, vkc.GroupsOf(n, 0), pc, x, y),
			"LaunchIndirect nil stream": k.LaunchIndirect(nil, vkc.GroupsOf(n, 64), pc, x, y),
		} {
			assert.Error(t, err, name)
		}
		_, err := x.ReadOn(nil, s) //nolint:staticcheck // bad input under test
		assert.Error(t, err, "ReadOn nil ctx")
		_, err = x.ReadOn(context.Background(), nil)
		assert.Error(t, err, "ReadOn nil stream")
		_, err = s.Capture(nil)
		assert.Error(t, err, "Capture nil fn")
	})
	require.NoError(t, s.Sync(testCtx(t)))
	assert.Equal(t, ramp(64, 1, 0), read(t, s, y), "a refused call wrote y")
}

func assertClosedErr(t *testing.T, name string, err error) {
	t.Helper()
	assert.ErrorIs(t, err, vkc.ErrClosed, "%s after Close", name)
}

// Promise (docs/guide/errors.md: ErrClosed is "use of a closed device, buffer,
// param, kernel, graph or swapchain"; Device.Close "closes every graph,
// kernel and buffer still open ... It is idempotent"): every call after
// Device.Close returns ErrClosed, and closing the objects after their
// device is a no-op.
func TestCallsAfterDeviceCloseAreErrClosed(t *testing.T) {
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	ctx := context.Background()
	s := dev.NewStream()
	x := upload(t, dev, ramp(64, 1, 0))
	y := upload(t, dev, ramp(64, 1, 0))
	out := upload(t, dev, []float32{0})
	z := upload(t, dev, ramp(64, 1, 0))
	n := newParam(t, dev, uint32(8))
	a := newParam(t, dev, float32(2))
	k := loadAffine(t, dev)
	spv := affineSPIRV(t)
	pc := affinePush(1, 1, 64)
	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpyDyn(s, ops.ParamOf(a), x, y, n) })
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	noPanic(t, "calls after Device.Close", func() {
		assert.NoError(t, dev.Close(), "a second Device.Close")
		_, err := vkc.NewBuffer[float32](dev, 4)
		assertClosedErr(t, "NewBuffer", err)
		_, err = vkc.FromSlice(dev, []float32{1})
		assertClosedErr(t, "FromSlice", err)
		_, err = vkc.NewParam(dev, uint32(1))
		assertClosedErr(t, "NewParam", err)
		_, err = dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: spv})
		assertClosedErr(t, "LoadKernel", err)
		_, err = dev.NewSwapchain(vkc.SwapchainConfig{Width: 4, Height: 4})
		assertClosedErr(t, "NewSwapchain", err)
		assertClosedErr(t, "Write", x.Write(ramp(64, 0, 0)))
		assertClosedErr(t, "WriteOn", x.WriteOn(s, ramp(64, 0, 0)))
		_, err = x.Read(ctx)
		assertClosedErr(t, "Read", err)
		_, err = x.ReadOn(ctx, s)
		assertClosedErr(t, "ReadOn", err)
		assertClosedErr(t, "ReadInto", x.ReadInto(ctx, s, make([]float32, 64)))
		assertClosedErr(t, "Sync", s.Sync(ctx))
		assertClosedErr(t, "Flush", s.Flush())
		assertClosedErr(t, "PrepareCapture", s.PrepareCapture())
		assertClosedErr(t, "BeginCapture", s.BeginCapture())
		assertClosedErr(t, "AbortCapture", s.AbortCapture())
		_, err = s.EndCapture()
		assertClosedErr(t, "EndCapture", err)
		_, err = s.Capture(func(*vkc.Stream) error { return nil })
		assertClosedErr(t, "Capture", err)
		assertClosedErr(t, "Replay", g.Replay())
		assertClosedErr(t, "Set length", n.Set(4))
		assertClosedErr(t, "Set scalar", a.Set(4))
		assertClosedErr(t, "Launch", k.Launch(s, [3]uint32{1, 1, 1}, pc, x, y))
		assertClosedErr(t, "LaunchIndirect", k.LaunchIndirect(s, vkc.GroupsOf(n, 64), pc, x, y))
		assertClosedErr(t, "Fill", vkc.Fill(s, x, 1))
		assertClosedErr(t, "Copy", vkc.Copy(s, x, y))
		assertClosedErr(t, "Axpy", opAxpy(s, 1, x, y))
		assertClosedErr(t, "Scale", opScale(s, 1, x, y))
		assertClosedErr(t, "Add", opAdd(s, x, y, y))
		assertClosedErr(t, "Sum", opSum(s, x, out))
		assertClosedErr(t, "Dot", opDot(t, s, x, y, out))
		assertClosedErr(t, "Matmul", opMatmul(s, x, y, out, 1, 1, 64))
		assertClosedErr(t, "Transpose", opTranspose(s, x, y, 8, 8))
		assertClosedErr(t, "Softmax", opSoftmax(s, x, y, 8, 8))
		assertClosedErr(t, "FillDyn", opFillDyn(t, s, x, ops.Const(1), n))
		assertClosedErr(t, "CopyDyn", opCopyDyn(s, x, y, n))
		assertClosedErr(t, "AxpyDyn", opAxpyDyn(s, ops.ParamOf(a), x, y, n))
		assertClosedErr(t, "SumDyn", opSumDyn(s, x, out, n))
		assertClosedErr(t, "DotDyn", opDotDyn(t, s, x, y, out, n))
		assertClosedErr(t, "SoftmaxDyn", opSoftmaxDyn(s, x, y, n, 8))
		assertClosedErr(t, "MatmulDyn", opMatmulDyn(s, x, y, z, n, 8, 8))
		for name, err := range map[string]error{"buffer": x.Close(), "param n": n.Close(), "param a": a.Close(), "kernel": k.Close(), "graph": g.Close()} {
			assert.NoError(t, err, "%s.Close after Device.Close", name)
		}
	})
	assertClosedClean(t, dev)
}

// Promise (docs/guide/errors.md: ErrClosed for a closed buffer, param, kernel
// or graph; "Close is idempotent everywhere"): each object closed on its
// own, three times; later calls that use it return ErrClosed.
func TestCallsAfterObjectCloseAreErrClosed(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	x := upload(t, dev, ramp(64, 1, 0))
	y := upload(t, dev, ramp(64, 1, 0))
	out := upload(t, dev, []float32{0})
	n := newParam(t, dev, uint32(8))
	a := newParam(t, dev, float32(2))
	k := loadAffine(t, dev)
	pc := affinePush(1, 1, 64)
	g, err := s.Capture(func(s *vkc.Stream) error { return opAxpyDyn(s, ops.ParamOf(a), x, y, n) })
	require.NoError(t, err)
	for i := range 3 {
		for name, err := range map[string]error{"buffer": x.Close(), "param n": n.Close(), "param a": a.Close(), "kernel": k.Close(), "graph": g.Close()} {
			assert.NoError(t, err, "%s.Close #%d", name, i+1)
		}
	}
	assertClosedErr(t, "Write", x.Write(ramp(64, 0, 0)))
	_, err = x.ReadOn(testCtx(t), s)
	assertClosedErr(t, "ReadOn", err)
	assertClosedErr(t, "Replay", g.Replay())
	assertClosedErr(t, "Set", n.Set(4))
	assertClosedErr(t, "Launch of a closed kernel", k.Launch(s, [3]uint32{1, 1, 1}, pc, y, y))
	k2 := loadAffine(t, dev)
	assertClosedErr(t, "Launch of a closed buffer", k2.Launch(s, [3]uint32{1, 1, 1}, pc, x, y))
	assertClosedErr(t, "LaunchIndirect of a closed param", k2.LaunchIndirect(s, vkc.GroupsOf(n, 64), pc, y, out))
	assertClosedErr(t, "Axpy", opAxpy(s, 1, x, y))
	assertClosedErr(t, "Copy", vkc.Copy(s, y, x))
	assertClosedErr(t, "Sum", opSum(s, x, out))
	assertClosedErr(t, "AxpyDyn closed scalar", opAxpyDyn(s, ops.ParamOf(a), y, y, nil))
	assertClosedErr(t, "ScaleDyn closed length", opScaleDyn(s, ops.Const(1), y, y, n))
	assertClosedErr(t, "SumDyn closed length", opSumDyn(s, y, out, n))
	require.NoError(t, s.Sync(testCtx(t)))
}

// Promise (docs/guide/capture.md rule 2): "Closing one early is safe — the graph
// keeps its memory until it closes — but the graph still writes there."
// The memory of a closed buffer a live graph writes is not handed to new
// buffers (MemoryStats.Guarded counts it), and is released when the graph
// closes.
func TestGraphKeepsClosedBufferMemory(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 256
	x := upload(t, dev, ramp(N, 1, 1))
	y := upload(t, dev, ramp(N, 0, 0))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, ramp(N, 1, 1)); err != nil {
			return err
		}
		return opScale(s, 2, x, y)
	})
	require.NoError(t, err)
	require.NoError(t, x.Close())
	require.NoError(t, y.Close())
	var fresh []*vkc.Buffer[float32]
	for range 8 {
		fresh = append(fresh, upload(t, dev, filled(N, -7)))
	}
	for range 4 {
		require.NoError(t, g.Replay(), "Replay after its buffers closed")
	}
	require.NoError(t, s.Sync(testCtx(t)))
	for i, b := range fresh {
		require.Equal(t, filled(N, -7), read(t, s, b), "fresh buffer %d overwritten by a graph of closed buffers", i)
	}
	assert.NotZero(t, dev.MemoryStats().Guarded, "MemoryStats.Guarded while a graph keeps closed buffers")
	require.NoError(t, g.Close())
	assert.Zero(t, dev.MemoryStats().Guarded, "MemoryStats.Guarded after the graph closed")
}

// Promise (docs/guide/capture.md rule 2, and "Changing a graph": a Param is read
// "when it runs"): a graph that recorded params keeps their memory and last
// value after they close; new params get other memory.
func TestGraphKeepsClosedParams(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 64
	x := upload(t, dev, ramp(N, 1, 1))
	y := upload(t, dev, ramp(N, 0, 0))
	a := newParam(t, dev, float32(3))
	n := newParam(t, dev, uint32(N/2))
	g, err := s.Capture(func(s *vkc.Stream) error { return opScaleDyn(s, ops.ParamOf(a), x, y, n) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, a.Close())
	require.NoError(t, n.Close())
	tmp := upload(t, dev, ramp(N, 0, 0))
	for i := range 8 {
		f := newParam(t, dev, float32(100+i))
		u := newParam(t, dev, uint32(N))
		require.NoError(t, opScaleDyn(s, ops.ParamOf(f), x, tmp, u))
		assert.NoError(t, u.Set(N), "Set(N) on a new length param")
	}
	require.NoError(t, y.WriteOn(s, filled(N, -1)))
	require.NoError(t, g.Replay())
	want := filled(N, -1)
	for i := range N / 2 {
		want[i] = 3 * float32(i+1)
	}
	assert.Equal(t, want, read(t, s, y), "a replay after its params closed uses their last values")
}

// Promise (Param.Set: it refuses a value above what "the buffers of every
// live graph ... sized by it hold"): a limit belongs to the param a graph
// recorded. Once that param closes, new length params, which no graph
// sizes, do not inherit it.
func TestClosedLengthParamLeavesNoLimit(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	k := loadAffine(t, dev)
	const N = 64
	x := upload(t, dev, ramp(N, 1, 1))
	y := upload(t, dev, ramp(N, 0, 0))
	p := newParam(t, dev, uint32(1))
	g, err := s.Capture(func(s *vkc.Stream) error {
		return k.LaunchIndirect(s, vkc.GroupsOf(p, 1), affinePush(1, 0, N), x, y)
	})
	require.NoError(t, err)
	defer g.Close()
	maxX := dev.Info().Limits.MaxComputeWorkGroupCount[0]
	require.Error(t, p.Set(maxX+1), "p.Set above the group-count limit of the graph's launch")
	require.NoError(t, p.Close())
	big := int(maxX) + 16
	if big > 1<<24 {
		t.Skipf("the device's group-count limit %d needs a buffer too large for this test", maxX)
	}
	buf := newBuffer[float32](t, dev, big)
	for i := range 4 {
		q := newParam(t, dev, uint32(1))
		require.NoError(t, opFillDyn(t, s, buf, ops.Const(1), q))
		assert.NoError(t, q.Set(maxX+1), "new param %d, which no graph sizes", i)
		require.NoError(t, q.Close())
	}
	require.NoError(t, s.Sync(testCtx(t)))
}

// Promise (docs/guide/capture.md rule 2: the graph keeps what it recorded until it
// closes): a graph keeps replaying a user kernel closed after the capture.
func TestGraphKeepsClosedKernel(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: affineSPIRV(t)})
	require.NoError(t, err)
	const N = 128
	x := upload(t, dev, ramp(N, 1, 0))
	y := upload(t, dev, ramp(N, 0, 0))
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, ramp(N, 1, 0)); err != nil {
			return err
		}
		return k.Launch(s, [3]uint32{N / 64, 1, 1}, affinePush(2, 1, N), x, y)
	})
	require.NoError(t, err)
	require.NoError(t, k.Close())
	runtime.GC()
	for r := range 3 {
		require.NoError(t, x.WriteOn(s, ramp(N, float32(r), 5)))
		require.NoError(t, g.Replay())
		want := seq(N, func(i int) float32 { return 2*(float32(r)*float32(i)+5) + 1 })
		require.Equal(t, want, read(t, s, y), "replay %d after the kernel closed", r)
	}
	require.NoError(t, g.Close())
}

// closeRaceErrs collects the errors of calls racing a Close: each must be
// nil or ErrClosed (docs/guide/errors.md: Close "waits for the calls in
// progress, and later calls get ErrClosed"), or one of allowed.
type closeRaceErrs struct {
	mu      sync.Mutex
	allowed []error
	bad     map[string]error
}

func (e *closeRaceErrs) note(name string, err error) {
	if err == nil || errors.Is(err, vkc.ErrClosed) {
		return
	}
	for _, a := range e.allowed {
		if errors.Is(err, a) {
			return
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bad == nil {
		e.bad = map[string]error{}
	}
	if _, seen := e.bad[name]; !seen {
		e.bad[name] = err
	}
}

func (e *closeRaceErrs) check(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, err := range e.bad {
		t.Errorf("%s racing Close: %v (want nil or ErrClosed)", name, err)
	}
}

// Promise (docs/guide/errors.md: "Close is idempotent everywhere and safe to
// call while other goroutines use the object: it waits for the calls in
// progress, and later calls get ErrClosed"; LiveObjects: "after Close every
// count is zero"): Device.Close while twelve goroutines use the device.
// Each goroutine runs a fixed number of iterations; Close comes once they
// have made a given number of calls between them, a different one each
// round, and they keep calling after it.
func TestDeviceCloseRacingCalls(t *testing.T) {
	for round := range 3 {
		deviceCloseRacingCalls(t, int64(20+60*round))
	}
}

func deviceCloseRacingCalls(t *testing.T, closeAfter int64) {
	before := runtime.NumGoroutine()
	dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithStreams(8))
	require.NoError(t, err)
	ctx := testCtx(t)
	const N, iterations = 512, 60
	spv := affineSPIRV(t)
	x := upload(t, dev, ramp(N, 1, 0))
	y := upload(t, dev, ramp(N, 1, 0))
	n := newParam(t, dev, uint32(N))
	a := newParam(t, dev, float32(1))
	k := loadAffine(t, dev)
	gs := dev.NewStream()
	gx := upload(t, dev, ramp(N, 1, 0))
	gy := upload(t, dev, ramp(N, 1, 0))
	gout := upload(t, dev, []float32{0})
	g, err := gs.Capture(func(s *vkc.Stream) error {
		if err := opAxpyDyn(s, ops.ParamOf(a), gx, gy, n); err != nil {
			return err
		}
		return opSumDyn(s, gy, gout, n)
	})
	require.NoError(t, err)

	var calls atomic.Int64
	closeNow := make(chan struct{})
	var closeOnce sync.Once
	var wg sync.WaitGroup
	var errs closeRaceErrs
	loop := func(name string, f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs.note(name, fmt.Errorf("panic: %v", r))
				}
			}()
			for i := range iterations {
				errs.note(name, f(i))
				if calls.Add(1) == closeAfter {
					closeOnce.Do(func() { close(closeNow) })
				}
			}
		}()
	}
	loop("Replay+ReadOn", func(int) error {
		if err := g.Replay(); err != nil {
			return err
		}
		_, err := gout.ReadOn(ctx, gs)
		return err
	})
	loop("Axpy+Sync", func(int) error {
		s := dev.StreamWithID(2)
		if err := opAxpy(s, 0, x, y); err != nil {
			return err
		}
		return s.Sync(ctx)
	})
	loop("Launch", func(int) error {
		return k.Launch(dev.StreamWithID(3), [3]uint32{N / 64, 1, 1}, affinePush(1, 0, N), x, y)
	})
	loop("ReadOn", func(int) error {
		_, err := x.ReadOn(ctx, dev.StreamWithID(5))
		return err
	})
	loop("WriteOn", func(int) error { return x.WriteOn(dev.StreamWithID(5), ramp(N, 1, 0)) })
	loop("Set", func(int) error { return a.Set(1) })
	loop("NewBuffer+Close", func(i int) error {
		b, err := vkc.NewBuffer[int32](dev, 64+i%7)
		if err != nil {
			return err
		}
		return b.Close()
	})
	loop("FromSlice+Read+Close", func(int) error {
		b, err := vkc.FromSlice(dev, []uint32{1, 2, 3})
		if err != nil {
			return err
		}
		if _, err := b.Read(ctx); err != nil {
			return err
		}
		return b.Close()
	})
	loop("NewParam+Close", func(i int) error {
		p, err := vkc.NewParam(dev, uint32(i+1))
		if err != nil {
			return err
		}
		return p.Close()
	})
	loop("LoadKernel+Close", func(int) error {
		kk, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine2", SPIRV: spv})
		if err != nil {
			return err
		}
		return kk.Close()
	})
	loop("Capture+Replay+Close", func(int) error {
		gg, err := dev.StreamWithID(6).Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, gx) })
		if err != nil {
			return err
		}
		if err := gg.Replay(); err != nil {
			_ = gg.Close()
			return err
		}
		return gg.Close()
	})
	loop("Sum", func(int) error {
		s := dev.StreamWithID(7)
		o, err := vkc.NewBuffer[float32](dev, 1)
		if err != nil {
			return err
		}
		defer o.Close()
		if err := opSum(s, y, o); err != nil {
			return err
		}
		_, err = o.ReadOn(ctx, s)
		return err
	})
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-closeNow
		assert.NoError(t, dev.Close(), "Device.Close racing calls")
	}()
	wg.Wait()
	closeOnce.Do(func() { close(closeNow) }) // every call ran before closeAfter
	<-closed
	errs.check(t)
	assertClosedClean(t, dev)
	after := settledGoroutines(before)
	assert.LessOrEqual(t, after, before, "goroutines: %d before Open, %d after Close", before, after)
}

// Promise (docs/guide/errors.md: Close is safe while other goroutines use the
// object; docs/guide/capture.md rule 2: memory a closed buffer held is reused only
// when nothing still writes it): each object's Close racing four
// goroutines that use it; a buffer and params made right after the Closes
// are not written by work queued before them.
func TestObjectCloseRacingCalls(t *testing.T) {
	dev := openDevice(t, vkc.WithStreams(8))
	ctx := testCtx(t)
	const N, iterations = 1024, 40
	spv := affineSPIRV(t)
	for round := range 6 {
		errs := closeRaceErrs{allowed: []error{vkc.ErrUnwritten}}
		b := upload(t, dev, ramp(N, 1, 0))
		x := upload(t, dev, ramp(N, 1, 0))
		k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: spv})
		require.NoError(t, err)
		p := newParam(t, dev, uint32(N))
		a := newParam(t, dev, float32(2))
		gs := dev.StreamWithID(7)
		gy := upload(t, dev, ramp(N, 1, 0))
		g, err := gs.Capture(func(s *vkc.Stream) error { return opScaleDyn(s, ops.ParamOf(a), x, gy, p) })
		require.NoError(t, err)

		// The Closes start once the workers made 20*round calls between them.
		var calls atomic.Int64
		closeNow := make(chan struct{})
		var closeOnce sync.Once
		threshold := int64(20 * round)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer closeOnce.Do(func() { close(closeNow) })
				defer func() {
					if r := recover(); r != nil {
						errs.note("worker", fmt.Errorf("panic: %v", r))
					}
				}()
				s := dev.StreamWithID(uint64(w + 1))
				for i := range iterations {
					errs.note("Fill", vkc.Fill(s, b, float32(i)))
					errs.note("Axpy", opAxpy(s, 1, x, b))
					errs.note("Launch", k.Launch(s, [3]uint32{N / 64, 1, 1}, affinePush(1, 0, N), x, b))
					errs.note("ScaleDyn", opScaleDyn(s, ops.ParamOf(a), x, b, p))
					errs.note("Set length", p.Set(uint32(N-i%5)))
					errs.note("Set scalar", a.Set(float32(i)))
					errs.note("Replay", g.Replay())
					if i%10 == 9 {
						_, err := b.ReadOn(ctx, s)
						errs.note("ReadOn", err)
					}
					if calls.Add(1) >= threshold {
						closeOnce.Do(func() { close(closeNow) })
					}
				}
			}()
		}
		<-closeNow
		var cw sync.WaitGroup
		for _, c := range []func() error{b.Close, k.Close, p.Close, a.Close, g.Close} {
			cw.Add(1)
			go func() { defer cw.Done(); assert.NoError(t, c(), "round %d Close", round) }()
		}
		cw.Wait()
		fresh := upload(t, dev, filled(N, -3))
		fp := newParam(t, dev, uint32(7))
		fa := newParam(t, dev, float32(-9))
		wg.Wait()
		for w := range 8 {
			require.NoError(t, dev.StreamWithID(uint64(w)).Sync(ctx))
		}
		errs.check(t)
		require.Equal(t, filled(N, -3), read(t, dev.Stream(), fresh), "round %d: a buffer made after the Closes was written by earlier work", round)
		require.Equal(t, uint32(7), fp.Value())
		require.Equal(t, float32(-9), fa.Value())
		o := upload(t, dev, filled(N, -3))
		require.NoError(t, opFillDyn[float32](t, dev.Stream(), o, ops.ParamOf(fa), nil))
		require.Equal(t, filled(N, -9), read(t, dev.Stream(), o), "round %d: a param made after the Closes holds another value on the device", round)
		for _, c := range []func() error{fresh.Close, fp.Close, fa.Close, o.Close, x.Close, gy.Close} {
			require.NoError(t, c())
		}
	}
}

// Promise (docs/guide/errors.md: Close is safe while other goroutines use the
// object, later calls get ErrClosed): a graph, a buffer and then the device
// closed while goroutines replay, capture and read; every call returns nil
// or one of the documented sentinels, and nothing leaks.
func TestCloseRacingReplayAndCapture(t *testing.T) {
	for round := range 4 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		const N, iterations = 64, 40
		x := upload(t, dev, filled(N, 1))
		y := upload(t, dev, make([]float32, N))
		s := dev.NewStream()
		g, err := s.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
		require.NoError(t, err)
		errs := closeRaceErrs{allowed: []error{vkc.ErrUnwritten, vkc.ErrCaptureState, vkc.ErrStreamCapturing}}
		var calls atomic.Int64
		closeNow := make(chan struct{})
		var closeOnce sync.Once
		threshold := int64(10 + 15*round)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer closeOnce.Do(func() { close(closeNow) })
				s2 := dev.NewStream()
				for range iterations {
					var err error
					switch w {
					case 0, 1:
						err = g.Replay()
					case 2:
						var g2 *vkc.Graph
						g2, err = s2.Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
						if g2 != nil {
							errs.note("Replay of a new graph", g2.Replay())
							_ = g2.Close()
						}
					case 3:
						_, err = y.ReadOn(context.Background(), s2)
					}
					errs.note(fmt.Sprintf("worker %d", w), err)
					if calls.Add(1) >= threshold {
						closeOnce.Do(func() { close(closeNow) })
					}
				}
			}()
		}
		<-closeNow
		if round%2 == 0 {
			assert.NoError(t, g.Close())
			assert.NoError(t, y.Close())
		}
		assert.NoError(t, dev.Close())
		wg.Wait()
		errs.check(t)
		assertClosedClean(t, dev)
	}
}

// Promise (Device.Close "is idempotent"; LiveObjects: "after Close every
// count is zero"): two goroutines close the same device; the second Close
// returns only once the device is closed, so its caller sees zero live
// objects.
func TestConcurrentDeviceCloses(t *testing.T) {
	for round := range 3 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		s := dev.NewStream()
		const N = 1024
		x := upload(t, dev, ramp(N, 1, 0))
		var graphs []*vkc.Graph
		for range 40 {
			y := newBuffer[float32](t, dev, N)
			g, err := s.Capture(func(s *vkc.Stream) error { return opScale(s, 2, x, y) })
			require.NoError(t, err)
			graphs = append(graphs, g)
		}
		for _, g := range graphs {
			require.NoError(t, g.Replay())
		}
		first := make(chan error, 1)
		go func() { first <- dev.Close() }()
		// Wait until the first Close has begun: calls then get ErrClosed.
		for {
			b, err := vkc.NewBuffer[float32](dev, 1)
			if errors.Is(err, vkc.ErrClosed) {
				break
			}
			require.NoError(t, err)
			require.NoError(t, b.Close())
		}
		assert.NoError(t, dev.Close(), "second Close")
		for kind, n := range dev.LiveObjects() {
			assert.Zero(t, n, "round %d: the second Device.Close returned while the first was still closing: %s alive", round, kind)
		}
		assert.NoError(t, <-first, "first Close")
		assertClosedClean(t, dev)
	}
}

// Promise (docs/guide/capture.md rule 3: "a host write recorded in the window
// became a copy from the buffer's own host staging, and every later WriteOn
// refreshes that staging"; rule 2: the graph keeps what it recorded):
// the staging outlives its closed buffer while the graph lives, replays use
// the last WriteOn, and all is released when both are gone.
func TestRecordedWriteStagingLifetime(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	const N = 128
	base := dev.LiveStaging()
	x, err := vkc.FromSlice(dev, make([]float32, N))
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, make([]float32, N))
	require.NoError(t, err)
	g, err := s.Capture(func(s *vkc.Stream) error {
		if err := x.WriteOn(s, ramp(N, 1, 0)); err != nil {
			return err
		}
		return opScale(s, 2, x, y)
	})
	require.NoError(t, err)
	require.NoError(t, x.WriteOn(s, ramp(N, 3, 0)))
	require.NoError(t, x.Close())
	require.NoError(t, g.Replay())
	assert.Equal(t, ramp(N, 6, 0), read(t, s, y), "a replay after the input closed copies the last WriteOn's staging")
	require.NoError(t, g.Close())
	require.NoError(t, y.Close())
	assert.Equal(t, base, dev.LiveStaging(), "LiveStaging after the buffer and the graph closed")
	assert.Zero(t, dev.MemoryStats().Guarded, "Guarded after the graph closed")
}

// Promise (docs/guide/errors.md: "Close is idempotent everywhere and safe to
// call while other goroutines use the object"): Device.Close racing the
// Close of every object it owns.
func TestDeviceCloseRacingObjectCloses(t *testing.T) {
	for round := range 8 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		s := dev.NewStream()
		const N = 256
		x, err := vkc.FromSlice(dev, ramp(N, 1, 0))
		require.NoError(t, err)
		y, err := vkc.FromSlice(dev, ramp(N, 1, 0))
		require.NoError(t, err)
		n, err := vkc.NewParam(dev, uint32(N))
		require.NoError(t, err)
		a, err := vkc.NewParam(dev, float32(1))
		require.NoError(t, err)
		k, err := dev.LoadKernel(vkc.KernelSpec{Name: "affine", SPIRV: affineSPIRV(t)})
		require.NoError(t, err)
		g, err := s.Capture(func(s *vkc.Stream) error {
			if err := opAxpyDyn(s, ops.ParamOf(a), x, y, n); err != nil {
				return err
			}
			return k.LaunchIndirect(s, vkc.GroupsOf(n, 64), affinePush(1, 0, N), x, y)
		})
		require.NoError(t, err)
		for range 5 {
			require.NoError(t, g.Replay())
		}
		closers := []func() error{dev.Close, x.Close, y.Close, n.Close, a.Close, k.Close, g.Close}
		if round%2 == 1 { // the device last
			closers = append(closers[1:], closers[0])
		}
		var wg sync.WaitGroup
		for i, c := range closers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				noPanic(t, fmt.Sprintf("closer %d", i), func() { assert.NoError(t, c(), "round %d closer %d", round, i) })
			}()
		}
		wg.Wait()
		assert.NoError(t, dev.Close())
		assertClosedClean(t, dev)
	}
}
