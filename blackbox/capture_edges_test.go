package blackbox_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// Attacks on promises kept below the root package, through the public API:
// the recorder's taint, capture and lifetime rules, a device close that
// waits for a LoadKernel in flight, and SPIR-V validation before the
// driver sees a module. Each failed on the code it was written against.
// The attacks that need fault injection or the recorder itself stay in the
// root package's capture_edges_test.go.

// A replay whose input was never written leaves its outputs unwritten, as
// the same launch done eagerly does; a later write of the input and replay
// make them readable.
func TestAttackReplayOfUnwrittenInputTaintsOutputs(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	x, err := vkc.NewBuffer[float32](dev, 16)
	require.NoError(t, err)
	y := upload(t, dev, ramp(16, 1, 1))
	step := func(s *vkc.Stream) error { return opScale(s, 2, x, y) }

	require.NoError(t, step(s))
	requireUnwritten(t, s, y, vkc.ErrNeverWritten) // eagerly

	require.NoError(t, y.WriteOn(s, ramp(16, 1, 1)))
	g, err := s.Capture(step)
	require.NoError(t, err)
	require.NoError(t, y.WriteOn(s, ramp(16, 1, 1)))
	require.NoError(t, g.Replay())
	requireUnwritten(t, s, y, vkc.ErrNeverWritten) // replayed

	require.NoError(t, x.WriteOn(s, ramp(16, 1, 5)))
	require.NoError(t, g.Replay())
	require.Equal(t, ramp(16, 2, 10), read(t, s, y))
	require.NoError(t, g.Close())
}

// A user kernel closed while a live graph recorded it: Close is not an
// error, new launches are refused, and the graph keeps the pipeline alive
// and replays correctly until it closes (the validation layer checks that
// no replay names a destroyed pipeline).
func TestAttackKernelClosedWhileGraphLive(t *testing.T) {
	if !isolated(t) {
		return
	}
	dev := openDevice(t)
	k, err := dev.LoadKernel(affineSpec(t))
	require.NoError(t, err)
	s := dev.NewStream()
	x, y := upload(t, dev, ramp(64, 1, 1)), newBuffer[float32](t, dev, 64)
	g, err := s.Capture(func(s *vkc.Stream) error {
		return k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 64), x, y)
	})
	require.NoError(t, err)
	require.NoError(t, k.Close())
	require.ErrorIs(t, k.Launch(s, [3]uint32{1, 1, 1}, affinePush(2, 1, 64), x, y), vkc.ErrClosed)

	require.NoError(t, x.WriteOn(s, ramp(64, 1, 10)))
	require.NoError(t, g.Replay())
	require.Equal(t, ramp(64, 2, 21), read(t, s, y))
	require.NoError(t, g.Close())
}

// The warmup grows the pools to the working set whatever its temporaries'
// sizes: a captured function that allocates, uses and frees a temporary
// larger than a page records without ErrAllocInCapture and replays right.
func TestAttackWarmupGrowsPoolsForLargeTemporary(t *testing.T) {
	dev := openDevice(t)
	s := dev.NewStream()
	for _, mib := range []int{40, 100} {
		n := mib << 20 / f32Size
		out := newBuffer[float32](t, dev, 1)
		g, err := s.Capture(func(s *vkc.Stream) error {
			tmp, err := vkc.NewBuffer[float32](dev, n)
			if err != nil {
				return err
			}
			if err := vkc.Fill(s, tmp, 1); err != nil {
				return err
			}
			if err := opSum(s, tmp, out); err != nil {
				return err
			}
			return tmp.Close()
		})
		require.NoError(t, err, "a %d MiB temporary", mib)
		require.NoError(t, vkc.Fill(s, out, 0))
		require.NoError(t, g.Replay())
		require.Equal(t, []float32{float32(n)}, read(t, s, out))
		require.NoError(t, g.Close())
	}
}

// A neighbour's Capture or PrepareCapture on a slot another stream is
// capturing fails with ErrStreamCapturing (another stream owns the window),
// not ErrCaptureState, and leaves the owner's window intact.
func TestAttackNeighbourPrepareCaptureRefused(t *testing.T) {
	dev := openDevice(t)
	owner := dev.NewStream()
	neighbour := dev.StreamWithID(owner.ID() + uint64(dev.Slots()))
	xs, ys := ramp(16, 1, 1), ramp(16, 0, 2)
	x, y := upload(t, dev, xs), upload(t, dev, ys)
	step := func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) }
	called := false
	neighbourTries := func(when string) {
		require.ErrorIs(t, neighbour.PrepareCapture(), vkc.ErrStreamCapturing, when)
		_, err := neighbour.Capture(func(*vkc.Stream) error { called = true; return nil })
		require.ErrorIs(t, err, vkc.ErrStreamCapturing, when)
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
	require.Equal(t, axpyRef(2, xs, ys), read(t, owner, y))
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
		dev, err := vkc.Open(vkc.WithValidation(true))
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
		require.ErrorIs(t, <-stopped, vkc.ErrClosed, "round %d", round)
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
	dev := openDevice(t)
	spec := affineSpec(t)
	spec.SPIRV = chainPastLastMember(t, spec.SPIRV)
	k, err := dev.LoadKernel(spec)
	if err == nil {
		// Show what the user meets next, then fail.
		x, y := upload(t, dev, ramp(64, 1, 1)), newBuffer[float32](t, dev, 64)
		lerr := k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, affinePush(1, 0, 64), x, y)
		_, rerr := y.Read(context.Background())
		_ = k.Close()
		t.Fatalf("LoadKernel accepted the module; launch: %v, read: %v", lerr, rerr)
	}
	require.ErrorIs(t, err, vkc.ErrBadSPIRV)
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
	code := affineSPIRV(t)
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
