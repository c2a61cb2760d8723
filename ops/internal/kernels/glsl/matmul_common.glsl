// matmul_common.glsl: what every ops matmul kernel shares: the element
// type (ELEM, as stored) and the type products are summed in (ACC), chosen
// by one define (none: float32; ELEM_F16: Float16 in 16-bit storage,
// summed in float32; ELEM_F64: float64), and the epilogue's activation.
#if defined(ELEM_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define ELEM float16_t
#define ACC float
#elif defined(ELEM_F64)
#define ELEM double
#define ACC double
#else
#define ELEM float
#define ACC float
#endif

// Activation codes, as the host's Activation values: 0 none, 1 relu,
// 2 gelu (tanh approximation), 3 silu. GLSL has tanh and exp in float32
// only, so float64's gelu and silu evaluate the nonlinear factor in
// float32 (relative error about 1e-7).
ACC activate(ACC x, uint act) {
    if (act == 1u) return max(x, ACC(0));
    if (act == 2u) {
        float xf = float(x);
        float t = tanh(0.7978845608028654 * (xf + 0.044715 * xf * xf * xf));
        return ACC(0.5) * x * (ACC(1) + ACC(t));
    }
    if (act == 3u) return x * ACC(1.0 / (1.0 + exp(-float(x))));
    return x;
}
