package wgsl

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// Kernels using more of WGSL than the repairs' tests: each compiles, passes
// spirv-val, loads with the access its code has, and computes what the
// same steps compute in Go.

const controlFlowSrc = `
@group(0) @binding(0) var<storage, read_write> y: array<i32>;
fn bump(v: ptr<function, i32>, by: i32) { *v = *v + by; }
var<private> counter: i32;
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  var v = i32(g.x) ^ (i32(g.y) << 3u);
  bump(&v, 5);
  counter = v;
  loop {
    if (counter > 100) { break; }
    counter = counter * 2 + 1;
    continuing { break if counter % 7 == 0; }
  }
  y[g.y * n.x * 8u + g.x] = select(counter, -counter, (v & 1) == 0);
}
`

// controlFlow is controlFlowSrc's invocation (x, y) in Go.
func controlFlow(x, y int32) int32 {
	v := x ^ (y << 3)
	v += 5
	c := v
	for c <= 100 {
		c = c*2 + 1
		if c%7 == 0 {
			break
		}
	}
	if v&1 == 0 {
		return -c
	}
	return c
}

func TestControlFlowAgainstGo(t *testing.T) {
	dev := openDevice(t)
	k := load(t, dev, controlFlowSrc, Options{Name: "control"})
	assert.Equal(t, []vkc.Access{vkc.WriteOnly}, k.Spec().Bindings)
	const groups = 3
	const side = groups * 8
	y := newBuffer[int32](t, dev, nil, side*side)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{groups, groups, 1}, nil, y))
	got := read(t, y)
	for gy := range side {
		for gx := range side {
			require.Equal(t, controlFlow(int32(gx), int32(gy)), got[gy*side+gx], "invocation (%d, %d)", gx, gy)
		}
	}
}

const countSrc = `
var<workgroup> hits: atomic<u32>;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> count: array<atomic<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  if (li == 0u) { atomicStore(&hits, 0u); }
  workgroupBarrier();
  if (x[g.x] > 0.5) { atomicAdd(&hits, 1u); }
  workgroupBarrier();
  if (li == 0u) { atomicAdd(&count[0], atomicLoad(&hits)); }
}
`

// Atomics in workgroup memory and in a buffer (read and written by the
// same instruction, so read-write) count the inputs above one half.
func TestAtomicCountAgainstGo(t *testing.T) {
	dev := openDevice(t)
	k := load(t, dev, countSrc, Options{Name: "count"})
	assert.Equal(t, []vkc.Access{vkc.ReadOnly, vkc.ReadWrite}, k.Spec().Bindings)
	r := rand.New(rand.NewPCG(5, 8))
	x := make([]float32, 64*10)
	want := uint32(0)
	for i := range x {
		x[i] = r.Float32()
		if x[i] > 0.5 {
			want++
		}
	}
	count := newBuffer(t, dev, []uint32{0}, 0)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{10, 1, 1}, nil, newBuffer(t, dev, x, 0), count))
	assert.Equal(t, []uint32{want}, read(t, count))
}

const helperStoreSrc = `
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> m: array<mat4x4<f32>>;
@group(0) @binding(2) var<storage, read_write> v: array<vec4<f32>>;
fn twice(i: u32) { y[i] = y[i] * 2.0; }
@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  twice(g.x);
  v[g.x] = m[g.x] * v[g.x];
}
`

// A store through a helper function and a matrix-vector product over
// buffers of matrices and vectors.
func TestHelperStoreAndMatricesAgainstGo(t *testing.T) {
	dev := openDevice(t)
	k := load(t, dev, helperStoreSrc, Options{Name: "helper"})
	assert.Equal(t, []vkc.Access{vkc.ReadWrite, vkc.ReadOnly, vkc.ReadWrite}, k.Spec().Bindings)
	const n = 16
	r := rand.New(rand.NewPCG(9, 4))
	small := func() float32 { return float32(r.IntN(17) - 8) } // products and sums stay exact
	y, m, v := make([]float32, n), make([]float32, 16*n), make([]float32, 4*n)
	for i := range y {
		y[i] = small()
	}
	for i := range m {
		m[i] = small()
	}
	for i := range v {
		v[i] = small()
	}
	yb, vb := newBuffer(t, dev, y, 0), newBuffer(t, dev, v, 0)
	require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, nil, yb, newBuffer(t, dev, m, 0), vb))
	gotY, gotV := read(t, yb), read(t, vb)
	for i := range n {
		assert.Equal(t, 2*y[i], gotY[i], "y[%d]", i)
		// WGSL matrices are column-major: column c is m[16i+4c : 16i+4c+4].
		for row := range 4 {
			var want float32
			for c := range 4 {
				want += m[16*i+4*c+row] * v[4*i+c]
			}
			assert.Equal(t, want, gotV[4*i+row], "v[%d].%d", i, row)
		}
	}
}

// Every kernel of this file passes spirv-val.
func TestCorpusValidates(t *testing.T) {
	for _, src := range []string{controlFlowSrc, countSrc, helperStoreSrc, pushSrc} {
		compileOK(t, src, Options{Name: "corpus"})
	}
}
