package blackbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// Matmul attacked from outside on the shapes that were once the root
// package's texel path (N and K multiples of 8, inputs at 16-byte
// offsets): views, stand-ins, closes in flight, graphs, several slots,
// unwritten inputs. ops chooses its kernel per shape class by measured
// time, so which kernel runs (and whether it reads texels) is not checked
// here; every result is checked against a float64 reference, and the
// device's cleanup checks that nothing (no texel view either) is left.

// texelM, texelN, texelK are a small matmul with N and K multiples of 8.
const texelM, texelN, texelK = 8, 16, 24

// texelJob is one matmul's buffers: A and B as views lead elements into
// buffers of their own (lead 0: the whole buffer is the view), C fresh,
// and the product the host expects.
type texelJob[T vkc.Float] struct {
	owned   []*vkc.Buffer[T]
	a, b, c *vkc.Buffer[T]
	want    []float32
	m, n, k int
}

// newTexelJob makes a job over integers in [-3, 3], inputs written: every
// sum of products is an integer far below 2048, so float32 and Float16
// hold it exactly and a result compares for equality whatever the order
// of the sums.
func newTexelJob[T vkc.Float](dev *vkc.Device, r *rand.Rand, m, n, k, lead int, conv func(float32) T) (*texelJob[T], error) {
	j := &texelJob[T]{m: m, n: n, k: k}
	as, bs := smallInts(r, m*k, -3, 3), smallInts(r, k*n, -3, 3)
	j.want = matmulReference(as, bs, m, n, k)
	input := func(xs []float32) (*vkc.Buffer[T], error) {
		buf, err := vkc.NewBuffer[T](dev, lead+len(xs))
		if err != nil {
			return nil, err
		}
		j.owned = append(j.owned, buf)
		v := buf
		if lead > 0 {
			if v, err = buf.View(lead, len(xs)); err != nil {
				return nil, err
			}
			j.owned = append(j.owned, v)
		}
		hs := make([]T, len(xs))
		for i, x := range xs {
			hs[i] = conv(x)
		}
		return v, v.Write(hs)
	}
	var err error
	if j.a, err = input(as); err != nil {
		return j, err
	}
	if j.b, err = input(bs); err != nil {
		return j, err
	}
	if j.c, err = vkc.NewBuffer[T](dev, m*n); err != nil {
		return j, err
	}
	j.owned = append(j.owned, j.c)
	return j, nil
}

// closeInputs closes every buffer but C.
func (j *texelJob[T]) closeInputs() error {
	var errs []error
	for _, b := range j.owned {
		if b != j.c {
			errs = append(errs, b.Close())
		}
	}
	return errors.Join(errs...)
}

// close closes every buffer of the job.
func (j *texelJob[T]) close() error {
	var errs []error
	for _, b := range j.owned {
		errs = append(errs, b.Close())
	}
	return errors.Join(errs...)
}

// check reads rows of C on s and compares them with the reference.
func (j *texelJob[T]) check(s *vkc.Stream, rows int, back func(T) float32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := j.c.ReadOn(ctx, s)
	if err != nil {
		return err
	}
	for i := range rows * j.n {
		if back(got[i]) != j.want[i] {
			return fmt.Errorf("C[%d] = %v, want %v", i, back(got[i]), j.want[i])
		}
	}
	return nil
}

// f32Of, f16Of and f32Back convert a job's host values to and from its
// element type.
func f32Of(x float32) float32 { return x }

func f16Of(x float32) vkc.Float16 { return vkc.Float16From(x) }

func f32Back(x vkc.Float16) float32 { return x.Float32() }

// texelRaceStep is one kind of call on the texel shapes that the close race
// runs in a loop; it returns the first error (a wrong result is one).
type texelRaceStep struct {
	name string
	run  func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error
}

var texelRaceSteps = []texelRaceStep{
	// Eager Matmul whose inputs close while it may still run.
	{"Matmul, inputs closed in flight", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 4, f32Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		if err := opMatmul(s, j.a, j.b, j.c, texelM, texelN, texelK); err != nil {
			return err
		}
		if err := j.closeInputs(); err != nil {
			return err
		}
		return j.check(s, texelM, f32Of)
	}},
	// MatmulOf[Float16] on views 8 elements (16 bytes) in.
	{"MatmulOf[Float16]", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 8, f16Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		if err := opMatmul(s, j.a, j.b, j.c, texelM, texelN, texelK); err != nil {
			return err
		}
		if err := j.closeInputs(); err != nil {
			return err
		}
		return j.check(s, texelM, f32Back)
	}},
	// MatmulDyn over every row.
	{"MatmulDyn", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 0, f32Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		rows, err := vkc.NewParam(dev, uint32(texelM))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		if err := opMatmulDyn(s, j.a, j.b, j.c, rows, texelN, texelK); err != nil {
			return err
		}
		return j.check(s, texelM, f32Of)
	}},
	// A graph of a texel Matmul replayed, its inputs closed, replayed
	// again, and closed.
	{"graph", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 4, f32Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		g, err := s.Capture(func(s *vkc.Stream) error { return opMatmul(s, j.a, j.b, j.c, texelM, texelN, texelK) })
		if err != nil {
			return err
		}
		defer func() { _ = g.Close() }()
		if err := g.Replay(); err != nil {
			return err
		}
		if err := j.closeInputs(); err != nil {
			return err
		}
		if err := g.Replay(); err != nil {
			return err
		}
		if err := j.check(s, texelM, f32Of); err != nil {
			return err
		}
		return g.Close()
	}},
	// A graph of MatmulDynOf[Float16] replayed over 3 rows, then all of
	// them, its inputs closed in between.
	{"MatmulDynOf[Float16] graph", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 8, f16Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		rows, err := vkc.NewParam(dev, uint32(3))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		g, err := s.Capture(func(s *vkc.Stream) error { return opMatmulDyn(s, j.a, j.b, j.c, rows, texelN, texelK) })
		if err != nil {
			return err
		}
		defer func() { _ = g.Close() }()
		if err := g.Replay(); err != nil {
			return err
		}
		if err := j.closeInputs(); err != nil {
			return err
		}
		if err := rows.Set(texelM); err != nil {
			return err
		}
		if err := g.Replay(); err != nil {
			return err
		}
		return j.check(s, texelM, f32Back)
	}},
	// A texel graph closed on another goroutine while this one replays it:
	// each replay runs or is refused with ErrClosed, and C holds the
	// product (the capture's warmup wrote it, and every replay).
	{"graph closed while replayed", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 4, f32Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		g, err := s.Capture(func(s *vkc.Stream) error { return opMatmul(s, j.a, j.b, j.c, texelM, texelN, texelK) })
		if err != nil {
			return err
		}
		closed := make(chan error, 1)
		go func() { closed <- g.Close() }()
		for range 4 {
			err := g.Replay()
			if errors.Is(err, vkc.ErrClosed) {
				break
			}
			if err != nil {
				<-closed
				return err
			}
		}
		if err := <-closed; err != nil {
			return err
		}
		return j.check(s, texelM, f32Of) // the warmup, and any replay, wrote the product
	}},
	// A Matmul racing the Close of its input view on another goroutine:
	// refused with ErrClosed, or run with the view's values.
	{"Matmul racing the close of its view", func(dev *vkc.Device, s *vkc.Stream, r *rand.Rand) error {
		j, err := newTexelJob(dev, r, texelM, texelN, texelK, 4, f32Of)
		defer func() { _ = j.close() }()
		if err != nil {
			return err
		}
		closed := make(chan error, 1)
		go func() { closed <- j.a.Close() }()
		err = opMatmul(s, j.a, j.b, j.c, texelM, texelN, texelK)
		if cerr := <-closed; cerr != nil {
			return cerr
		}
		if errors.Is(err, vkc.ErrClosed) {
			_, err = vkc.NewBuffer[float32](dev, 1) // the device's own Close ends the loop
			return err
		}
		if err != nil {
			return err
		}
		return j.check(s, texelM, f32Of)
	}},
}

// Device.Close racing every call on the texel shapes (eager Matmul on
// float32 and Float16, MatmulDyn, graphs, inputs and views closing with
// work in flight), each on a stream of its own slot, under collector
// pressure: every loop stops on ErrClosed, never another error or a wrong
// result, and afterwards no Vulkan object (no texel view) is alive and the
// layer is silent.
func TestTexelMatmulDeviceCloseRace(t *testing.T) {
	before := runtime.NumGoroutine()
	churn := gcpressure.Start(t)
	rounds := gcpressure.Scaled(4, 60)
	for round := range rounds {
		dev, err := vkc.Open(vkc.WithValidation(true), vkc.WithStreams(len(texelRaceSteps)+1))
		require.NoError(t, err)
		keep := growPagesAhead(t, dev)
		stopped := make([]error, len(texelRaceSteps))
		ready := make(chan struct{}, len(texelRaceSteps))
		var wg sync.WaitGroup
		for i, st := range texelRaceSteps {
			s := dev.NewStream()
			r := rng(97, round, i)
			wg.Go(func() {
				for n := 0; ; n++ {
					err := st.run(dev, s, r)
					if n == 0 {
						ready <- struct{}{}
					}
					if err != nil {
						stopped[i] = err
						return
					}
				}
			})
		}
		for range texelRaceSteps {
			<-ready
		}
		require.NoError(t, dev.Close())
		wg.Wait()
		for i, err := range stopped {
			assert.ErrorIs(t, err, vkc.ErrClosed, "round %d: %s", round, texelRaceSteps[i].name)
		}
		assert.NoError(t, keep(), "closing after the device closed is harmless")
		closeAndCheck(t, dev)
		if t.Failed() {
			break
		}
	}
	allocs := churn.Stop()
	after := settledGoroutines(before)
	assert.LessOrEqual(t, after, before, "goroutines leaked")
	t.Logf("texel close race: %d rounds x %d call kinds, %d churn allocations", rounds, len(texelRaceSteps), allocs)
}

// growPagesAhead makes the device's first page of every kind the steps
// allocate from (device-local, upload for Params and host writes,
// readback for reads) and holds a claim in each until the returned
// function runs, so the steps find their pages made, as a long-running
// program's do (races_under_gc_steps_test.go's newStressShared does the
// same for host staging).
func growPagesAhead(t *testing.T, dev *vkc.Device) (release func() error) {
	t.Helper()
	require.NoError(t, warmStaging(dev))
	b, err := vkc.FromSlice(dev, []float32{1, 2, 3, 4})
	require.NoError(t, err)
	_, err = b.Read(testCtx(t))
	require.NoError(t, err)
	p, err := vkc.NewParam(dev, uint32(1))
	require.NoError(t, err)
	return func() error { return errors.Join(b.Close(), p.Close()) }
}

// openInfo is the default device's description.
func openInfo(t testing.TB) vkc.DeviceInfo {
	t.Helper()
	dev := openDevice(t)
	return dev.Info()
}

// texelGrid is one buffer of A matrices and one of B matrices, each 8x8 and
// viewed at every multiple of 4 elements (16 bytes) up to views-1: views²
// distinct pairs, each its own descriptor set. outs is one output buffer,
// viewed per pair.
type texelGrid struct {
	abuf, bbuf, out *vkc.Buffer[float32]
	as, bs          []float32
	a, b            []*vkc.Buffer[float32]
}

const gridDim = 8 // M = N = K

func newTexelGrid(t *testing.T, dev *vkc.Device, views, outs int) *texelGrid {
	t.Helper()
	span := gridDim*gridDim + 4*(views-1)
	g := &texelGrid{abuf: newBuffer[float32](t, dev, span), bbuf: newBuffer[float32](t, dev, span),
		out: newBuffer[float32](t, dev, outs*gridDim*gridDim)}
	for i := range views {
		g.a = append(g.a, view(t, g.abuf, 4*i, gridDim*gridDim))
		g.b = append(g.b, view(t, g.bbuf, 4*i, gridDim*gridDim))
	}
	return g
}

// fill writes fresh random values into both input buffers.
func (g *texelGrid) fill(t *testing.T, r *rand.Rand) {
	t.Helper()
	g.as, g.bs = randFloats(r, g.abuf.Len(), -1, 1), randFloats(r, g.bbuf.Len(), -1, 1)
	require.NoError(t, g.abuf.Write(g.as))
	require.NoError(t, g.bbuf.Write(g.bs))
}

// want is the product of A view i and B view j, from the host's values.
func (g *texelGrid) want(i, j int) []float32 {
	n := gridDim * gridDim
	return matmulReference(g.as[4*i:4*i+n], g.bs[4*j:4*j+n], gridDim, gridDim, gridDim)
}

// outView is output slot o, closed at cleanup.
func (g *texelGrid) outView(t *testing.T, o int) *vkc.Buffer[float32] {
	t.Helper()
	n := gridDim * gridDim
	return view(t, g.out, o*n, n)
}

// Descriptor-set cache churn on the texel shapes: more distinct (A view, B
// view, C view) triples than a slot caches (512), issued without a read in
// between, so the cache evicts texel sets (destroying their views) while
// later batches are pending; then the same inside a capture window (sets
// pinned) whose graph is replayed between and after eager churn that
// evicts everything else. Every product matches a float64 reference, the
// synchronization validation stays silent and nothing leaks.
func TestTexelSetCacheChurnMatchesReference(t *testing.T) {
	dev := openDevice(t, vkc.WithSyncValidation(syncValidation()))
	s := dev.Stream()
	ctx := testCtx(t)
	const views = 24 // 576 pairs
	pairs := views * views
	g := newTexelGrid(t, dev, views, pairs)
	outs := make([]*vkc.Buffer[float32], pairs)
	for o := range outs {
		outs[o] = g.outView(t, o)
	}
	r := rng(101)
	n := gridDim * gridDim
	checkAll := func(what string, order func(o int) (int, int)) {
		t.Helper()
		got, err := g.out.ReadOn(ctx, s)
		require.NoError(t, err, what)
		for o := range pairs {
			i, j := order(o)
			requireNear(t, g.want(i, j), got[o*n:(o+1)*n], 1e-5, "%s: A view %d, B view %d", what, i, j)
		}
	}
	forward := func(o int) (int, int) { return o / views, o % views }
	backward := func(o int) (int, int) { return views - 1 - o%views, views - 1 - o/views }
	for round, order := range []func(int) (int, int){forward, backward, forward} {
		g.fill(t, r)
		for o := range pairs {
			i, j := order(o)
			require.NoError(t, opMatmul(s, g.a[i], g.b[j], outs[o], gridDim, gridDim, gridDim))
		}
		checkAll(fmt.Sprintf("eager round %d", round), order)
	}

	// A window over 40 pairs no eager round used together (A view i with
	// B view i+1 into the output slots backwards): its sets are pinned.
	const captured = 40
	capturePair := func(c int) (int, int, int) { return c % views, (c + 1) % views, pairs - 1 - c }
	graph, err := s.Capture(func(s *vkc.Stream) error {
		for c := range captured {
			i, j, o := capturePair(c)
			if err := opMatmul(s, g.a[i], g.b[j], outs[o], gridDim, gridDim, gridDim); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	defer graph.Close()
	checkGraph := func(what string) {
		t.Helper()
		require.NoError(t, graph.Replay(), what)
		got, err := g.out.ReadOn(ctx, s)
		require.NoError(t, err, what)
		for c := range captured {
			i, j, o := capturePair(c)
			requireNear(t, g.want(i, j), got[o*n:(o+1)*n], 1e-5, "%s: A view %d, B view %d", what, i, j)
		}
	}
	for round := range 2 {
		g.fill(t, r)
		checkGraph(fmt.Sprintf("replay %d before eager churn", round))
		for o := range pairs - captured {
			i, j := backward(o)
			require.NoError(t, opMatmul(s, g.a[i], g.b[j], outs[o], gridDim, gridDim, gridDim))
		}
		g.fill(t, r)
		checkGraph(fmt.Sprintf("replay %d after eager churn", round))
	}
	require.NoError(t, graph.Close())
	g.fill(t, r)
	for o := range pairs {
		i, j := forward(o)
		require.NoError(t, opMatmul(s, g.a[i], g.b[j], outs[o], gridDim, gridDim, gridDim))
	}
	checkAll("eager churn after the graph closed", forward)
}

// The unwritten rule on the texel shapes, beside the same calls on inputs a
// stand-in binds (views one element in, which take matmul_wide): an input
// never written, or written only in part, leaves C unwritten with
// ErrNeverWritten, eagerly and in a graph; a replay refused while a
// neighbour records leaves C unwritten with ErrStreamCapturing, and a
// Matmul reading that C passes the cause on; writing the inputs makes the
// next replay read right.
func TestTexelMatmulTaintMatchesStorageKernels(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	nb := sameSlot(dev, s)
	const m, n, k = texelM, texelN, texelK
	for _, lead := range []int{4, 1} {
		what := fmt.Sprintf("inputs %d elements into their buffers", lead)
		r := rng(103, lead)
		as, bs := randFloats(r, m*k, -1, 1), randFloats(r, k*n, -1, 1)
		abuf, bbuf := newBuffer[float32](t, dev, lead+m*k), newBuffer[float32](t, dev, lead+k*n)
		a, b := view(t, abuf, lead, m*k), view(t, bbuf, lead, k*n)
		c := newBuffer[float32](t, dev, m*n)

		require.NoError(t, opMatmul(s, a, b, c, m, n, k))
		requireUnwritten(t, s, c, vkc.ErrNeverWritten, "%s: neither input written", what)
		require.NoError(t, a.Write(as))
		require.NoError(t, view(t, b, 0, k*n-1).Write(bs[:k*n-1]))
		require.NoError(t, opMatmul(s, a, b, c, m, n, k))
		requireUnwritten(t, s, c, vkc.ErrNeverWritten, "%s: B's last element unwritten", what)

		g, err := s.Capture(func(s *vkc.Stream) error { return opMatmul(s, a, b, c, m, n, k) })
		require.NoError(t, err, what)
		defer g.Close()
		require.NoError(t, g.Replay())
		requireUnwritten(t, s, c, vkc.ErrNeverWritten, "%s: replay over B's unwritten element", what)
		require.NoError(t, b.Write(bs))
		require.NoError(t, g.Replay())
		requireNear(t, matmulReference(as, bs, m, n, k), read(t, s, c), 1e-5, what)
		if lead == 4 {
		}

		// A replay refused while the neighbour records taints C; a texel
		// Matmul reading C as its A inherits the cause.
		d := newBuffer[float32](t, dev, m*n)
		require.NoError(t, nb.PrepareCapture())
		require.NoError(t, nb.BeginCapture())
		require.ErrorIs(t, g.Replay(), vkc.ErrStreamCapturing, what)
		ng, err := nb.EndCapture()
		require.NoError(t, err)
		require.NoError(t, ng.Close())
		requireUnwritten(t, s, c, vkc.ErrStreamCapturing, "%s: C after the refused replay", what)
		sq := upload(t, dev, randFloats(r, n*n, -1, 1))
		require.NoError(t, opMatmul(s, c, sq, d, m, n, n))
		requireUnwritten(t, s, d, vkc.ErrStreamCapturing, "%s: a Matmul over the refused replay's C", what)

		require.NoError(t, g.Replay())
		requireNear(t, matmulReference(as, bs, m, n, k), read(t, s, c), 1e-5, "%s: after a good replay", what)
	}
}

// MatmulDyn on the texel shapes writes only C's first m rows, so a fresh C
// stays unwritten until m covers every row, eagerly and in a graph; and a
// graph over A whose rows past the first m were never written reads right
// for those m rows.
func TestTexelMatmulDynRowsTaint(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const rows, n, k = 16, texelN, texelK
	r := rng(107)
	as, bs := randFloats(r, rows*k, -1, 1), randFloats(r, k*n, -1, 1)
	abuf := newBuffer[float32](t, dev, 8+rows*k)
	a := view(t, abuf, 8, rows*k)
	b := upload(t, dev, bs)
	c := newBuffer[float32](t, dev, rows*n)
	mp := newParam(t, dev, uint32(5))
	require.NoError(t, view(t, a, 0, 5*k).Write(as[:5*k]))
	g, err := s.Capture(func(s *vkc.Stream) error { return opMatmulDyn(s, a, b, c, mp, n, k) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, c, vkc.ErrNeverWritten, "C after 5 of %d rows", rows)
	got, err := view(t, c, 0, 5*n).ReadOn(testCtx(t), s)
	require.NoError(t, err, "C's first 5 rows")
	requireNear(t, matmulReference(as[:5*k], bs, 5, n, k), got, 1e-5, "C's first 5 rows")

	require.NoError(t, mp.Set(rows))
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, c, vkc.ErrNeverWritten, "rows past 5 computed from A's unwritten rows")
	require.NoError(t, a.Write(as))
	require.NoError(t, g.Replay())
	requireNear(t, matmulReference(as, bs, rows, n, k), read(t, s, c), 1e-5, "every row")
	require.NoError(t, mp.Set(3))
	require.NoError(t, opMatmulDyn(s, a, b, c, mp, n, k))
	requireNear(t, matmulReference(as, bs, rows, n, k), read(t, s, c), 1e-5, "eager over 3 rows of the same values")
}

// Matmul through views on the texel shapes and beside it: A and B at every
// 16-byte offset, A == B (a square matrix times itself), float32 views of
// a byte buffer at byte offsets 16 and 32, Float16 views at 8-element
// (16-byte: texel) and 4-element (8-byte: a stand-in, matmul_wide)
// offsets. Every product matches a float64 reference.
func TestTexelMatmulOnViewsMatchesReference(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const m, n, k = texelM, texelN, texelK

	r := rng(109)
	for _, offA := range []int{0, 4, 8, 12} {
		for _, offB := range []int{0, 4, 12} {
			what := fmt.Sprintf("float32 views at %d and %d", offA, offB)
			as, bs := randFloats(r, offA+m*k, -1, 1), randFloats(r, offB+k*n, -1, 1)
			a := view(t, upload(t, dev, as), offA, m*k)
			b := view(t, upload(t, dev, bs), offB, k*n)
			c := newBuffer[float32](t, dev, m*n)
			require.NoError(t, opMatmul(s, a, b, c, m, n, k), what)
			requireNear(t, matmulReference(as[offA:], bs[offB:], m, n, k), read(t, s, c), 1e-5, what)
		}
	}

	// A == B: one 16x16 view 4 elements in, multiplied by itself.
	const q = 16
	xs := randFloats(r, 4+q*q, -1, 1)
	sq := view(t, upload(t, dev, xs), 4, q*q)
	c := newBuffer[float32](t, dev, q*q)
	require.NoError(t, opMatmul(s, sq, sq, c, q, q, q))
	requireNear(t, matmulReference(xs[4:], xs[4:], q, q, q), read(t, s, c), 1e-5, "A == B")

	// float32 views of one byte buffer at byte offsets 16 and 32.
	as, bs := randFloats(r, m*k, -1, 1), randFloats(r, k*n, -1, 1)
	raw := newBuffer[uint8](t, dev, 32+4*(m*k+k*n)+16)
	av, err := vkc.ViewAs[float32](raw, 16, m*k)
	require.NoError(t, err)
	defer av.Close()
	bv, err := vkc.ViewAs[float32](raw, 32+4*m*k, k*n)
	require.NoError(t, err)
	defer bv.Close()
	require.NoError(t, av.Write(as))
	require.NoError(t, bv.Write(bs))
	c = newBuffer[float32](t, dev, m*n)
	require.NoError(t, opMatmul(s, av, bv, c, m, n, k))
	requireNear(t, matmulReference(as, bs, m, n, k), read(t, s, c), 1e-5, "ViewAs of bytes at 16 and 32+")

	if !dev.Info().Features.Has(vkc.FeatureStorage16) {
		t.Log("no 16-bit storage: Float16 views left out")
		return
	}
	for _, off := range []int{8, 4, 16, 12} {
		what := fmt.Sprintf("Float16 views %d elements in", off)
		as, bs := smallInts(r, m*k, -3, 3), smallInts(r, k*n, -3, 3)
		half := func(xs []float32) []vkc.Float16 {
			hs := make([]vkc.Float16, off+len(xs))
			for i, x := range xs {
				hs[off+i] = vkc.Float16From(x)
			}
			return hs
		}
		a := view(t, upload(t, dev, half(as)), off, m*k)
		b := view(t, upload(t, dev, half(bs)), off, k*n)
		c := newBuffer[vkc.Float16](t, dev, m*n)
		require.NoError(t, opMatmul(s, a, b, c, m, n, k), what)
		got := read(t, s, c)
		want := matmulReference(as, bs, m, n, k)
		for i := range got {
			require.Equal(t, want[i], got[i].Float32(), "%s: C[%d]", what, i)
		}
	}
}

// Inputs on pages of their own, closed after each product so their pages
// are released while the slot's cache still holds the texel sets (and
// views) that named them; later products on new pages, a second slot,
// and the Device's Close then destroy those views after their buffers:
// every product is right, nothing leaks and the layer stays silent.
func TestTexelViewsOutliveReleasedPages(t *testing.T) {
	const page = 64 << 10
	dev := openDevice(t, vkc.WithPageSize(page), vkc.WithSyncValidation(syncValidation()))
	streams := []*vkc.Stream{dev.Stream(), dev.NewStream()}
	const m, n, k = texelM, texelN, texelK
	elems := page / f32Size // a page's worth: each buffer takes its own page
	r := rng(113)
	minPages, maxPages := 1<<30, 0
	for round := range 24 {
		s := streams[round%2]
		as, bs := randFloats(r, m*k, -1, 1), randFloats(r, k*n, -1, 1)
		abuf, err := vkc.NewBuffer[float32](dev, elems)
		require.NoError(t, err)
		bbuf, err := vkc.NewBuffer[float32](dev, elems)
		require.NoError(t, err)
		off := 4 * (round % 5)
		a, err := abuf.View(off, m*k)
		require.NoError(t, err)
		b, err := bbuf.View(elems-k*n-off, k*n)
		require.NoError(t, err)
		require.NoError(t, a.WriteOn(s, as))
		require.NoError(t, b.WriteOn(s, bs))
		c := newBuffer[float32](t, dev, m*n)
		require.NoError(t, opMatmul(s, a, b, c, m, n, k))
		for _, x := range []*vkc.Buffer[float32]{a, b, abuf, bbuf} {
			require.NoError(t, x.Close(), "closed with the product in flight")
		}
		requireNear(t, matmulReference(as, bs, m, n, k), read(t, s, c), 1e-5, "round %d", round)
		pages := dev.MemoryStats().Pages
		minPages, maxPages = min(minPages, pages), max(maxPages, pages)
	}
	t.Logf("live pages between %d and %d over 24 rounds of two fresh pages each", minPages, maxPages)
	assert.Less(t, maxPages, 24, "closed inputs' pages were released")
}

// Random texel shapes (N and K multiples of 8 up to 72, any M up to 40,
// so rows and octets past a group's block are clamped) on views at random
// 16-byte offsets, float32 and Float16, each product against a float64
// reference.
func TestTexelMatmulRandomShapesMatchReference(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	half := dev.Info().Features.Has(vkc.FeatureStorage16)
	r := rng(127)
	for round := range 24 {
		m, n, k := 1+r.IntN(40), 8*(1+r.IntN(9)), 8*(1+r.IntN(9))
		what := fmt.Sprintf("round %d: %dx%dx%d", round, m, n, k)
		if round%2 == 0 || !half {
			offA, offB := 4*r.IntN(4), 4*r.IntN(4)
			as, bs := randFloats(r, offA+m*k, -1, 1), randFloats(r, offB+k*n, -1, 1)
			a := view(t, upload(t, dev, as), offA, m*k)
			b := view(t, upload(t, dev, bs), offB, k*n)
			c := newBuffer[float32](t, dev, m*n)
			require.NoError(t, opMatmul(s, a, b, c, m, n, k), what)
			requireNear(t, matmulReference(as[offA:], bs[offB:], m, n, k), read(t, s, c), 1e-5, what)
			continue
		}
		offA, offB := 8*r.IntN(3), 8*r.IntN(3)
		as, bs := smallInts(r, offA+m*k, -3, 3), smallInts(r, offB+k*n, -3, 3)
		toHalf := func(xs []float32) []vkc.Float16 {
			hs := make([]vkc.Float16, len(xs))
			for i, x := range xs {
				hs[i] = vkc.Float16From(x)
			}
			return hs
		}
		a := view(t, upload(t, dev, toHalf(as)), offA, m*k)
		b := view(t, upload(t, dev, toHalf(bs)), offB, k*n)
		c := newBuffer[vkc.Float16](t, dev, m*n)
		require.NoError(t, opMatmul(s, a, b, c, m, n, k), what)
		want := matmulReference(as[offA:], bs[offB:], m, n, k)
		for i, h := range read(t, s, c) {
			require.Equal(t, want[i], h.Float32(), "%s: C[%d]", what, i)
		}
	}
}

// Texel inputs with C a view one element into its buffer (written through
// a stand-in and copied back), eagerly and in a graph: the product lands
// in exactly C's elements and the buffer's others keep their values.
func TestTexelMatmulIntoStandInOutput(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
	const m, n, k = texelM, texelN, texelK
	r := rng(131)
	as, bs := randFloats(r, 4+m*k, -1, 1), randFloats(r, 4+k*n, -1, 1)
	a := view(t, upload(t, dev, as), 4, m*k)
	b := view(t, upload(t, dev, bs), 4, k*n)
	around := ramp(m*n+2, 1, 1000)
	cbuf := upload(t, dev, around)
	c := view(t, cbuf, 1, m*n)
	want := append(append([]float32{around[0]}, matmulReference(as[4:], bs[4:], m, n, k)...), around[m*n+1])
	require.NoError(t, opMatmul(s, a, b, c, m, n, k))
	requireNear(t, want, read(t, s, cbuf), 1e-5, "eager")
	require.NoError(t, cbuf.Write(around))
	g, err := s.Capture(func(s *vkc.Stream) error { return opMatmul(s, a, b, c, m, n, k) })
	require.NoError(t, err)
	defer g.Close()
	require.NoError(t, cbuf.Write(around))
	require.NoError(t, g.Replay())
	requireNear(t, want, read(t, s, cbuf), 1e-5, "replayed")
}

// The first texel Matmul of a device (which builds matmul_texel and its
// texel set layout, then writes its first texel set) racing Device.Close:
// it completes before the close or fails with ErrClosed, and nothing is
// left alive, the layer silent.
func TestFirstTexelMatmulRacingDeviceClose(t *testing.T) {
	if !isolated(t) {
		return
	}
	for round := range 12 {
		dev, err := vkc.Open(vkc.WithValidation(true))
		require.NoError(t, err)
		j, err := newTexelJob(dev, rng(139, round), texelM, texelN, texelK, 4, f32Of)
		require.NoError(t, err)
		started := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			close(started)
			for {
				if err := opMatmul(dev.Stream(), j.a, j.b, j.c, texelM, texelN, texelK); err != nil {
					stopped <- err
					return
				}
			}
		}()
		<-started
		if round%2 == 1 {
			runtime.Gosched()
		}
		require.NoError(t, dev.Close())
		require.ErrorIs(t, <-stopped, vkc.ErrClosed, "round %d", round)
		assert.NoError(t, j.close())
		closeAndCheck(t, dev)
	}
}

// Texel inputs written by pending work on another slot, and rewritten
// there while this slot's read of them may be pending: the products chain
// across slots in the order issued (read after write, write after read),
// every one right, with the synchronization validation silent.
func TestTexelMatmulAcrossSlotsOrdersReadsAndWrites(t *testing.T) {
	dev := openDevice(t, vkc.WithStreams(2), vkc.WithSyncValidation(syncValidation()))
	s1, s2 := dev.Stream(), dev.NewStream()
	const q = 16 // square: each product can feed the next
	r := rng(149)
	xs, ys := randFloats(r, q*q, -1, 1), randFloats(r, q*q, -1, 1)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	pbuf := newBuffer[float32](t, dev, 4+q*q)
	p := view(t, pbuf, 4, q*q) // a texel view 16 bytes in
	out := newBuffer[float32](t, dev, q*q)
	out2 := newBuffer[float32](t, dev, q*q)
	for round := range 4 {
		require.NoError(t, opMatmul(s1, x, y, p, q, q, q))    // slot 1 writes p
		require.NoError(t, opMatmul(s2, p, y, out, q, q, q))  // slot 2 reads p as texels
		require.NoError(t, opMatmul(s1, y, x, p, q, q, q))    // slot 1 rewrites p
		require.NoError(t, opMatmul(s2, p, p, out2, q, q, q)) // slot 2 reads the rewrite twice
		xy := matmulReference(xs, ys, q, q, q)
		yx := matmulReference(ys, xs, q, q, q)
		requireNear(t, matmulReference(xy, ys, q, q, q), read(t, s2, out), 1e-4, "round %d: (x·y)·y", round)
		requireNear(t, matmulReference(yx, yx, q, q, q), read(t, s2, out2), 1e-4, "round %d: (y·x)²", round)
		xs = randFloats(r, q*q, -1, 1)
		require.NoError(t, x.WriteOn(s1, xs))
	}
}
