package vkc

import "fmt"

// Convert writes src's elements, converted to dst's element type, into
// dst (of the same length), on the device. It converts between any two
// element types, exactly as documented here on every device (the kernel
// works on the bit patterns in integer arithmetic, so no device rounding
// mode or denormal flushing enters, and it needs no optional feature
// beyond what the two buffers already needed):
//
//   - into float32, float64, Float16 and BFloat16: the nearest value, ties
//     to even, from the exact source value (one rounding, also from int64
//     and uint64); a value beyond the largest finite one by half a unit or
//     more becomes ±Inf; subnormals are kept, not flushed; -0 stays -0;
//     NaN becomes the destination's quiet NaN with the same sign (payload
//     bits are not kept);
//   - into an integer type: the value truncated toward zero, then
//     saturated to the type's range: out-of-range values and ±Inf become
//     the type's minimum or maximum, NaN becomes 0 (as Go's conversions
//     do not promise, and CUDA's saturating conversions do).
//
// Between buffers of the same type it is a Copy, bit for bit (NaN
// payloads included). Buffers of different lengths are refused, and so is
// a buffer converted into itself. The ordering and unwritten rules are
// those of any launch: dst reads as ErrUnwritten when src held unwritten
// bytes.
func Convert[S, D Element](s *Stream, src *Buffer[S], dst *Buffer[D]) error {
	if err := present("Convert", src, dst); err != nil {
		return err
	}
	if src.core.n != dst.core.n {
		return fmt.Errorf("vkc: Convert: source of %d elements, destination of %d (the lengths must match)", src.core.n, dst.core.n)
	}
	if err := distinct("Convert", dst.core, "the source", src.core); err != nil {
		return err
	}
	return convertCores(s, src.core, dst.core)
}

// convertCores is Convert past its checks.
func convertCores(s *Stream, src, dst *bufferCore) error {
	from, to := src.elem, dst.elem
	if from == to {
		return copyCores(s, "Convert", src, dst)
	}
	n := src.n
	units := dst.words() // one invocation per 32-bit word of dst
	if to.size() == 8 {
		units = n // or per 64-bit element
	}
	var p [16]byte
	return run1D(s, "convert", units, pushWords(&p, uint32(n), uint32(from), uint32(to)), src, dst)
}
