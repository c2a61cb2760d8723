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
}
