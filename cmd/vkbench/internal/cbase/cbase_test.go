package cbase

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openTest opens device 0 with the validation layer on when VKC_VALIDATION=1,
// and checks at the end that nothing is left alive and the layer was quiet.
func openTest(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0, "", os.Getenv("VKC_VALIDATION") == "1")
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.Zero(t, d.Live(), "objects left alive")
		assert.NoError(t, d.Close())
	})
	return d
}

// Both chains, the scalar axpy and vkc's vec4 one, at a length with a
// partial quad and a partial group (301: the vec4 kernel's tail runs).
func TestChainRunsEveryWay(t *testing.T) {
	d := openTest(t)
	assert.NotEmpty(t, d.Name())
	x := make([]float32, 301)
	for i := range x {
		x[i] = float32(i % 3)
	}
	const k = 4
	for name, build := range map[string]func([]float32, int) (*Chain, error){"scalar": d.NewChain, "vec4": d.NewVec4Chain, "wide": d.NewWideChain} {
		t.Run(name, func(t *testing.T) {
			ch, err := build(x, k)
			if errors.Is(err, ErrNoInt64) {
				t.Skip("the device has no shaderInt64")
			}
			require.NoError(t, err)
			defer ch.Close()
			assert.Positive(t, d.Live())

			// y grows by k*x per chain run; Record runs nothing.
			launches := 0
			for _, step := range []struct {
				name string
				run  func() error
				adds int
			}{
				{"eager", ch.Eager, k}, {"batched", ch.Batched, k}, {"replay", ch.Replay, k}, {"record", ch.Record, 0}, {"replay again", ch.Replay, k},
				{"batched bound", ch.BatchedBound, k}, {"replay bound", ch.ReplayBound, k}, {"record bound", ch.RecordBound, 0},
				{"replay bound again", ch.ReplayBound, k}, {"batched after bound", ch.Batched, k},
			} {
				require.NoError(t, step.run(), step.name)
				launches += step.adds
				y, err := ch.Y()
				require.NoError(t, err)
				for i := range x {
					require.Equal(t, float32(launches)*x[i], y[i], "%s: y[%d]", step.name, i)
				}
			}
			require.NoError(t, ch.ResetY())
			y, err := ch.Y()
			require.NoError(t, err)
			assert.Equal(t, make([]float32, len(x)), y)
		})
	}
}

// A chain longer than one workgroup still covers every element.
func TestChainSpansGroups(t *testing.T) {
	d := openTest(t)
	x := make([]float32, 300)
	for i := range x {
		x[i] = 1
	}
	ch, err := d.NewChain(x, 2)
	require.NoError(t, err)
	defer ch.Close()
	require.NoError(t, ch.Replay())
	require.NoError(t, ch.ReplayBound())
	y, err := ch.Y()
	require.NoError(t, err)
	for i := range y {
		require.Equal(t, float32(4), y[i], "y[%d]", i)
	}
}

func TestCopyAndMemcpy(t *testing.T) {
	d := openTest(t)
	src := make([]uint32, 1<<14)
	for i := range src {
		src[i] = uint32(i)*2654435761 ^ 0x5eed
	}
	cp, err := d.NewCopy(src)
	require.NoError(t, err)
	defer cp.Close()
	out := make([]uint32, len(src))
	require.NoError(t, cp.Dst(out))
	assert.Equal(t, make([]uint32, len(src)), out, "the destination starts zeroed")
	require.NoError(t, cp.Run())
	require.NoError(t, cp.Dst(out))
	assert.Equal(t, src, out)
	require.NoError(t, cp.ClearDst())
	require.NoError(t, cp.Dst(out))
	assert.Equal(t, make([]uint32, len(src)), out)
	assert.Error(t, cp.Dst(out[:1]))

	bytesIn := make([]byte, 1<<16)
	for i := range bytesIn {
		bytesIn[i] = byte(i * 7)
	}
	m, err := NewMemcpy(bytesIn)
	require.NoError(t, err)
	defer m.Close()
	got := make([]byte, len(bytesIn))
	require.NoError(t, m.Dst(got))
	assert.Equal(t, make([]byte, len(bytesIn)), got)
	require.NoError(t, m.Run())
	require.NoError(t, m.Dst(got))
	assert.Equal(t, bytesIn, got)
	require.NoError(t, m.ClearDst())
	require.NoError(t, m.Dst(got))
	assert.Equal(t, make([]byte, len(bytesIn)), got)
	m.Close()
	assert.ErrorIs(t, m.Run(), ErrClosed)
}

// Every kernel against a reference, at sizes off their workgroup and
// tile: the naive one at 37 (not a multiple of 16), the blocked one at 132
// (past one 128 x 128 tile, a multiple of 4 as it requires), the texel one
// at 136 (past one 128-row tile, short of a 256-column one, a multiple of
// 8 as it requires).
func TestSgemmMatchesReference(t *testing.T) {
	d := openTest(t)
	for _, c := range []struct {
		name string
		n    int
		make func(n int, a, b []float32) (*Sgemm, error)
	}{{"naive", 37, d.NewSgemm}, {"blocked", 132, d.NewSgemmBlocked}, {"texel", 136, d.NewSgemmTexel}} {
		t.Run(c.name, func(t *testing.T) {
			n := c.n
			a, b := make([]float32, n*n), make([]float32, n*n)
			for i := range a {
				a[i] = float32((i*7)%13) - 6
				b[i] = float32((i*5)%11) - 5
			}
			sg, err := c.make(n, a, b)
			require.NoError(t, err)
			defer sg.Close()
			require.NoError(t, sg.Run())
			got, err := sg.C()
			require.NoError(t, err)
			for r := range n {
				for col := range n {
					var want float32
					for q := range n {
						want += a[r*n+q] * b[q*n+col]
					}
					require.Equal(t, want, got[r*n+col], "C[%d,%d]", r, col) // small integers: exact
				}
			}
			_, err = c.make(n, a[:1], b)
			assert.Error(t, err)
		})
	}
	_, err := d.NewSgemmBlocked(6, make([]float32, 36), make([]float32, 36))
	assert.Error(t, err, "the blocked kernel needs n a multiple of 4")
	_, err = d.NewSgemmTexel(12, make([]float32, 144), make([]float32, 144))
	assert.Error(t, err, "the texel kernel needs n a multiple of 8")
}

func TestCloseRefusesLiveObjectsAndIsIdempotent(t *testing.T) {
	d, err := Open(0, "", false)
	require.NoError(t, err)
	ch, err := d.NewChain([]float32{1, 2, 3}, 1)
	require.NoError(t, err)
	require.ErrorIs(t, d.Close(), ErrLive)
	ch.Close()
	ch.Close()
	assert.ErrorIs(t, ch.Replay(), ErrClosed)
	assert.ErrorIs(t, ch.ReplayBound(), ErrClosed)
	assert.ErrorIs(t, ch.BatchedBound(), ErrClosed)
	assert.ErrorIs(t, ch.RecordBound(), ErrClosed)
	assert.Zero(t, d.Live())
	require.NoError(t, d.Close())
	require.NoError(t, d.Close())
	_, err = d.NewChain([]float32{1}, 1)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = d.NewCopy([]uint32{1})
	assert.ErrorIs(t, err, ErrClosed)
}

func TestOpenChecksTheDevice(t *testing.T) {
	d, err := Open(0, "", false)
	require.NoError(t, err)
	name := d.Name()
	require.NoError(t, d.Close())

	d, err = Open(0, name, false)
	require.NoError(t, err)
	require.NoError(t, d.Close())

	_, err = Open(0, name+" but another one", false)
	assert.ErrorIs(t, err, ErrVulkan)
	assert.Contains(t, err.Error(), "not "+name+" but another one")
	_, err = Open(1<<20, "", false)
	assert.ErrorIs(t, err, ErrVulkan)
	_, err = Open(-1, "", false)
	assert.Error(t, err)
}

func TestBadArguments(t *testing.T) {
	d := openTest(t)
	_, err := d.NewChain(nil, 1)
	assert.Error(t, err)
	_, err = d.NewChain([]float32{1}, 0)
	assert.Error(t, err)
	_, err = d.NewCopy(nil)
	assert.Error(t, err)
	_, err = NewMemcpy(nil)
	assert.Error(t, err)
}

// Every operation still computes the right thing when no buffer is mapped
// and every upload and read-back goes through a staging copy, as on a
// discrete GPU.
func TestStagedBuffers(t *testing.T) {
	d := openTest(t)
	d.setStaged(true)
	x := []float32{1, 0, 2, 5}
	ch, err := d.NewChain(x, 3)
	require.NoError(t, err)
	defer ch.Close()
	for _, run := range []func() error{ch.Eager, ch.Batched, ch.Replay, ch.BatchedBound, ch.ReplayBound, ch.RecordBound} {
		require.NoError(t, run())
	}
	y, err := ch.Y()
	require.NoError(t, err)
	assert.Equal(t, []float32{15, 0, 30, 75}, y) // five runs of three launches; the recordings run nothing
	require.NoError(t, ch.ResetY())
	y, err = ch.Y()
	require.NoError(t, err)
	assert.Equal(t, make([]float32, len(x)), y)

	src := []uint32{7, 8, 9, 10, 11}
	cp, err := d.NewCopy(src)
	require.NoError(t, err)
	defer cp.Close()
	require.NoError(t, cp.Run())
	out := make([]uint32, len(src))
	require.NoError(t, cp.Dst(out))
	assert.Equal(t, src, out)
	require.NoError(t, cp.ClearDst())
	require.NoError(t, cp.Dst(out))
	assert.Equal(t, make([]uint32, len(src)), out)

	const n = 17
	a, b := make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%5), float32(i%3)
	}
	sg, err := d.NewSgemm(n, a, b)
	require.NoError(t, err)
	defer sg.Close()
	require.NoError(t, sg.Run())
	c, err := sg.C()
	require.NoError(t, err)
	var want float32
	for q := range n {
		want += a[3*n+q] * b[q*n+5]
	}
	assert.Equal(t, want, c[3*n+5])
}

// The committed modules must be what glslc builds from their sources now,
// with the flags of the go:generate lines in cbase.go.
func TestCommittedSPIRVIsFresh(t *testing.T) {
	compiler, err := exec.LookPath("glslc")
	if err != nil {
		t.Skip("glslc not on PATH; cannot check the committed modules against their sources")
	}
	for name, committed := range map[string][]byte{"sgemm_naive": sgemmNaiveSPIRV, "sgemm_blocked": sgemmBlockedSPIRV, "empty": emptySPIRV, "axpy_scalar": axpyScalarSPIRV} {
		out := filepath.Join(t.TempDir(), name+".spv")
		msg, err := exec.Command(compiler, "-O", "--target-env=vulkan1.1", name+".comp", "-o", out).CombinedOutput()
		require.NoError(t, err, "glslc: %s", msg)
		fresh, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(fresh, committed), "%s.spv is stale: run go generate ./cmd/vkbench/internal/cbase", name)
	}
}

// The empty chain records what the axpy chain records and runs every way
// without touching y, and its objects go with Close.
func TestEmptyChainRunsAndWritesNothing(t *testing.T) {
	d := openTest(t)
	before := d.Live()
	x := make([]float32, 300)
	for i := range x {
		x[i] = float32(i%5) + 1
	}
	full, err := d.NewChain(x, 3)
	require.NoError(t, err)
	defer full.Close()
	withFull := d.Live()
	empty, err := d.NewEmptyChain(x, 3)
	require.NoError(t, err)
	assert.Equal(t, withFull-before, d.Live()-withFull, "the empty chain makes as many objects as the axpy chain")
	for _, run := range []func() error{empty.Eager, empty.Batched, empty.BatchedBound, empty.Replay, empty.ReplayBound} {
		require.NoError(t, run())
	}
	y, err := empty.Y()
	require.NoError(t, err)
	assert.Equal(t, make([]float32, len(x)), y)
	require.NoError(t, full.ReplayBound()) // the same setup with axpy's body does write
	y, err = full.Y()
	require.NoError(t, err)
	assert.Equal(t, 3*x[299], y[299])
	empty.Close()
	assert.Equal(t, withFull, d.Live())
	assert.ErrorIs(t, empty.ReplayBound(), ErrClosed)
}
