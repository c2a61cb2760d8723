// Attacks on promises kept below the root package: the recorder's taint,
// capture and lifetime rules, a device close that waits for a LoadKernel in
// flight, and SPIR-V validation before the driver sees a module. Each
// failed on the code it was written against.

package vkc

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// isolated runs the calling test in a child process when what it attacks
// can crash the process (a fault in the driver or the layer): the parent
// then reports the crash, with the child's output, as this test's failure
// instead of dying with every other test. It returns true in the child,
// which runs the test's body; the parent's body returns at once.
func isolated(t *testing.T) bool {
	t.Helper()
	if os.Getenv("VKC_ISOLATED") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VKC_ISOLATED="+t.Name())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process failed:\n%s", out)
	require.True(t, strings.Contains(string(out), "--- PASS: "+t.Name()), "the child did not pass:\n%s", out)
	return false
}

// A replay whose input was never written leaves its outputs unwritten, as
// the same launch done eagerly does; a later write of the input and replay
// make them readable.
func TestAttackReplayOfUnwrittenInputTaintsOutputs(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	x, err := NewBuffer[float32](dev, 16)
	require.NoError(t, err)
	y := capBuffer(t, dev, capRamp(16, 1, 1))
	step := func(s *Stream) error { return Scale(s, 2, x, y) }

	require.NoError(t, step(s))
	capRequireUnwritten(t, s, y, ErrNeverWritten) // eagerly

	require.NoError(t, y.WriteOn(s, capRamp(16, 1, 1)))
	g, err := s.Capture(step)
	require.NoError(t, err)
	require.NoError(t, y.WriteOn(s, capRamp(16, 1, 1)))
	require.NoError(t, g.Replay())
	capRequireUnwritten(t, s, y, ErrNeverWritten) // replayed

	require.NoError(t, x.WriteOn(s, capRamp(16, 5, 1)))
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(16, 10, 2), capReadOn(t, s, y))
	require.NoError(t, g.Close())
}

// A replay whose input a failed submission tainted after the capture
// leaves its outputs tainted with that failure, as the eager launch would.
func TestAttackReplayOfTaintedInputTaintsOutputs(t *testing.T) {
	dev, fd := openFaulty(t)
	s := dev.NewStream()
	x := capBuffer(t, dev, capRamp(16, 1, 1))
	y := capBuffer(t, dev, capRamp(16, 0, 0))
	src := capBuffer(t, dev, capRamp(16, 7, 0))
	g, err := s.Capture(func(s *Stream) error { return Scale(s, 2, x, y) })
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(16, 2, 2), capReadOn(t, s, y))

	cause := submitFailure()
	require.NoError(t, Copy(s, src, x))
	fd.failNext(callSubmit, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	capRequireUnwritten(t, s, x, cause)

	require.NoError(t, g.Replay())
	capRequireUnwritten(t, s, y, cause)
	require.NoError(t, g.Close())
}

// A read on stream B of a buffer that work recorded on stream A (another
// slot) will write either waits for that work or fails with ErrUnwritten;
// it never returns the bytes from before that work.
func TestAttackCrossStreamReadOfPendingWork(t *testing.T) {
	for _, staged := range []bool{false, true} {
		name := map[bool]string{false: "mapped", true: "staged"}[staged]
		t.Run(name, func(t *testing.T) {
			var dev *Device
			if staged {
				dev, _ = openStagedFaulty(t)
			} else {
				dev = openTest(t)
			}
			a, b := dev.NewStream(), dev.NewStream()
			require.NotEqual(t, a.ID()%uint64(dev.Slots()), b.ID()%uint64(dev.Slots()))
			xs, ys := capRamp(64, 1, 1), capRamp(64, 1000, 1)
			x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
			require.NoError(t, dev.Stream().Sync(context.Background()))
			want := capAxpy(1, xs, ys)

			require.NoError(t, Axpy(a, 1, x, y)) // recorded on A, not submitted
			requireNotStale(t, b, y, want, ys, "the bytes from before the pending launch")

			g, err := a.Capture(func(s *Stream) error { return Axpy(s, 1, x, y) })
			require.NoError(t, err)
			require.NoError(t, a.Sync(context.Background()))
			before := capAxpy(2, xs, ys)
			require.Equal(t, before, capReadOn(t, a, y))
			require.NoError(t, g.Replay()) // submitted on A, not waited for
			requireNotStale(t, b, y, capAxpy(3, xs, ys), before, "the bytes from before the pending replay")
			require.NoError(t, g.Close())
		})
	}
}

// requireNotStale reads buf on s: the read returns want or fails with
// ErrUnwritten; never the stale bytes, which staleWhat describes.
func requireNotStale(t *testing.T, s *Stream, buf *Buffer[float32], want, stale []float32, staleWhat string) {
	t.Helper()
	got, err := buf.ReadOn(context.Background(), s)
	if err != nil {
		require.ErrorIs(t, err, ErrUnwritten)
		return
	}
	require.NotEqual(t, stale, got, "the read returned %s", staleWhat)
	require.Equal(t, want, got)
}

// A user kernel closed while a live graph recorded it: Close is not an
// error, new launches are refused, and the graph keeps the pipeline alive
// and replays correctly until it closes (the validation layer checks that
// no replay names a destroyed pipeline).
func TestAttackKernelClosedWhileGraphLive(t *testing.T) {
	if !isolated(t) {
		return
	}
	dev := openTest(t)
	k, err := dev.LoadKernel(affineSpec(t))
	require.NoError(t, err)
	s := dev.NewStream()
	x, y := capBuffer(t, dev, capRamp(64, 1, 1)), scratch[float32](t, dev, 64)
	g, err := s.Capture(func(s *Stream) error {
		return k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 64), x, y)
	})
	require.NoError(t, err)
	require.NoError(t, k.Close())
	require.ErrorIs(t, k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 64), x, y), ErrClosed)

	require.NoError(t, x.WriteOn(s, capRamp(64, 10, 1)))
	require.NoError(t, g.Replay())
	require.Equal(t, capRamp(64, 21, 2), capReadOn(t, s, y))
	require.NoError(t, g.Close())
}

// While one slot records, stream work on another slot that needs a new
// page gets it and leaves the window intact (streams on other slots run
// normally, like CUDA's thread-local capture mode): on a staged device the
// other stream's first read needs a readback page. A buffer belongs to no
// stream, so NewBuffer needing a page during a window is refused with an
// error that says so (like cudaMalloc in CUDA's global mode);
// TestCaptureAllocNeedingPageFails shows it dooms the window.
func TestAttackAllocationOnOtherSlotDuringWindow(t *testing.T) {
	const page = 64 << 10
	dev, _ := openStagedFaulty(t, WithPageSize(page))
	owner, other := dev.NewStream(), dev.NewStream()
	require.NotEqual(t, owner.ID()%uint64(dev.Slots()), other.ID()%uint64(dev.Slots()))
	xs, ys := capRamp(16, 1, 1), capRamp(16, 0, 3)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	big := scratch[float32](t, dev, page/elemSize) // a page of its own, before the window
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }
	capWarmAndBegin(t, owner, step)
	require.NoError(t, step(owner))

	pages := dev.MemoryStats().Pages
	require.NoError(t, Fill(other, big, 3))
	got, err := big.ReadOn(context.Background(), other)
	require.NoError(t, err, "another slot's read gets its readback page during the window")
	require.Equal(t, float32(3), got[page/elemSize-1])
	require.Greater(t, dev.MemoryStats().Pages, pages, "the read needed a page of its own")

	g, err := owner.EndCapture()
	require.NoError(t, err, "the other slot's allocation did not doom the window")
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, xs, ys), capReadOn(t, owner, y))

	require.NoError(t, owner.PrepareCapture())
	require.NoError(t, step(owner))
	require.NoError(t, owner.Sync(context.Background()))
	require.NoError(t, owner.BeginCapture())
	_, err = NewBuffer[float32](dev, page/elemSize)
	require.ErrorIs(t, err, ErrAllocInCapture)
	require.ErrorContains(t, err, "allocate buffers before Capture", "the error states the rule")
	require.NoError(t, owner.AbortCapture())
	require.NoError(t, g.Close())
}

// The warmup grows the pools to the working set whatever its temporaries'
// sizes: a captured function that allocates, uses and frees a temporary
// larger than a page records without ErrAllocInCapture and replays right.
func TestAttackWarmupGrowsPoolsForLargeTemporary(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	for _, mib := range []int{40, 100} {
		n := mib << 20 / elemSize
		out := scratch[float32](t, dev, 1)
		g, err := s.Capture(func(s *Stream) error {
			tmp, err := NewBuffer[float32](dev, n)
			if err != nil {
				return err
			}
			if err := Fill(s, tmp, 1); err != nil {
				return err
			}
			if err := Sum(s, tmp, out); err != nil {
				return err
			}
			return tmp.Close()
		})
		require.NoError(t, err, "a %d MiB temporary", mib)
		require.NoError(t, Fill(s, out, 0))
		require.NoError(t, g.Replay())
		require.Equal(t, []float32{float32(n)}, capReadOn(t, s, out))
		require.NoError(t, g.Close())
	}
}

// A neighbour's Capture or PrepareCapture on a slot another stream is
// capturing fails with ErrStreamCapturing (another stream owns the window),
// not ErrCaptureState, and leaves the owner's window intact.
func TestAttackNeighbourPrepareCaptureRefused(t *testing.T) {
	dev := openTest(t)
	owner := dev.NewStream()
	neighbour := dev.StreamWithID(owner.ID() + uint64(dev.Slots()))
	xs, ys := capRamp(16, 1, 1), capRamp(16, 2, 0)
	x, y := capBuffer(t, dev, xs), capBuffer(t, dev, ys)
	step := func(s *Stream) error { return Axpy(s, 1, x, y) }
	called := false
	neighbourTries := func(when string) {
		require.ErrorIs(t, neighbour.PrepareCapture(), ErrStreamCapturing, when)
		_, err := neighbour.Capture(func(*Stream) error { called = true; return nil })
		require.ErrorIs(t, err, ErrStreamCapturing, when)
		require.False(t, called, "the refused capture ran its function")
	}
	require.NoError(t, owner.PrepareCapture())
	neighbourTries("window prepared")
	require.NoError(t, step(owner))
	require.NoError(t, owner.Sync(context.Background()))
	require.NoError(t, owner.BeginCapture())
	neighbourTries("window recording")
	require.NoError(t, step(owner))
	g, err := owner.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Replay())
	require.Equal(t, capAxpy(2, xs, ys), capReadOn(t, owner, y))
	require.NoError(t, g.Close())
}

// LoadKernel racing Device.Close either completes before the close (which
// then destroys the kernel) or fails with ErrClosed; it never leaves a
// pipeline, layout or module alive, nor makes the layer report
// vkDestroyDevice with live children.
func TestAttackLoadKernelRacingDeviceClose(t *testing.T) {
	if !isolated(t) {
		return
	}
	spec := affineSpec(t)
	for round := range 20 {
		dev, err := Open(WithValidation(true))
		require.NoError(t, err)
		started := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			var once sync.Once
			for {
				_, err := dev.LoadKernel(spec) // left open: Close destroys it
				once.Do(func() { close(started) })
				if err != nil {
					stopped <- err
					return
				}
			}
		}()
		<-started
		closeAndCheck(t, dev)
		require.ErrorIs(t, <-stopped, ErrClosed, "round %d", round)
		require.Empty(t, dev.LiveObjects(), "round %d", round)
	}
}

// A structurally valid module that breaks SPIR-V's semantic rules (here an
// access chain indexing a struct past its only member) is ErrBadSPIRV at
// LoadKernel, never handed to the driver (where it crashes lavapipe and,
// with validation on, the layer).
func TestAttackKernelWithOutOfBoundsAccessChain(t *testing.T) {
	if !isolated(t) {
		return
	}
	dev := openTest(t)
	spec := affineSpec(t)
	spec.SPIRV = chainPastLastMember(t, spec.SPIRV)
	k, err := dev.LoadKernel(spec)
	if err == nil {
		// Show what the user meets next, then fail.
		x, y := capBuffer(t, dev, capRamp(64, 1, 1)), scratch[float32](t, dev, 64)
		lerr := k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(1, 0, 64), x, y)
		_, rerr := y.Read(context.Background())
		_ = k.Close()
		t.Fatalf("LoadKernel accepted the module; launch: %v, read: %v", lerr, rerr)
	}
	require.ErrorIs(t, err, ErrBadSPIRV)
}

// chainPastLastMember rewrites affine.spv so that its storage-buffer
// access chains index member 1 of a struct whose only member is 0.
func chainPastLastMember(t *testing.T, code []byte) []byte {
	t.Helper()
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	const opConstant, opAccessChain, opVariable, storageBuffer = 43, 65, 59, 12
	intType := map[uint32]bool{}
	constOf := map[uint32]uint32{} // value -> id, for 32-bit integer constants
	isConst := map[uint32]uint32{} // id -> value
	buffers := map[uint32]bool{}
	var chains []int
	for i := 5; i < len(words); {
		op, n := words[i]&0xffff, int(words[i]>>16)
		require.Positive(t, n)
		switch op {
		case 21: // OpTypeInt
			intType[words[i+1]] = true
		case opConstant:
			if intType[words[i+1]] {
				if _, ok := constOf[words[i+3]]; !ok {
					constOf[words[i+3]] = words[i+2]
				}
				isConst[words[i+2]] = words[i+3]
			}
		case opVariable:
			if words[i+3] == storageBuffer {
				buffers[words[i+2]] = true
			}
		case opAccessChain:
			if n >= 5 && buffers[words[i+3]] {
				chains = append(chains, i)
			}
		}
		i += n
	}
	one, ok := constOf[1]
	require.True(t, ok, "affine.spv has an integer constant 1")
	require.NotEmpty(t, chains)
	for _, i := range chains {
		require.Equal(t, uint32(0), isConst[words[i+4]], "the chain's first index is member 0")
		words[i+4] = one
	}
	out := make([]byte, len(code))
	for i, w := range words {
		binary.LittleEndian.PutUint32(out[4*i:], w)
	}
	return out
}

func TestChainPastLastMemberRewritesOnlyTheChains(t *testing.T) {
	code := testSPIRV(t, "affine")
	bad := chainPastLastMember(t, code)
	require.Len(t, bad, len(code))
	diff := 0
	for i := 0; i < len(code); i += 4 {
		if binary.LittleEndian.Uint32(code[i:]) != binary.LittleEndian.Uint32(bad[i:]) {
			diff++
		}
	}
	assert.Equal(t, 2, diff, "one word in each of affine's two storage-buffer access chains")
}

// The property test without its restrictions: reads of buffers that work
// pending on another slot writes, replays whose inputs are unwritten, and
// no wait for the device after a fence wait failed. Every read must still
// return exactly what completed work wrote (the pending work's bytes, if
// the read waits for it) or fail with ErrUnwritten.
func TestAttackPropertyCrossSlotReadsAndTaintedReplays(t *testing.T) {
	seeds, steps := gcpressure.Scaled(20, 200), gcpressure.Scaled(800, 2000)
	var total propTest
	for seed := range seeds {
		total.add(runProperty(t, seed, steps, propOptions{crossSlotReads: true, taintedReplays: true, lateFailedWork: true}))
	}
	total.log(t, seeds)
}

// A submission whose fence wait failed (without device loss) may still
// run: the recorder keeps it until Close and taints what it writes. A host
// write of that buffer afterwards, and a read once the queue has moved on,
// must return what the write wrote (the write waited for the failed work)
// or fail with ErrUnwritten; the late work's bytes must not come back as
// valid. Here a large fill ahead of it in the same submission keeps the
// failed work pending while the host writes.
func TestAttackLateWorkOfFailedFenceWait(t *testing.T) {
	dev, fd := openFaulty(t)
	s, other := dev.NewStream(), dev.NewStream()
	const n = 64
	big := scratch[float32](t, dev, 16<<20)
	y := capBuffer(t, dev, capRamp(n, 0, 0))
	require.NoError(t, Fill(s, big, 1))
	require.NoError(t, Fill(s, y, 66))
	cause := fenceFailure()
	fd.failNext(callWaitFence, 1, cause)
	require.ErrorIs(t, s.Sync(context.Background()), cause)
	capRequireUnwritten(t, s, y, cause)

	want := capRamp(n, 1, 1)
	require.NoError(t, y.WriteOn(s, want))
	// Work submitted after the failed submission completes after it too.
	z := capBuffer(t, dev, capRamp(n, 0, 0))
	require.NoError(t, Fill(other, z, 2))
	require.NoError(t, other.Sync(context.Background()))
	requireNotStale(t, s, y, want, capRamp(n, 66, 0), "the bytes of the failed submission, which ran after the write")
}

// Device.Close can run between EndCapture's (or AbortCapture's) closed
// check and its slot lock: the recorder's Close has then destroyed the slot
// and freed the window's command buffer, and the call, which does not check
// the recorder again, dereferences it (a nil *vk.CommandBuffer). Calling
// the recorder's Close directly stands for that interleaving; both calls
// must return ErrClosed.
func TestAttackWindowCallsAfterRecorderClose(t *testing.T) {
	for _, call := range []string{"EndCapture", "AbortCapture"} {
		t.Run(call, func(t *testing.T) {
			dev := openTest(t)
			s := dev.NewStream()
			x, y := capBuffer(t, dev, capRamp(16, 1, 1)), capBuffer(t, dev, capRamp(16, 0, 0))
			step := func(s *Stream) error { return Axpy(s, 1, x, y) }
			capWarmAndBegin(t, s, step)
			require.NoError(t, step(s))
			require.NoError(t, dev.rec.Close())
			var err error
			require.NotPanics(t, func() {
				if call == "EndCapture" {
					_, err = s.EndCapture()
				} else {
					err = s.AbortCapture()
				}
			})
			require.ErrorIs(t, err, ErrClosed)
		})
	}
}
