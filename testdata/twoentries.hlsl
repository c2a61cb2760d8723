// Two kernels in one module (each compiled with -fentry-point, then
// linked): "twice" writes y = 2x with 64 invocations a group, "negate"
// y = -x with 32.
[[vk::binding(0, 0)]] StructuredBuffer<float> x;
[[vk::binding(1, 0)]] RWStructuredBuffer<float> y;

[numthreads(64, 1, 1)]
void twice(uint3 id : SV_DispatchThreadID) { y[id.x] = 2 * x[id.x]; }

[numthreads(32, 1, 1)]
void negate(uint3 id : SV_DispatchThreadID) { y[id.x] = -x[id.x]; }
