package hostdev

import (
	"encoding/binary"
	"math"
)

// Builtins returns Go references of the built-in kernel catalogue, keyed
// by catalogue name, with the same push-constant layouts, group geometry
// and workgroup sizes as the GLSL modules, so the recorder can be driven
// exactly as the public package drives it.
//
// Every kernel with scalars but transpose also has its dynamic variant
// "<name>_dyn", which reads each scalar at index 0 of a buffer bound after
// the kernel's own, in push-constant order, when the dispatch executes
// (so a replay sees the value current then). Both forms call one function
// with the scalars as arguments, so they cannot drift apart.
func Builtins() map[string]Kernel {
	// The element-wise kernels take four elements per invocation, 64
	// invocations per group (forEach covers four per invocation).
	local1D, localQuad, local2D := [3]uint32{256, 1, 1}, [3]uint32{64, 1, 1}, [3]uint32{8, 8, 1}
	localSubgroup, localWide := [3]uint32{64, 1, 1}, [3]uint32{8, 1, 1}
	m := map[string]Kernel{}
	withVariant(m, "fill", localQuad, 2, func(in *Invocation, s scalars) { fill(in, s[0], s[1]) })
	withVariant(m, "copy", localQuad, 1, func(in *Invocation, s scalars) { copyWords(in, s[0]) })
	withVariant(m, "axpy", localQuad, 2, func(in *Invocation, s scalars) { axpy(in, s.float(0), s[1]) })
	withVariant(m, "scale", localQuad, 2, func(in *Invocation, s scalars) { scale(in, s.float(0), s[1]) })
	for name, op := range map[string]func(x, y float32) float32{
		"add": func(x, y float32) float32 { return x + y },
		"sub": func(x, y float32) float32 { return x - y },
		"mul": func(x, y float32) float32 { return x * y },
		"div": func(x, y float32) float32 { return x / y },
	} {
		withVariant(m, name, localQuad, 1, func(in *Invocation, s scalars) { elementwise(in, op, s[0]) })
	}
	for _, name := range []string{"fill", "copy", "axpy", "scale", "add", "sub", "mul", "div"} {
		withWide(m, name)
	}
	// sum and dot: one element per invocation, a group covers its
	// workgroup size; the subgroup variants: a group covers 256 elements at
	// any workgroup size (each invocation takes 256/x of them).
	sum := func(span uint32) func(*Invocation, scalars) {
		return func(in *Invocation, s scalars) {
			partials(in, s[0], span, func(i uint32) float32 { return getFloat(in.Buffers[0], i) }, in.Buffers[1])
		}
	}
	dot := func(span uint32) func(*Invocation, scalars) {
		return func(in *Invocation, s scalars) {
			x, y := in.Buffers[0], in.Buffers[1]
			partials(in, s[0], span, func(i uint32) float32 { return getFloat(x, i) * getFloat(y, i) }, in.Buffers[2])
		}
	}
	withVariant(m, "sum", local1D, 1, sum(0))
	withVariant(m, "sum_subgroup", localSubgroup, 1, sum(subgroupSpan))
	withVariant(m, "dot", local1D, 1, dot(0))
	withVariant(m, "dot_subgroup", localSubgroup, 1, dot(subgroupSpan))
	withVariant(m, "sum_wide", localWide, 1, sum(wideSpan))
	withVariant(m, "dot_wide", localWide, 1, dot(wideSpan))
	withVariant(m, "matmul", local2D, 3, func(in *Invocation, s scalars) { matmul(in, s[0], s[1], s[2]) })
	withVariant(m, "matmul_wide", local2D, 3, func(in *Invocation, s scalars) {
		matmulCovered(in, s[0], s[1], s[2], wideRows, wideCols)
	})
	// matmul_texel reads A and B as texels: the same bytes, the same block.
	withVariant(m, "matmul_texel", local2D, 3, func(in *Invocation, s scalars) {
		matmulCovered(in, s[0], s[1], s[2], wideRows, wideCols)
	})
	withVariant(m, "softmax", local1D, 2, func(in *Invocation, s scalars) { softmax(in, s[0], s[1]) })
	withVariant(m, "softmax_subgroup", localSubgroup, 2, func(in *Invocation, s scalars) { softmax(in, s[0], s[1]) })
	m["clamp_groups"] = Kernel{Local: [3]uint32{1, 1, 1}, Run: func(in *Invocation) {
		off := word(in.Push, 0)
		for i := range uint32(3) {
			putWord(in.Buffers[1], i, min(getWord(in.Buffers[0], off+i), word(in.Push, 1+int(i))))
		}
	}}
	m["transpose"] = Kernel{Local: [3]uint32{16, 16, 1}, Run: func(in *Invocation) {
		transpose(in, word(in.Push, 0), word(in.Push, 1))
	}}
	typedBuiltins(m)
	return m
}

// withWide registers the wide variants of the element-wise kernel name
// and of its dynamic variant (name_wide, name_wide_dyn): eight elements per
// invocation over 32 invocations, the 256 elements per group that 64
// invocations of four cover, so each runs the vec4 kernel's reference over
// the elements twice its invocations of four would.
func withWide(m map[string]Kernel, name string) {
	for _, suffix := range []string{"", "_dyn"} {
		quad := m[name+suffix]
		m[name+"_wide"+suffix] = Kernel{Local: [3]uint32{defaultLocal1D / perWideInvocation, 1, 1}, Run: func(in *Invocation) {
			asQuads := *in
			asQuads.Local[0] *= perWideInvocation / perQuadInvocation
			quad.Run(&asQuads)
		}}
	}
}

// scalars are a kernel's 4-byte scalar arguments in push-constant order,
// as raw words; float reads one as a float32.
type scalars []uint32

func (s scalars) float(i int) float32 { return math.Float32frombits(s[i]) }

// withVariant registers name, which takes count scalars as push-constant
// words, and its dynamic variant name_dyn, which reads them from its last
// count buffers; both run the same function.
func withVariant(m map[string]Kernel, name string, local [3]uint32, count int, run func(*Invocation, scalars)) {
	m[name] = Kernel{Local: local, Run: func(in *Invocation) {
		s := make(scalars, count)
		for i := range s {
			s[i] = word(in.Push, i)
		}
		run(in, s)
	}}
	m[name+"_dyn"] = Kernel{Local: local, Run: func(in *Invocation) {
		s := make(scalars, count)
		first := len(in.Buffers) - count
		for i := range s {
			s[i] = getWord(in.Buffers[first+i], 0)
		}
		run(in, s)
	}}
}

func word(push []byte, i int) uint32       { return binary.LittleEndian.Uint32(push[4*i:]) }
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

// perQuadInvocation is the elements one invocation of an element-wise
// kernel covers, as in the GLSL modules; perWideInvocation, one of their
// wide variants; defaultLocal1D, the elements a group of either covers.
const (
	perQuadInvocation = 4
	perWideInvocation = 8
	defaultLocal1D    = 256
)

// forEach calls f for every element index below n that the dispatch of an
// element-wise kernel covers (four per invocation).
func forEach(in *Invocation, n uint32, f func(uint32)) {
	end := min(uint64(n), perQuadInvocation*invocations(in))
	for i := uint64(0); i < end; i++ {
		f(uint32(i))
	}
}

// fill: out[i] = value (the element's bits) for i < n.
func fill(in *Invocation, value, n uint32) {
	forEach(in, n, func(i uint32) { putWord(in.Buffers[0], i, value) })
}

// copyWords: dst[i] = src[i] for i < n.
func copyWords(in *Invocation, n uint32) {
	forEach(in, n, func(i uint32) { putWord(in.Buffers[1], i, getWord(in.Buffers[0], i)) })
}

// axpy: y[i] = a*x[i] + y[i] for i < n.
func axpy(in *Invocation, a float32, n uint32) {
	x, y := in.Buffers[0], in.Buffers[1]
	forEach(in, n, func(i uint32) { putFloat(y, i, a*getFloat(x, i)+getFloat(y, i)) })
}

// scale: y[i] = a*x[i] for i < n.
func scale(in *Invocation, a float32, n uint32) {
	forEach(in, n, func(i uint32) { putFloat(in.Buffers[1], i, a*getFloat(in.Buffers[0], i)) })
}

// elementwise: z[i] = op(x[i], y[i]) for i < n.
func elementwise(in *Invocation, op func(x, y float32) float32, n uint32) {
	x, y, z := in.Buffers[0], in.Buffers[1], in.Buffers[2]
	forEach(in, n, func(i uint32) { putFloat(z, i, op(getFloat(x, i), getFloat(y, i))) })
}

// subgroupSpan is the elements a group of a subgroup reduction covers.
const subgroupSpan = 256

// wideSpan is the elements a group of a wide reduction (sum_wide,
// dot_wide) covers.
const wideSpan = 16384

// partials writes, for every workgroup that covers elements below n, the
// sum of its elements' values into out[group]. A group covers span
// elements, or its workgroup size where span is 0.
func partials(in *Invocation, n32 uint32, span uint32, value func(uint32) float32, out []byte) {
	n := uint64(n32)
	w := uint64(in.Local[0])
	if span != 0 {
		w = uint64(span)
	}
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
func matmul(in *Invocation, m32, n32, k32 uint32) {
	// Each invocation covers a block of 8x8 elements, or 16x16 where the
	// BLOCK constant (3) is 1, as the catalogue's module does.
	block := uint64(8)
	if v, ok := in.specValue(3); ok && v == 1 {
		block = 16
	}
	matmulCovered(in, m32, n32, k32, block, block)
}

// The block of C one invocation of matmul_wide covers (16 rows by 32
// columns, as the catalogue's module does).
const (
	wideRows = 16
	wideCols = 32
)

// matmulCovered is matmul over the rows and columns its groups cover, each
// invocation covering rowsPer x colsPer elements of C.
func matmulCovered(in *Invocation, m32, n32, k32 uint32, rowsPer, colsPer uint64) {
	m, n, k := uint64(m32), uint64(n32), uint64(k32)
	a, b, c := in.Buffers[0], in.Buffers[1], in.Buffers[2]
	rows := min(m, uint64(in.Groups[1])*uint64(in.Local[1])*rowsPer)
	cols := min(n, uint64(in.Groups[0])*uint64(in.Local[0])*colsPer)
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
func transpose(in *Invocation, rows32, cols32 uint32) {
	rows, cols := uint64(rows32), uint64(cols32)
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
func softmax(in *Invocation, rows32, cols32 uint32) {
	rows, cols := uint64(rows32), uint64(cols32)
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

// specValue is in.Spec(id), or not set when the invocation carries no
// pipeline (a kernel run directly, as the tests do).
func (in *Invocation) specValue(id uint32) (uint32, bool) {
	if in.Spec == nil {
		return 0, false
	}
	return in.Spec(id)
}
