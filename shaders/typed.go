package shaders

// typedCatalogue is the kernels for element types other than 32 bits,
// appended to the catalogue at init. They keep to the catalogue's
// conventions (storage buffers at set 0, workgroup size from
// specialization constants 0..2, groups spread over y past the x limit).
var typedCatalogue = []Kernel{
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
}
