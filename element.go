package vkc

import (
	"math"
	"unsafe"

	"github.com/x448/float16"
)

// Element is what a Buffer holds. Every device stores and computes with
// the 32-bit types; the others need optional device features, which Open
// enables where the device has them (DeviceInfo.Features says which):
// 8-bit integers need FeatureStorage8 and FeatureInt8, 16-bit integers
// FeatureStorage16 and FeatureInt16, Float16 FeatureStorage16 and
// FeatureFloat16, BFloat16 FeatureStorage16 and FeatureInt16 (kernels
// handle it as 16-bit words), 64-bit integers FeatureInt64 and float64
// FeatureFloat64. A buffer of a type the device lacks is refused with
// ErrUnsupported. A buffer of n elements takes n times the element's size
// in bytes (rounded up to whole 32-bit words, padding no call exposes).
type Element interface {
	float32 | int32 | uint32 | float64 | int8 | uint8 | int16 | uint16 | int64 | uint64 | Float16 | BFloat16
}

// Float16 is an IEEE 754 binary16 number, held as its bits: 1 sign bit, 5
// exponent bits, 10 fraction bits, about 3 decimal digits up to ±65504.
// It is the half-precision weight format of inference libraries. Go has
// no such type, so values go in and out through float32.
type Float16 uint16

// Float16From rounds f to the nearest Float16, ties to even (IEEE's
// default rounding): values beyond ±65504 by half a unit or more become
// ±Inf, NaN stays NaN (quiet, sign kept).
func Float16From(f float32) Float16 { return Float16(float16.Fromfloat32(f).Bits()) }

// Float32 is h's exact value as a float32 (every binary16 value is one).
func (h Float16) Float32() float32 { return float16.Frombits(uint16(h)).Float32() }

// BFloat16 is the "brain" float: the top 16 bits of a float32 (1 sign, 8
// exponent, 7 fraction bits), float32's range at about 2 decimal digits.
type BFloat16 uint16

// BFloat16From rounds f to the nearest BFloat16, ties to even: values
// past the largest BFloat16 by half a unit or more become ±Inf, NaN stays
// NaN (quiet, sign kept).
func BFloat16From(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign and the top fraction bits, quieted
		return BFloat16(b>>16 | 0x0040)
	}
	// Add half a unit of the kept part, minus one unless the kept part is
	// odd, then truncate: ties go to the even neighbour. A carry out of the
	// fraction steps the exponent, up to Inf, as rounding should.
	b += 0x7fff + (b>>16)&1
	return BFloat16(b >> 16)
}

// Float32 is b's exact value as a float32.
func (b BFloat16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// elemKind is what a buffer's elements are, so a launch can refuse a
// buffer a kernel's module declares as holding another kind, and an op
// can pick the kernel for its type.
type elemKind uint8

const (
	elemFloat elemKind = iota + 1 // float32
	elemInt                       // int32
	elemUint                      // uint32
	elemFloat64
	elemInt8
	elemUint8
	elemInt16
	elemUint16
	elemInt64
	elemUint64
	elemFloat16
	elemBFloat16
)

func kindOf[T Element]() elemKind {
	var z T
	switch any(z).(type) {
	case float32:
		return elemFloat
	case int32:
		return elemInt
	case uint32:
		return elemUint
	case float64:
		return elemFloat64
	case int8:
		return elemInt8
	case uint8:
		return elemUint8
	case int16:
		return elemInt16
	case uint16:
		return elemUint16
	case int64:
		return elemInt64
	case uint64:
		return elemUint64
	case Float16:
		return elemFloat16
	}
	return elemBFloat16
}

// kindNames are the Go names of the element types, by kind.
var kindNames = [...]string{elemFloat: "float32", elemInt: "int32", elemUint: "uint32", elemFloat64: "float64",
	elemInt8: "int8", elemUint8: "uint8", elemInt16: "int16", elemUint16: "uint16", elemInt64: "int64",
	elemUint64: "uint64", elemFloat16: "Float16", elemBFloat16: "BFloat16"}

func (k elemKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// size is the bytes of one element.
func (k elemKind) size() uint64 {
	switch k {
	case elemInt8, elemUint8:
		return 1
	case elemInt16, elemUint16, elemFloat16, elemBFloat16:
		return 2
	case elemFloat64, elemInt64, elemUint64:
		return 8
	}
	return 4
}

// needs is the set of device features a buffer of the kind needs: the
// storage access for its width and the arithmetic kernels use on it.
func (k elemKind) needs() Features {
	switch k {
	case elemInt8, elemUint8:
		return FeatureStorage8 | FeatureInt8
	case elemInt16, elemUint16, elemBFloat16:
		return FeatureStorage16 | FeatureInt16
	case elemFloat16:
		return FeatureStorage16 | FeatureFloat16
	case elemFloat64:
		return FeatureFloat64
	case elemInt64, elemUint64:
		return FeatureInt64
	}
	return 0
}

// bytesFor is the claim of n elements of kind k: n*size rounded up to a
// whole 32-bit word, because the kernels that fill, copy and convert
// address memory in words. The padding belongs to the buffer and is never
// read back or exposed.
func bytesFor(k elemKind, n int) uint64 { return (uint64(n)*k.size() + 3) &^ 3 }

// bits64Of is v's bits, zero-extended to 64.
func bits64Of[T Element](v T) uint64 {
	switch unsafe.Sizeof(v) {
	case 1:
		return uint64(*(*uint8)(unsafe.Pointer(&v)))
	case 2:
		return uint64(*(*uint16)(unsafe.Pointer(&v)))
	case 4:
		return uint64(*(*uint32)(unsafe.Pointer(&v)))
	}
	return *(*uint64)(unsafe.Pointer(&v))
}

// valueOf64 is the element whose bits are the low bits of bits.
func valueOf64[T Element](bits uint64) T {
	var v T
	switch unsafe.Sizeof(v) {
	case 1:
		*(*uint8)(unsafe.Pointer(&v)) = uint8(bits)
	case 2:
		*(*uint16)(unsafe.Pointer(&v)) = uint16(bits)
	case 4:
		*(*uint32)(unsafe.Pointer(&v)) = uint32(bits)
	default:
		*(*uint64)(unsafe.Pointer(&v)) = bits
	}
	return v
}

// wordPattern is the 32-bit word a buffer of elements no wider than 4
// bytes holds when every element is v: v repeated across the word.
func wordPattern[T Element](v T) uint32 {
	b := bits64Of(v)
	switch unsafe.Sizeof(v) {
	case 1:
		return uint32(b) * 0x01010101
	case 2:
		return uint32(b) * 0x00010001
	}
	return uint32(b)
}

// Float is the element types that floating-point kernels compute with:
// float32, Float16 (loaded and stored in 16 bits, computed and
// accumulated in float32) and float64 (all in float64, where the device
// has FeatureFloat64). Package ops constrains its matrix products to it
// (ops.Matmul).
type Float interface{ float32 | float64 | Float16 }
