package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// texelDesc is matmul_texel's interface: A and B read as texels, C written.
var texelDesc = recorder.PipelineDesc{Name: "matmul_texel", Bindings: 3, Writes: 4, Texels: 3, PushSize: 12}

// texelDim is M = N = K of the texel scenario's products.
const texelDim = 8

// texelRun is one run of the texel scenario with at most one fault armed.
type texelRun struct {
	t      *testing.T
	r      *recorder.Recorder
	k      *recorder.Kernel
	cause  error // the armed fault's error; nil for a clean run
	fired  bool
	claims []alloc.Claim
	want   map[alloc.Claim][]float32 // what each output must read
}

// ok records a call's error: nil, or one that wraps the armed fault's
// cause (which then has fired). It reports whether the call succeeded.
// (A fault may fire unseen: a fence that fails to reset is replaced.)
func (x *texelRun) ok(what string, err error) bool {
	x.t.Helper()
	if err == nil {
		return true
	}
	require.NotNil(x.t, x.cause, "%s failed with no fault armed: %v", what, err)
	require.ErrorIs(x.t, err, x.cause, "%s", what)
	x.fired = true
	return false
}

// buf allocates a texel-sized claim, never written.
func (x *texelRun) buf() (alloc.Claim, bool) {
	c, err := x.r.Alloc(alloc.DeviceLocal, 4*texelDim*texelDim)
	if !x.ok("alloc", err) {
		return alloc.Claim{}, false
	}
	x.r.Taint([]alloc.Claim{c}, errFresh)
	x.claims = append(x.claims, c)
	return c, true
}

func (x *texelRun) matmul(s recorder.StreamID, a, b, c alloc.Claim) error {
	l := recorder.Launch{Args: []capture.Binding{rd(a), rd(b), wr(c)}, Groups: [3]uint32{1, 1, 1}, Push: words(texelDim, texelDim, texelDim)}
	return x.r.Launch(s, x.k, &l)
}

// product is A·B in float32, summed in order as the host reference does.
func product(a, b []float32) []float32 {
	c := make([]float32, texelDim*texelDim)
	for i := range texelDim {
		for j := range texelDim {
			var s float32
			for p := range texelDim {
				s += a[i*texelDim+p] * b[p*texelDim+j]
			}
			c[i*texelDim+j] = s
		}
	}
	return c
}

// values is texelDim² distinct small numbers from base on.
func values(base float32) []float32 {
	v := make([]float32, texelDim*texelDim)
	for i := range v {
		v[i] = base + float32(i%7) - float32(i%3)
	}
	return v
}

// scenario: inputs written, six eager products into distinct outputs on
// a cache of four sets (texel sets evicted and their views destroyed
// while batches of four launches are pending), one over a never-written
// input, work on the second slot, a capture of two products and three
// replays (an input rewritten between), reads of every output, teardown.
func (x *texelRun) scenario(dev *hostdev.Device) {
	t := x.t
	r, err := recorder.New(dev, recorder.Options{Slots: 2, BatchSize: 4, CacheSize: 4, PageSize: 64 << 10})
	if !x.ok("new", err) {
		return
	}
	x.r = r
	defer func() {
		x.ok("close", r.Close())
	}()
	k, err := r.NewKernel(code, texelDesc)
	if !x.ok("kernel", err) {
		return
	}
	x.k = k
	defer func() { x.ok("release", k.Release()) }()
	x.want = map[alloc.Claim][]float32{}
	var as [6]alloc.Claim
	var avals [6][]float32
	for i := range as {
		c, ok := x.buf()
		if !ok {
			return
		}
		as[i], avals[i] = c, values(float32(i))
		if x.ok("write A", r.Write(0, c, new(*recorder.Staging), bytesOf(avals[i]))) {
			continue
		}
		avals[i] = nil // unwritten: its products read as the fault
	}
	b, ok := x.buf()
	if !ok {
		return
	}
	bvals := values(-3)
	if !x.ok("write B", r.Write(0, b, new(*recorder.Staging), bytesOf(bvals))) {
		return
	}
	expect := func(c alloc.Claim, a []float32, err error) {
		switch {
		case err != nil || a == nil:
			x.want[c] = nil // must read as unwritten with the fault
		default:
			x.want[c] = product(a, bvals)
		}
	}
	for i := range as {
		c, ok := x.buf()
		if !ok {
			return
		}
		err := x.matmul(recorder.StreamID(i%2), as[i], b, c)
		x.ok("eager matmul", err)
		expect(c, avals[i], err)
	}
	never, ok := x.buf()
	if !ok {
		return
	}
	cNever, ok := x.buf()
	if !ok {
		return
	}
	x.ok("matmul over a never-written input", x.matmul(0, never, b, cNever))
	x.want[cNever] = []float32{} // must read as unwritten with errFresh

	c1, ok := x.buf()
	if !ok {
		return
	}
	c2, ok := x.buf()
	if !ok {
		return
	}
	// The warmup executes: a product it launched holds its value (or, if
	// a later step of the capture fails, reads as the fault), one whose
	// launch failed reads as the fault, one not reached as never written.
	pairs := [][2]alloc.Claim{{as[1], c1}, {as[4], c2}}
	x.want[c1], x.want[c2] = []float32{}, []float32{}
	graph := func() (*recorder.Graph, error) {
		if err := r.PrepareCapture(0); err != nil {
			return nil, err
		}
		for i, pair := range pairs {
			err := x.matmul(0, pair[0], b, pair[1])
			expect(pair[1], avals[[]int{1, 4}[i]], err)
			if err != nil {
				return nil, errors.Join(err, r.AbortCapture(0))
			}
		}
		if err := r.Sync(context.Background(), 0); err != nil {
			return nil, errors.Join(err, r.AbortCapture(0))
		}
		if err := r.BeginCapture(0); err != nil {
			return nil, err
		}
		for _, pair := range pairs {
			if err := x.matmul(0, pair[0], b, pair[1]); err != nil {
				_, eerr := r.EndCapture(0)
				return nil, errors.Join(err, eerr)
			}
		}
		return r.EndCapture(0)
	}
	g, err := graph()
	if x.ok("capture", err) {
		for round := range 3 {
			if round == 2 {
				avals[1] = values(40)
				if !x.ok("rewrite A", r.Write(0, as[1], new(*recorder.Staging), bytesOf(avals[1]))) {
					avals[1] = nil
				}
			}
			err := g.Replay()
			x.ok("replay", err)
			expect(c1, avals[1], err)
			expect(c2, avals[4], err)
		}
		defer func() { x.ok("graph close", g.Close()) }()
	}
	for c, want := range x.want {
		got := make([]byte, c.Size)
		err := r.Read(context.Background(), 1, c, got)
		switch {
		case want == nil:
			if err == nil {
				require.NotNil(t, x.cause, "an output of failed work read %v with no fault armed", got)
				require.Fail(t, "an output of failed work read as written", "%v", got)
			}
			x.ok("read of failed work", err)
		case len(want) == 0:
			require.ErrorIs(t, err, errs.Unwritten, "the product over a never-written input")
			if !errors.Is(err, errFresh) {
				x.ok("read of the product over a never-written input", err)
			}
		default:
			if x.ok("read", err) {
				require.Equal(t, want, floatsOf(got), "an output of work that succeeded")
			}
		}
	}
	for _, c := range x.claims {
		x.ok("quiesce", r.Quiesce(3))
		x.ok("free", r.Free(c))
	}
}

// Every fallible device call of a scenario over texel bindings (eager
// products on a four-set cache, a capture and its replays, two slots)
// fails once, at each of its occurrences in turn, on the host device:
// every call then succeeds or fails with an error wrapping the cause,
// every output reads its product or as unwritten with the cause (never
// bytes no work wrote), and after Close nothing is alive and the device's
// checker is silent.
func TestTexelSetsEveryFault(t *testing.T) {
	run := func(t *testing.T, call hostdev.Call, nth int) *hostdev.Device {
		leftover := goroutines(t)
		dev := hostdev.New(hostdev.Options{})
		x := &texelRun{t: t}
		if nth > 0 {
			x.cause = fmt.Errorf("injected %s #%d", call, nth)
			dev.FailNth(call, nth, x.cause)
		}
		x.scenario(dev)
		if call == hostdev.UpdateSet && nth > 0 {
			require.True(t, x.fired, "a failed set write fails a launch")
		}
		requireClean(t, dev)
		leftover()
		return dev
	}
	clean := run(t, 0, 0)
	require.Positive(t, clean.Count(hostdev.UpdateSet), "the scenario writes texel sets")
	cases := 0
	for _, call := range hostdev.Calls() {
		for nth := 1; nth <= clean.Count(call); nth++ {
			cases++
			t.Run(fmt.Sprintf("%s#%d", call, nth), func(t *testing.T) { run(t, call, nth) })
		}
	}
	t.Logf("%d fault cases, %d UpdateSet calls in a clean run", cases, clean.Count(hostdev.UpdateSet))
}
