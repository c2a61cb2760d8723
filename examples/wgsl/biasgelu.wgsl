// y = gelu(x + bias), with bias broadcast along rows of COLS columns: the
// kind of element-wise tail a matrix multiply leaves, fused into one pass.
// GELU in its tanh form: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).

override COLS: u32 = 64;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn bias_gelu(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= arrayLength(&y)) {
    return;
  }
  let v = x[i] + bias[i % COLS];
  let k = 0.7978845608028654; // sqrt(2/pi)
  y[i] = 0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v)));
}
