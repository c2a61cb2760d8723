// One pass of a sum: each workgroup adds a grid-strided share of x in
// registers, then in a tree through workgroup memory, and writes its total
// to partial[workgroup]. Run once over the input with many workgroups,
// then once over the partials with one, to sum the whole input.

const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> partial: array<f32>;

var<workgroup> sums: array<f32, WG>;

@compute @workgroup_size(WG)
fn reduce(@builtin(local_invocation_index) li: u32,
          @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
  let n = arrayLength(&x);
  var acc = 0.0;
  for (var i = wid.x * WG + li; i < n; i += groups.x * WG) {
    acc += x[i];
  }
  sums[li] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      sums[li] += sums[li + s];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
    partial[wid.x] = sums[0];
  }
}
