// types.glsl: the element type a kernel variant is built for, chosen by one
// define: T_F32 (the default), T_F16, T_F64, T_I32 or T_U32.
//   ST  the type stored in buffers;
//   CT  the type computed in: float for Float16 (16-bit loads and stores,
//       float32 arithmetic), the stored type otherwise;
//   PT  the type of a scalar param (float, or double for float64);
//   IS_FLOAT set for the floating-point types.
// WIDE (float32 only) enables 64-bit integers for linear.glsl's words.
// Include it first: it may enable extensions.
#if defined(WIDE)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if defined(T_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ST float16_t
#define CT float
#define IS_FLOAT 1
#elif defined(T_F64)
#define ST double
#define CT double
#define IS_FLOAT 1
#elif defined(T_I32)
#define ST int
#define CT int
#elif defined(T_U32)
#define ST uint
#define CT uint
#else
#define ST float
#define CT float
#define IS_FLOAT 1
#endif
#if defined(T_F64)
#define PT double
#else
#define PT float
#endif

// MAXR is the most axes an operand's layout has once the host has merged
// the axes that it can.
#define MAXR 6
// WG is the workgroup size of every kernel here.
#define WG 64u

// scalarOf is a scalar known at launch (push words lo, hi) in PT.
PT scalarOf(uint lo, uint hi) {
#if defined(T_F64)
    return packDouble2x32(uvec2(lo, hi));
#else
    return uintBitsToFloat(lo);
#endif
}
