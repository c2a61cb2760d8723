package shaders

// typedCatalogue is the kernels for element types other than 32 bits,
// appended to the catalogue at init. They keep to the catalogue's
// conventions (storage buffers at set 0, workgroup size from
// specialization constants 0..2, groups spread over y past the x limit).
var typedCatalogue = append([]Kernel{
	// fill64: out[i] = value for i < n over 64-bit elements, the value as
	// its two 32-bit words, so it fills float64, int64 and uint64 buffers
	// with no 64-bit arithmetic.
	// Bindings: 0 out (write). Push: lo, hi uint32, n uint32 (elements).
	// Groups: ceil(n/256).
	vectorKernel("fill64", []Binding{wo("out")}, 12, "lo uint32, hi uint32 (the value's words), n uint32"),
	// convert: dst[i] = src[i] converted between any two element types in
	// integer arithmetic on the bit patterns (no optional feature needed):
	// floats round to nearest even, overflow to ±Inf, NaN to the quiet
	// NaN with its sign; integers truncate toward zero and saturate, NaN
	// to 0. One invocation writes one 32-bit word of dst (or one 64-bit
	// element); bytes of the last word past n are written as zero.
	// Bindings: 0 src (read), 1 dst (write). Push: n uint32 (elements),
	// srcType uint32, dstType uint32 (the type codes of convert.comp).
	// Groups: ceil(units/256), units = n for 64-bit dst, else the words
	// dst's n elements take.
	vectorKernel("convert", []Binding{ro("src"), wo("dst")}, 12, "n uint32, srcType uint32, dstType uint32"),

	// The ops for Float16 (suffix _f16: loads and stores in 16 bits, math in
	// float32, needing storageBuffer16BitAccess) and float64 (suffix _f64:
	// all in float64, needing shaderFloat64). Each has the contract of its
	// float32 counterpart, with the differences noted.
}, typedOps()...)

// typedOps are the Float16 and float64 op kernels, for both suffixes.
func typedOps() []Kernel {
	var out []Kernel
	for _, t := range []string{"_f16", "_f64"} {
		aDoc, axpyPush := "a float32", uint32(8)
		if t == "_f64" {
			aDoc, axpyPush = "a float64 (low word), a (high word)", 12
		}
		out = append(out,
			// binary: z[i] = x[i] op y[i] for i < n; op 0 add, 1 sub, 2 mul, 3 div.
			// Bindings: 0 x, 1 y (read), 2 z (write). Push: op, n uint32. Groups: ceil(n/256).
			vectorKernel("binary"+t, []Binding{ro("x"), ro("y"), wo("z")}, 8, "op uint32 (0 add; 1 sub; 2 mul; 3 div), n uint32"),
			dynamicVector("binary"+t, []Binding{ro("x"), ro("y"), wo("z"), ro("op"), ro("n")}, u32("op"), u32("n")),
			// axpy: y[i] = a*x[i] + y[i] for i < n.
			// Bindings: 0 x (read), 1 y (read-write). Push: a, n. Groups: ceil(n/256).
			vectorKernel("axpy"+t, []Binding{ro("x"), rw("y")}, axpyPush, aDoc+", n uint32"),
			// scale: y[i] = a*x[i] for i < n, a kernel of its own so that y
			// is write-only: a launch does not read what y held before.
			// Bindings: 0 x (read), 1 y (write). Push: a, n. Groups: ceil(n/256).
			vectorKernel("scale"+t, []Binding{ro("x"), wo("y")}, axpyPush, aDoc+", n uint32"),
			// sum: sum's first pass, partials in float32 (_f16) or float64 (_f64);
			// _f16's later passes run sum on the float32 partials, _f64's run sum_f64.
			// Bindings: 0 x (read), 1 partials (write). Push: n uint32. Groups: ceil(n/W).
			vectorKernel("sum"+t, []Binding{ro("x"), wo("partials")}, 4, "n uint32"),
			dynamicVector("sum"+t, []Binding{ro("x"), wo("partials"), ro("n")}, u32("n")),
			// dot: dot's first pass, partials as sum's.
			// Bindings: 0 x, 1 y (read), 2 partials (write). Push: n uint32. Groups: ceil(n/W).
			vectorKernel("dot"+t, []Binding{ro("x"), ro("y"), wo("partials")}, 4, "n uint32"),
			dynamicVector("dot"+t, []Binding{ro("x"), ro("y"), wo("partials"), ro("n")}, u32("n")),
			// softmax: softmax's contract. Bindings: 0 src (read), 1 dst (write).
			// Push: rows, cols uint32. Groups: rows.
			Kernel{Name: "softmax" + t, Bindings: []Binding{ro("src"), wo("dst")}, PushSize: 8,
				PushDoc: "rows uint32, cols uint32", LocalSize: [3]uint32{defaultLocal1D, 1, 1}},
			Kernel{Name: "softmax" + t + dynamicSuffix, Bindings: []Binding{ro("src"), wo("dst"), ro("rows"), ro("cols")},
				LocalSize: [3]uint32{defaultLocal1D, 1, 1}, DynamicOf: "softmax" + t, Scalars: []Scalar{u32("rows"), u32("cols")}},
			// matmul: matmul's contract and tiling. Bindings: 0 A, 1 B (read),
			// 2 C (write). Push: M, N, K uint32. Groups: ceil(N/64) x ceil(M/64).
			Kernel{Name: "matmul" + t, Bindings: []Binding{ro("A"), ro("B"), wo("C")}, PushSize: 12,
				PushDoc:   "M uint32 (rows of A and C), N uint32 (columns of B and C), K uint32 (columns of A = rows of B)",
				LocalSize: [3]uint32{8, 8, 1}, Tile: [2]uint32{64, 64}},
			Kernel{Name: "matmul" + t + dynamicSuffix, Bindings: []Binding{ro("A"), ro("B"), wo("C"), ro("M"), ro("N"), ro("K")},
				LocalSize: [3]uint32{8, 8, 1}, Tile: [2]uint32{64, 64}, DynamicOf: "matmul" + t, Scalars: []Scalar{u32("M"), u32("N"), u32("K")}},
		)
	}
	// matmul_wide_f16: matmul_wide's contract, geometry and needs, plus
	// storageBuffer16BitAccess; Float16 elements widened to float32, C
	// stored in 16 bits.
	out = append(out,
		Kernel{Name: "matmul_wide_f16", Bindings: []Binding{ro("A"), ro("B"), wo("C")}, PushSize: 12,
			PushDoc:   "M uint32 (rows of A and C), N uint32 (columns of B and C; a multiple of 8), K uint32 (columns of A = rows of B; a multiple of 8)",
			LocalSize: [3]uint32{8, 8, 1}, Tile: [2]uint32{wideCols * 8, wideRows * 8}, Needs: FeatureInt64},
		Kernel{Name: "matmul_wide_f16" + dynamicSuffix, Bindings: []Binding{ro("A"), ro("B"), wo("C"), ro("M"), ro("N"), ro("K")},
			LocalSize: [3]uint32{8, 8, 1}, Tile: [2]uint32{wideCols * 8, wideRows * 8}, Needs: FeatureInt64, DynamicOf: "matmul_wide_f16",
			Scalars: []Scalar{u32("M"), u32("N"), u32("K")}},
		// matmul_texel_f16: matmul_wide_f16 reading A and B as texels
		// (see matmul_texel), one texel per octet of Float16 elements.
		Kernel{Name: "matmul_texel_f16", Bindings: []Binding{rt("A"), rt("B"), wo("C")}, PushSize: 12,
			PushDoc:   "M uint32 (rows of A and C), N uint32 (columns of B and C; a multiple of 8), K uint32 (columns of A = rows of B; a multiple of 8)",
			LocalSize: [3]uint32{8, 8, 1}, Tile: [2]uint32{wideCols * 8, wideRows * 8}},
		Kernel{Name: "matmul_texel_f16" + dynamicSuffix, Bindings: []Binding{rt("A"), rt("B"), wo("C"), ro("M"), ro("N"), ro("K")},
			LocalSize: [3]uint32{8, 8, 1}, Tile: [2]uint32{wideCols * 8, wideRows * 8}, DynamicOf: "matmul_texel_f16",
			Scalars: []Scalar{u32("M"), u32("N"), u32("K")}},
	)
	return out
}
