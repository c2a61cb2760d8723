// C = A B for row-major f32 matrices, A M x K, B K x N: each workgroup
// computes a TILE x TILE block of C, staging TILE x TILE tiles of A and B
// through workgroup memory. The kernels suite times its compilation.

const TILE: u32 = 16u;

struct Dims {
  m: u32,
  n: u32,
  k: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read> dims: Dims;

var<workgroup> tileA: array<f32, 256>;
var<workgroup> tileB: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn matmul(@builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(workgroup_id) wid: vec3<u32>) {
  let row = wid.y * TILE + lid.y;
  let col = wid.x * TILE + lid.x;
  var acc = 0.0;
  let tiles = (dims.k + TILE - 1u) / TILE;
  for (var t = 0u; t < tiles; t++) {
    let ka = t * TILE + lid.x;
    let kb = t * TILE + lid.y;
    var va = 0.0;
    if (row < dims.m && ka < dims.k) {
      va = a[row * dims.k + ka];
    }
    var vb = 0.0;
    if (kb < dims.k && col < dims.n) {
      vb = b[kb * dims.n + col];
    }
    tileA[lid.y * TILE + lid.x] = va;
    tileB[lid.y * TILE + lid.x] = vb;
    workgroupBarrier();
    for (var i = 0u; i < TILE; i++) {
      acc += tileA[lid.y * TILE + i] * tileB[i * TILE + lid.x];
    }
    workgroupBarrier();
  }
  if (row < dims.m && col < dims.n) {
    c[row * dims.n + col] = acc;
  }
}
