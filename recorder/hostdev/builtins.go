package hostdev

import (
	"encoding/binary"
	"math"
)

// Builtins returns Go references of the built-in kernel catalogue, keyed
// by catalogue name, with the same push-constant layouts, group geometry
// and workgroup sizes as the GLSL modules, so the recorder can be driven
// exactly as the public package drives it.
func Builtins() map[string]Kernel {
	k1 := func(run func(*Invocation)) Kernel { return Kernel{Local: [3]uint32{256, 1, 1}, Run: run} }
	return map[string]Kernel{
		"fill": k1(func(in *Invocation) {
			v, n := word(in.Push, 0), word(in.Push, 1)
			forEach(in, n, func(i uint32) { putWord(in.Buffers[0], i, v) })
		}),
		"copy": k1(func(in *Invocation) {
			n := word(in.Push, 0)
			forEach(in, n, func(i uint32) { putWord(in.Buffers[1], i, getWord(in.Buffers[0], i)) })
		}),
		"axpy": k1(func(in *Invocation) {
			a, n := float(in.Push, 0), word(in.Push, 1)
			x, y := in.Buffers[0], in.Buffers[1]
			forEach(in, n, func(i uint32) { putFloat(y, i, a*getFloat(x, i)+getFloat(y, i)) })
		}),
		"scale": k1(func(in *Invocation) {
			a, n := float(in.Push, 0), word(in.Push, 1)
			forEach(in, n, func(i uint32) { putFloat(in.Buffers[1], i, a*getFloat(in.Buffers[0], i)) })
		}),
		"add": k1(elementwise(func(x, y float32) float32 { return x + y })),
		"sub": k1(elementwise(func(x, y float32) float32 { return x - y })),
		"mul": k1(elementwise(func(x, y float32) float32 { return x * y })),
		"div": k1(elementwise(func(x, y float32) float32 { return x / y })),
		"sum": k1(func(in *Invocation) {
			partials(in, func(i uint32) float32 { return getFloat(in.Buffers[0], i) }, in.Buffers[1])
		}),
		"sum_subgroup": k1(func(in *Invocation) {
			partials(in, func(i uint32) float32 { return getFloat(in.Buffers[0], i) }, in.Buffers[1])
		}),
		"dot": k1(func(in *Invocation) {
			x, y := in.Buffers[0], in.Buffers[1]
			partials(in, func(i uint32) float32 { return getFloat(x, i) * getFloat(y, i) }, in.Buffers[2])
		}),
		"matmul":    {Local: [3]uint32{8, 8, 1}, Run: matmul},
		"transpose": {Local: [3]uint32{16, 16, 1}, Run: transpose},
		"softmax":   k1(softmax),
	}
}

func word(push []byte, i int) uint32       { return binary.LittleEndian.Uint32(push[4*i:]) }
func float(push []byte, i int) float32     { return math.Float32frombits(word(push, i)) }
func getWord(b []byte, i uint32) uint32    { return binary.LittleEndian.Uint32(b[4*i:]) }
func putWord(b []byte, i uint32, v uint32) { binary.LittleEndian.PutUint32(b[4*i:], v) }
func getFloat(b []byte, i uint32) float32  { return math.Float32frombits(getWord(b, i)) }
func putFloat(b []byte, i uint32, v float32) {
	putWord(b, i, math.Float32bits(v))
}

// invocations is how many invocations a 1-D dispatch runs: groups over x
// and y (the kernels fold y into the element index) times the workgroup.
func invocations(in *Invocation) uint64 {
	return uint64(in.Groups[0]) * uint64(in.Groups[1]) * uint64(in.Local[0])
}

// forEach calls f for every element index below n that the dispatch covers.
func forEach(in *Invocation, n uint32, f func(uint32)) {
	end := min(uint64(n), invocations(in))
	for i := uint64(0); i < end; i++ {
		f(uint32(i))
	}
}

func elementwise(op func(x, y float32) float32) func(*Invocation) {
	return func(in *Invocation) {
		n := word(in.Push, 0)
		x, y, z := in.Buffers[0], in.Buffers[1], in.Buffers[2]
		forEach(in, n, func(i uint32) { putFloat(z, i, op(getFloat(x, i), getFloat(y, i))) })
	}
}

// partials writes, for every workgroup that covers elements below n, the
// sum of its elements' values into out[group].
func partials(in *Invocation, value func(uint32) float32, out []byte) {
	n := uint64(word(in.Push, 0))
	w := uint64(in.Local[0])
	groups := uint64(in.Groups[0]) * uint64(in.Groups[1])
	for g := uint64(0); g < groups && g*w < n; g++ {
		var s float32
		for i := g * w; i < min((g+1)*w, n); i++ {
			s += value(uint32(i))
		}
		putFloat(out, uint32(g), s)
	}
}

// matmul: C[M x N] = A[M x K] B[K x N]; each invocation covers 8 x 8
// outputs, so the dispatch covers 8*Local rows and columns per group.
func matmul(in *Invocation) {
	m, n, k := uint64(word(in.Push, 0)), uint64(word(in.Push, 1)), uint64(word(in.Push, 2))
	a, b, c := in.Buffers[0], in.Buffers[1], in.Buffers[2]
	rows := min(m, uint64(in.Groups[1])*uint64(in.Local[1])*8)
	cols := min(n, uint64(in.Groups[0])*uint64(in.Local[0])*8)
	for r := uint64(0); r < rows; r++ {
		for col := uint64(0); col < cols; col++ {
			var s float32
			for x := uint64(0); x < k; x++ {
				s += getFloat(a, uint32(r*k+x)) * getFloat(b, uint32(x*n+col))
			}
			putFloat(c, uint32(r*n+col), s)
		}
	}
}

// transpose: dst[cols x rows] = src[rows x cols]ᵀ over the covered tiles.
func transpose(in *Invocation) {
	rows, cols := uint64(word(in.Push, 0)), uint64(word(in.Push, 1))
	src, dst := in.Buffers[0], in.Buffers[1]
	rEnd := min(rows, uint64(in.Groups[1])*uint64(in.Local[1]))
	cEnd := min(cols, uint64(in.Groups[0])*uint64(in.Local[0]))
	for r := uint64(0); r < rEnd; r++ {
		for c := uint64(0); c < cEnd; c++ {
			putFloat(dst, uint32(c*rows+r), getFloat(src, uint32(r*cols+c)))
		}
	}
}

// softmax: one workgroup per row.
func softmax(in *Invocation) {
	rows, cols := uint64(word(in.Push, 0)), uint64(word(in.Push, 1))
	src, dst := in.Buffers[0], in.Buffers[1]
	end := min(rows, uint64(in.Groups[0])*uint64(in.Groups[1]))
	for r := uint64(0); r < end; r++ {
		base := r * cols
		m := float32(math.Inf(-1))
		for c := uint64(0); c < cols; c++ {
			m = max(m, getFloat(src, uint32(base+c)))
		}
		var s float32
		for c := uint64(0); c < cols; c++ {
			s += float32(math.Exp(float64(getFloat(src, uint32(base+c)) - m)))
		}
		inv := 1 / s
		for c := uint64(0); c < cols; c++ {
			putFloat(dst, uint32(base+c), float32(math.Exp(float64(getFloat(src, uint32(base+c))-m)))*inv)
		}
	}
}
