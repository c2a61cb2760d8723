package hostdev

import (
	"encoding/binary"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/shaders"
)

func TestBuiltinsCoverTheCatalogue(t *testing.T) {
	builtins := Builtins()
	var want, have []string
	for _, k := range shaders.All() {
		want = append(want, k.Name)
		if ref, ok := builtins[k.Name]; ok {
			assert.Equal(t, k.LocalSize, ref.Local, "%s: workgroup size", k.Name)
		}
	}
	for name := range builtins {
		have = append(have, name)
	}
	sort.Strings(want)
	sort.Strings(have)
	assert.Equal(t, want, have, "one Go reference per catalogue kernel")
}

func words(ws ...uint32) []byte {
	b := make([]byte, 4*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

func floats(fs ...float32) []byte {
	b := make([]byte, 4*len(fs))
	for i, f := range fs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// ramp is 1, 2, ..., n as float32 (exact sums up to 2^24).
func ramp(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i + 1)
	}
	return out
}

func constant(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// sentinel marks output words a dispatch must leave alone.
const sentinel = 0xdeadbeef

// A dispatch of a kernel and of its dynamic variant on the same buffers,
// scalars and group counts: both must give exactly want. The scalars bound
// the work below what the buffers hold and the groups cover, so a kernel
// that ignored them would overwrite the sentinels.
func TestDynamicVariantsComputeAsTheStaticKernels(t *testing.T) {
	cases := []struct {
		name    string
		scalars []uint32
		groups  [3]uint32
		buffers [][]byte
		want    [][]byte // buffer contents after the dispatch
	}{
		{"fill", []uint32{7, 3}, [3]uint32{2, 1, 1},
			[][]byte{words(0, 0, 0, sentinel)},
			[][]byte{words(7, 7, 7, sentinel)}},
		{"copy", []uint32{3}, [3]uint32{1, 1, 1},
			[][]byte{words(1, 2, 3, 4), words(0, 0, 0, sentinel)},
			[][]byte{words(1, 2, 3, 4), words(1, 2, 3, sentinel)}},
		{"axpy", []uint32{math.Float32bits(2), 2}, [3]uint32{1, 1, 1},
			[][]byte{floats(1, 2, 3), floats(10, 20, 30)},
			[][]byte{floats(1, 2, 3), floats(12, 24, 30)}},
		{"scale", []uint32{math.Float32bits(-0.5), 3}, [3]uint32{1, 1, 1},
			[][]byte{floats(2, 4, 6, 8), words(0, 0, 0, sentinel)},
			[][]byte{floats(2, 4, 6, 8), append(floats(-1, -2, -3), words(sentinel)...)}},
		{"add", []uint32{2}, [3]uint32{1, 1, 1},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), words(0, 0, sentinel)},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), append(floats(8, 12), words(sentinel)...)}},
		{"sub", []uint32{2}, [3]uint32{1, 1, 1},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), words(0, 0, sentinel)},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), append(floats(4, 4), words(sentinel)...)}},
		{"mul", []uint32{2}, [3]uint32{1, 1, 1},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), words(0, 0, sentinel)},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), append(floats(12, 32), words(sentinel)...)}},
		{"div", []uint32{2}, [3]uint32{1, 1, 1},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), words(0, 0, sentinel)},
			[][]byte{floats(6, 8, 9), floats(2, 4, 3), append(floats(3, 2), words(sentinel)...)}},
		// 300 elements in groups of 256: sums 1..256 and 257..300; the
		// third group lies past n and writes nothing.
		{"sum", []uint32{300}, [3]uint32{3, 1, 1},
			[][]byte{floats(ramp(400)...), words(0, 0, sentinel)},
			[][]byte{floats(ramp(400)...), append(floats(32896, 12254), words(sentinel)...)}},
		{"sum_subgroup", []uint32{300}, [3]uint32{3, 1, 1},
			[][]byte{floats(ramp(400)...), words(0, 0, sentinel)},
			[][]byte{floats(ramp(400)...), append(floats(32896, 12254), words(sentinel)...)}},
		{"dot", []uint32{300}, [3]uint32{3, 1, 1},
			[][]byte{floats(constant(400, 1)...), floats(constant(400, 2)...), words(0, 0, sentinel)},
			[][]byte{floats(constant(400, 1)...), floats(constant(400, 2)...), append(floats(512, 88), words(sentinel)...)}},
		// [[1 2] [3 4]] · [[1 0 2] [0 1 3]]; C has room for a third row.
		{"matmul", []uint32{2, 3, 2}, [3]uint32{1, 1, 1},
			[][]byte{floats(1, 2, 3, 4), floats(1, 0, 2, 0, 1, 3), words(0, 0, 0, 0, 0, 0, sentinel, sentinel, sentinel)},
			[][]byte{floats(1, 2, 3, 4), floats(1, 0, 2, 0, 1, 3), append(floats(1, 2, 8, 3, 4, 18), words(sentinel, sentinel, sentinel)...)}},
		// One row of two: the second group is past rows.
		{"softmax", []uint32{1, 2}, [3]uint32{2, 1, 1},
			[][]byte{floats(0, 0, 5, 5), words(0, 0, sentinel, sentinel)},
			[][]byte{floats(0, 0, 5, 5), append(floats(0.5, 0.5), words(sentinel, sentinel)...)}},
	}
	builtins := Builtins()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			static, ok := builtins[c.name]
			require.True(t, ok)
			dynamic, ok := builtins[c.name+"_dyn"]
			require.True(t, ok)

			staticIn := &Invocation{Groups: c.groups, Local: static.Local, Push: words(c.scalars...), Buffers: clones(c.buffers)}
			static.Run(staticIn)
			assert.Equal(t, c.want, staticIn.Buffers, "static kernel")

			dynIn := &Invocation{Groups: c.groups, Local: dynamic.Local, Buffers: clones(c.buffers)}
			for _, s := range c.scalars {
				dynIn.Buffers = append(dynIn.Buffers, words(s))
			}
			dynamic.Run(dynIn)
			for i, w := range c.scalars {
				assert.Equal(t, words(w), dynIn.Buffers[len(c.buffers)+i], "scalar buffer %d is only read", i)
			}
			assert.Equal(t, c.want, dynIn.Buffers[:len(c.buffers)], "dynamic variant")
		})
	}
}

func clones(bufs [][]byte) [][]byte {
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

// The variant reads its scalars when it runs, from whatever the buffers
// hold then: the same kernel run again after the scalar buffers change
// does the new work.
func TestDynamicVariantReadsItsScalarsWhenItRuns(t *testing.T) {
	axpy := Builtins()["axpy_dyn"]
	a, n := words(math.Float32bits(2)), words(1)
	x, y := floats(1, 1, 1), floats(0, 0, 0)
	in := &Invocation{Groups: [3]uint32{1, 1, 1}, Local: axpy.Local, Buffers: [][]byte{x, y, a, n}}
	axpy.Run(in)
	assert.Equal(t, floats(2, 0, 0), y)
	copy(a, words(math.Float32bits(3)))
	copy(n, words(3))
	axpy.Run(in)
	assert.Equal(t, floats(5, 3, 3), y)
}
