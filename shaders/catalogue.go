// Package shaders is what vkc knows about compute kernels in SPIR-V.
//
// The built-in kernels: GLSL sources under glsl/, the SPIR-V glslc builds
// from them under spv/ (committed and embedded, so building vkc needs no
// shader compiler), and the catalogue that tells a launcher what a module
// does not say: what each buffer is, the push-constant layout, the default
// workgroup size and how many workgroups a problem needs.
//
// The reader, for any module: Inspect checks that the bytes are a whole
// SPIR-V module (the one check a user's bytes pass before a driver sees
// them) and reads its interface: the buffer bindings and whether the kernel
// reads or writes each, the push-constant size, the workgroup size and the
// specialization constants that set it.
//
// Conventions shared by every kernel: storage buffers only, in descriptor
// set 0 at bindings 0..n-1 in the order of Kernel.Bindings; push constants
// made of 4-byte fields; entry point "main"; the workgroup size comes from
// specialization constants 0, 1 (and 2), so one module adapts to the device.
//
// One-dimensional kernels process PerInvocation elements per invocation
// (Kernel.Span per group) and compute the invocation index as
//
//	gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x
//
// so a caller whose ceil(n/Span()) groups exceed the device's x limit
// (65535 is the guaranteed minimum) spreads them over y as gx x gy with
// gx*gy >= groups; every kernel bounds-checks against its length push
// constant, so the surplus invocations do nothing. The element-wise
// kernels take four elements per invocation: one vec4 (uvec4) load of each
// input and one store where the whole quad is below n, element by element
// for the last, partial quad, so any n works; every buffer vkc binds starts
// at a multiple of 16 bytes (the allocator's least alignment), so the
// quads are aligned.
//
// Dynamic variants: a recorded launch bakes its push constants, so every
// kernel with scalars that a graph may change between replays (all but
// transpose) has a variant "<name>_dyn" (see Dynamic) that reads each
// scalar from a storage buffer of its own instead. It has no push
// constants; its scalar buffers follow the kernel's own bindings in the
// order of the push-constant words, each holding its value at index 0
// (Kernel.Scalars). Its math, workgroup size, group counts and outputs are
// the static kernel's, and only its scalars bound the work, never the group
// count, so its groups may come from an indirect dispatch sized for any
// length up to the buffers'. Both come from one source, the variant built
// with -DDYNAMIC, so the two cannot drift apart.
package shaders

//go:generate sh ../scripts/gen-shaders.sh

import (
	"embed"
	"errors"
	"fmt"
)

//go:embed spv/*.spv
var modules embed.FS

// ErrUnknownKernel reports a kernel name the catalogue does not hold; the
// error returned by Get wraps it together with the name asked for.
var ErrUnknownKernel = errors.New("no catalogue kernel of that name")

// ErrNoDynamicVariant reports a catalogue kernel that has no dynamic
// variant (transpose, whose shape no graph changes, or a variant itself);
// the error returned by Dynamic wraps it together with the name asked for.
var ErrNoDynamicVariant = errors.New("catalogue kernel without a dynamic variant")

// Access says how a kernel uses a bound buffer, which is what a launcher
// needs to order launches: a read after a write needs a barrier, two reads
// do not, and a launch's write set is what the taint ledger marks.
type Access uint8

const (
	// ReadOnly buffers are only read (GLSL readonly).
	ReadOnly Access = iota + 1
	// WriteOnly buffers are only written (GLSL writeonly); their previous
	// contents do not matter to the kernel.
	WriteOnly
	// ReadWrite buffers are read and written in place (axpy's y).
	ReadWrite
)

// String names the access for error messages and tables.
func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read"
	case WriteOnly:
		return "write"
	case ReadWrite:
		return "read-write"
	default:
		return fmt.Sprintf("Access(%d)", uint8(a))
	}
}

// Reads reports whether the kernel reads the buffer, so that a launcher can
// build its read set without switching on every value.
func (a Access) Reads() bool { return a == ReadOnly || a == ReadWrite }

// Writes reports whether the kernel writes the buffer (the launch's write set).
func (a Access) Writes() bool { return a == WriteOnly || a == ReadWrite }

// Feature is a device capability a kernel needs beyond Vulkan 1.1 core; a
// launcher offers the kernel only where the device reports it.
type Feature uint8

const (
	// FeatureNone: the kernel runs on any Vulkan 1.1 device.
	FeatureNone Feature = iota
	// FeatureSubgroupArithmetic: the device must report
	// VK_SUBGROUP_FEATURE_ARITHMETIC_BIT in supportedOperations and the
	// compute stage in supportedStages of VkPhysicalDeviceSubgroupProperties.
	FeatureSubgroupArithmetic
	// FeatureSubgroupArithmeticInt64: FeatureSubgroupArithmetic, and the
	// device's shaderInt64 enabled (the kernel loads 64-bit words).
	FeatureSubgroupArithmeticInt64
	// FeatureInt64: the device's shaderInt64 enabled (the element-wise
	// kernels' wide variants move 64-bit words).
	FeatureInt64
)

// String names the feature for error messages.
func (f Feature) String() string {
	switch f {
	case FeatureNone:
		return "none"
	case FeatureSubgroupArithmetic:
		return "subgroup arithmetic"
	case FeatureSubgroupArithmeticInt64:
		return "subgroup arithmetic and 64-bit integers"
	case FeatureInt64:
		return "64-bit integers"
	default:
		return fmt.Sprintf("Feature(%d)", uint8(f))
	}
}

// Binding is one storage buffer of a kernel: its name in the GLSL source and
// how the kernel uses it.
type Binding struct {
	Name   string
	Access Access
	// Texel marks a read-only binding the kernel reads as a uniform texel
	// buffer of 16-byte R32G32B32A32_UINT texels (GLSL usamplerBuffer)
	// instead of a storage buffer: the range bound must start at a
	// multiple of the device's minTexelBufferOffsetAlignment and hold at
	// most maxTexelBufferElements whole texels.
	Texel bool
}

// Scalar is one scalar argument of a dynamic variant: a 4-byte value the
// kernel reads at index 0 of a read-only storage buffer of its own, where
// the static kernel takes a push-constant word. A launcher checks the
// device value it binds against Float.
type Scalar struct {
	// Name is the argument's name, as in the static kernel's PushDoc and
	// the variant's binding ("a", "n").
	Name string
	// Float says the kernel reads the value as a float32; otherwise it reads
	// a uint32 (for fill's value, the bits of any 32-bit element).
	Float bool
}

// Kernel is one catalogue entry: the module plus the description a launcher
// needs to build the descriptor set layout, the pipeline layout, the
// specialization constants and the group counts.
type Kernel struct {
	// Name is the catalogue key and the source's base name.
	Name string
	// SPIRV is the embedded module; its entry point is "main".
	SPIRV []byte
	// Bindings lists the storage buffers of set 0: binding i is Bindings[i].
	Bindings []Binding
	// PushSize is the size in bytes of the push-constant block (0 if none).
	PushSize uint32
	// PushDoc spells out the push-constant words in order.
	PushDoc string
	// LocalSize is the default workgroup size, applied through
	// specialization constants 0, 1, 2 (those absent in the shader are
	// ignored). A launcher may pass other sizes; group counts scale with it.
	LocalSize [3]uint32
	// Tile is, for 2-D kernels, the output elements one workgroup covers in
	// x (columns) and y (rows) at the default LocalSize, so that the caller
	// computes ceil(cols/Tile[0]) x ceil(rows/Tile[1]) groups; zero for
	// 1-D kernels and for softmax (one group per row).
	Tile [2]uint32
	// PerInvocation is, for 1-D kernels, how many consecutive elements one
	// invocation covers (0 means 1); see Span.
	PerInvocation uint32
	// GroupSpan, when set, is the elements one group of a 1-D kernel covers
	// whatever its workgroup size (the subgroup reductions: 256, each
	// invocation taking 256/x of them); see Span.
	GroupSpan uint32
	// Needs is the device feature the kernel requires.
	Needs Feature
	// DynamicOf, on a dynamic variant, names the static kernel it stands in
	// for (same math, workgroup size, group counts and outputs); empty on
	// every other kernel.
	DynamicOf string
	// Scalars, on a dynamic variant, are its scalar arguments in the order
	// of the static kernel's push-constant words; Scalars[i] is read from
	// binding ScalarBinding(i). Nil on every other kernel, whose scalars
	// are push constants (PushDoc).
	Scalars []Scalar
}

// Target is what the catalogue needs to know of a device to shape a kernel
// for it: the same module runs best with different blocks on a CPU driver
// and on a GPU.
type Target struct {
	// CPU is a CPU driver (lavapipe): each invocation's buffer load is a
	// scalar loop over the SIMD lanes, so loads, not arithmetic, bound a
	// kernel, and a larger block per invocation pays.
	CPU bool
	// SubgroupSize is the device's subgroup size (on a CPU driver, the SIMD
	// width in 32-bit lanes); 0 if unknown.
	SubgroupSize uint32
	// MaxInvocations is maxComputeWorkGroupInvocations; MaxLocalSize is
	// maxComputeWorkGroupSize.
	MaxInvocations uint32
	MaxLocalSize   [3]uint32
}

// Shape is the geometry a kernel runs with on one device: its workgroup
// size (specialization constants 0, 1, 2), the values of its further
// specialization constants (IDs 3, 4, ... in order) and its tile, which
// the group counts follow as Kernel.Tile says.
type Shape struct {
	LocalSize [3]uint32
	Spec      []uint32
	Tile      [2]uint32
}

// ShapeFor returns the geometry k should run with on t: the catalogue
// defaults (LocalSize, Tile, no further constants) unless the kernel picks
// its own per device (matmul's block, see the catalogue).
func (k Kernel) ShapeFor(t Target) Shape {
	if shape, ok := shapes[k.Name]; ok {
		return shape(k, t)
	}
	return Shape{LocalSize: k.LocalSize, Tile: k.Tile}
}

// shapes are the kernels that pick their geometry per device, by name (a
// dynamic variant picks as its static kernel does).
var shapes = map[string]func(Kernel, Target) Shape{
	"matmul":               matmulShape,
	"matmul_dyn":           matmulShape,
	"matmul_wide":          wideShape,
	"matmul_wide_dyn":      wideShape,
	"matmul_wide_f16":      wideShape,
	"matmul_wide_f16_dyn":  wideShape,
	"matmul_texel":         wideShape,
	"matmul_texel_dyn":     wideShape,
	"matmul_texel_f16":     wideShape,
	"matmul_texel_f16_dyn": wideShape,
	"sum_subgroup":         subgroupShape,
	"sum_subgroup_dyn":     subgroupShape,
	"dot_subgroup":         subgroupShape,
	"dot_subgroup_dyn":     subgroupShape,
	"sum_wide":             subgroupShape,
	"sum_wide_dyn":         subgroupShape,
	"dot_wide":             subgroupShape,
	"dot_wide_dyn":         subgroupShape,
	"softmax_subgroup":     subgroupShape,
	"softmax_subgroup_dyn": subgroupShape,
}

// subgroupShape sizes a subgroup reduction's workgroup to one subgroup, so
// that subgroupAdd alone reduces the group and no barrier runs (on lavapipe
// a barrier suspends and resumes every SIMD batch of the group). The
// kernel's group covers its GroupSpan at any size dividing 64; a subgroup
// size that does not (or none reported, or above the device's limits)
// keeps the catalogue's 64.
func subgroupShape(k Kernel, t Target) Shape {
	x := t.SubgroupSize
	if x == 0 || 64%x != 0 || x > t.MaxLocalSize[0] || x > t.MaxInvocations {
		x = 64
	}
	return Shape{LocalSize: [3]uint32{x, 1, 1}}
}

// matmulShape picks matmul's block (specialization constant 3, BLOCK):
// 8 x 8 per invocation over the default 8 x 8 workgroup on a GPU, whose
// registers hold that much; 16 x 16 on a CPU driver, where a larger block
// loads each value once for more multiply-adds (1.3-1.5x on lavapipe),
// with the workgroup's x a whole number of SIMD widths so no lane idles.
func matmulShape(k Kernel, t Target) Shape {
	def := Shape{LocalSize: k.LocalSize, Spec: []uint32{matmulBlock8}, Tile: k.Tile}
	if !t.CPU {
		return def
	}
	x := max(t.SubgroupSize, 8)
	y := max(64/x, 1)
	if x > t.MaxLocalSize[0] || y > t.MaxLocalSize[1] || x*y > t.MaxInvocations {
		return def
	}
	return Shape{LocalSize: [3]uint32{x, y, 1}, Spec: []uint32{matmulBlock16}, Tile: [2]uint32{16 * x, 16 * y}}
}

// wideShape sizes matmul_wide's workgroup (and its _f16 and dynamic
// variants'): x the SIMD width on a CPU driver, so that the lanes of one
// batch read consecutive column octets and share their rows of A, and y
// making 64 invocations; the catalogue's 8 x 8 where the device reports no
// width or its limits refuse.
func wideShape(k Kernel, t Target) Shape {
	def := Shape{LocalSize: k.LocalSize, Tile: k.Tile}
	x := max(t.SubgroupSize, 8)
	y := max(64/x, 1)
	if !t.CPU || x > t.MaxLocalSize[0] || y > t.MaxLocalSize[1] || x*y > t.MaxInvocations {
		return def
	}
	return Shape{LocalSize: [3]uint32{x, y, 1}, Tile: [2]uint32{wideCols * x, wideRows * y}}
}

// The block of C one invocation of matmul_wide keeps (WIDE_ROWS and
// 8*WIDE_OCTS in matmul_wide.glsl).
const (
	wideRows = 16
	wideCols = 32
)

// The values of matmul's BLOCK specialization constant.
const (
	matmulBlock8  = 0 // 8 x 8 outputs per invocation
	matmulBlock16 = 1 // 16 x 16 outputs per invocation
)

// Span is the number of elements one workgroup of a 1-D kernel covers at
// workgroup size x (LocalSize[0] by default): GroupSpan where set, else x
// times PerInvocation. A
// launcher covering n elements dispatches ceil(n/Span(x)) groups.
func (k Kernel) Span(x uint32) uint32 {
	if k.GroupSpan != 0 {
		return k.GroupSpan
	}
	return x * max(k.PerInvocation, 1)
}

// ScalarBinding is the binding from which a dynamic variant reads
// Scalars[i]: the scalar buffers are the last len(Scalars) bindings, after
// the buffers the static kernel also takes.
func (k Kernel) ScalarBinding(i int) int { return len(k.Bindings) - len(k.Scalars) + i }

// Group counts of the 1-D kernels: ceil(n / Span) groups, spread over y
// past the device's x limit. Every 1-D kernel's group covers 256 elements
// by default: 256 invocations of one element, or 64 of four; the wide
// reductions' groups cover wideSpan.
const defaultLocal1D = 256

// wideSpan is the elements one group of sum_wide and dot_wide covers (the
// SPAN of their sources): on lavapipe a group costs about as much to start
// as a few thousand elements cost to read, so a CPU driver's reduction
// takes few, long groups (1024 for 16 M elements, still enough to keep
// every thread busy).
const wideSpan = 16384

// wideKernel is the entry of a wide reduction (sum_wide, dot_wide, or
// their variants): one subgroup per group (ShapeFor), wideSpan elements.
func wideKernel(k Kernel) Kernel {
	k.Needs = FeatureSubgroupArithmeticInt64
	k.LocalSize[0], k.GroupSpan = 8, wideSpan
	return k
}

// quad is the elements per invocation of the element-wise kernels.
const quad = 4

func vectorKernel(name string, bindings []Binding, pushSize uint32, pushDoc string) Kernel {
	return Kernel{Name: name, Bindings: bindings, PushSize: pushSize, PushDoc: pushDoc,
		LocalSize: [3]uint32{defaultLocal1D, 1, 1}}
}

// quadKernel is the entry of an element-wise kernel: four elements per
// invocation, 64 invocations per group.
func quadKernel(name string, bindings []Binding, pushSize uint32, pushDoc string) Kernel {
	return Kernel{Name: name, Bindings: bindings, PushSize: pushSize, PushDoc: pushDoc,
		LocalSize: [3]uint32{defaultLocal1D / quad, 1, 1}, PerInvocation: quad}
}

// dynamicVector is the entry of a 1-D kernel's dynamic variant: named
// <static>_dyn, the given bindings (the static kernel's, then one read-only
// buffer per scalar), no push constants, the 1-D workgroup size.
func dynamicVector(static string, bindings []Binding, scalars ...Scalar) Kernel {
	return Kernel{Name: static + dynamicSuffix, Bindings: bindings, LocalSize: [3]uint32{defaultLocal1D, 1, 1},
		DynamicOf: static, Scalars: scalars}
}

// dynamicQuad is dynamicVector for an element-wise kernel (quadKernel).
func dynamicQuad(static string, bindings []Binding, scalars ...Scalar) Kernel {
	k := dynamicVector(static, bindings, scalars...)
	k.LocalSize[0], k.PerInvocation = defaultLocal1D/quad, quad
	return k
}

// dynamicSuffix ends the name of every dynamic variant.
const dynamicSuffix = "_dyn"

// wideSuffix ends the name of an element-wise kernel's wide variant (see
// Wide).
const wideSuffix = "_wide"

// wideQuad is the entry of an element-wise kernel's wide variant (static
// or dynamic, from the entry k of the vec4 build): eight elements per
// invocation in 64-bit words, 32 invocations, the same 256 elements per
// group; it needs shaderInt64.
func wideQuad(k Kernel) Kernel {
	if k.DynamicOf != "" {
		k.DynamicOf += wideSuffix
		k.Name = k.DynamicOf + dynamicSuffix
	} else {
		k.Name += wideSuffix
	}
	k.LocalSize[0], k.PerInvocation = defaultLocal1D/wideElements, wideElements
	k.Needs = FeatureInt64
	return k
}

// wideElements is the elements one invocation of a wide variant covers.
const wideElements = 8

func u32(name string) Scalar { return Scalar{Name: name} }
func f32(name string) Scalar { return Scalar{Name: name, Float: true} }

func ro(name string) Binding { return Binding{Name: name, Access: ReadOnly} }
func wo(name string) Binding { return Binding{Name: name, Access: WriteOnly} }
func rw(name string) Binding { return Binding{Name: name, Access: ReadWrite} }

// rt is a read-only binding read as texels (see Binding.Texel).
func rt(name string) Binding { return Binding{Name: name, Access: ReadOnly, Texel: true} }

// catalogue lists every kernel in the stable order All returns. SPIRV is
// filled in from the embedded files by init.
var catalogue = []Kernel{
	// fill: out[i] = value for i < n over 32-bit words; value travels as its
	// uint32 bits, so it fills float32, int32 and uint32 buffers.
	// Bindings: 0 out (write). Push: value uint32, n uint32.
	// Groups: ceil(n/256), four elements per invocation.
	quadKernel("fill", []Binding{wo("out")}, 8, "value uint32 (the element's bits), n uint32"),
	// copy: dst[i] = src[i] for i < n over 32-bit words.
	// Bindings: 0 src (read), 1 dst (write). Push: n uint32. Groups: ceil(n/256).
	quadKernel("copy", []Binding{ro("src"), wo("dst")}, 4, "n uint32"),
	// axpy: y[i] = a*x[i] + y[i] for i < n.
	// Bindings: 0 x (read), 1 y (read-write). Push: a float32, n uint32. Groups: ceil(n/256).
	quadKernel("axpy", []Binding{ro("x"), rw("y")}, 8, "a float32, n uint32"),
	// scale: y[i] = a*x[i] for i < n.
	// Bindings: 0 x (read), 1 y (write). Push: a float32, n uint32. Groups: ceil(n/256).
	quadKernel("scale", []Binding{ro("x"), wo("y")}, 8, "a float32, n uint32"),
	// add: z[i] = x[i] + y[i] for i < n.
	// Bindings: 0 x, 1 y (read), 2 z (write). Push: n uint32. Groups: ceil(n/256).
	quadKernel("add", []Binding{ro("x"), ro("y"), wo("z")}, 4, "n uint32"),
	// sub: z[i] = x[i] - y[i] for i < n.
	// Bindings: 0 x, 1 y (read), 2 z (write). Push: n uint32. Groups: ceil(n/256).
	quadKernel("sub", []Binding{ro("x"), ro("y"), wo("z")}, 4, "n uint32"),
	// mul: z[i] = x[i] * y[i] for i < n.
	// Bindings: 0 x, 1 y (read), 2 z (write). Push: n uint32. Groups: ceil(n/256).
	quadKernel("mul", []Binding{ro("x"), ro("y"), wo("z")}, 4, "n uint32"),
	// div: z[i] = x[i] / y[i] for i < n (IEEE division: x/0 is ±Inf or NaN).
	// Bindings: 0 x, 1 y (read), 2 z (write). Push: n uint32. Groups: ceil(n/256).
	quadKernel("div", []Binding{ro("x"), ro("y"), wo("z")}, 4, "n uint32"),
	// sum: partials[g] = sum of the W = LocalSize[0] elements of group g
	// (g = gl_WorkGroupID.x + gl_WorkGroupID.y*gl_NumWorkGroups.x), clipped
	// to n. Groups and partials written: ceil(n/W). The caller repeats sum on
	// the partials (n = ceil(n/W)) until one value is left; any n >= 1.
	// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
	vectorKernel("sum", []Binding{ro("src"), wo("partials")}, 4, "n uint32"),
	// sum_subgroup: the contract of sum (256 elements per group, GroupSpan),
	// each invocation adding 256/x of them from vec4 loads, reduced with
	// subgroupAdd; ShapeFor sizes the workgroup to one subgroup, so no
	// barrier runs. Offer it only where the device reports subgroup
	// arithmetic for compute, and keep the workgroup a multiple of the
	// subgroup size (lavapipe mis-sums a partial subgroup).
	// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
	func() Kernel {
		k := vectorKernel("sum_subgroup", []Binding{ro("src"), wo("partials")}, 4, "n uint32")
		k.Needs = FeatureSubgroupArithmetic
		k.LocalSize[0], k.GroupSpan = 64, defaultLocal1D
		return k
	}(),
	// dot_subgroup: the contract of dot, reduced as sum_subgroup reduces
	// (the same shape and needs).
	// Bindings: 0 x (read), 1 y (read), 2 partials (write). Push: n uint32.
	func() Kernel {
		k := vectorKernel("dot_subgroup", []Binding{ro("x"), ro("y"), wo("partials")}, 4, "n uint32")
		k.Needs = FeatureSubgroupArithmetic
		k.LocalSize[0], k.GroupSpan = 64, defaultLocal1D
		return k
	}(),
	// sum_wide: the contract of sum_subgroup over groups of wideSpan
	// elements (GroupSpan), read as 64-bit words, eight float32 to a load:
	// the first pass of a float32 Sum on a CPU driver, where each
	// per-invocation load is a loop over the SIMD lanes. Offer it only where
	// the device reports subgroup arithmetic for compute and has shaderInt64
	// enabled.
	// Bindings: 0 src (read), 1 partials (write). Push: n uint32.
	wideKernel(vectorKernel("sum_wide", []Binding{ro("src"), wo("partials")}, 4, "n uint32")),
	// dot_wide: the contract of dot_subgroup, reduced as sum_wide reduces
	// (the same shape and needs).
	// Bindings: 0 x (read), 1 y (read), 2 partials (write). Push: n uint32.
	wideKernel(vectorKernel("dot_wide", []Binding{ro("x"), ro("y"), wo("partials")}, 4, "n uint32")),
	// dot: partials[g] = sum of x[i]*y[i] over the W = LocalSize[0]
	// elements of group g, clipped to n. Groups and partials written:
	// ceil(n/W); the caller then reduces the partials with sum.
	// Bindings: 0 x (read), 1 y (read), 2 partials (write). Push: n uint32.
	vectorKernel("dot", []Binding{ro("x"), ro("y"), wo("partials")}, 4, "n uint32"),
	// matmul: C[MxN] = A[MxK]·B[KxN], row-major float32, any M, N, K (K = 0
	// stores zeros). Each invocation computes a block of C in registers,
	// 8x8 by default, so a group covers 8*LocalSize[1] rows by
	// 8*LocalSize[0] columns: 64x64. ShapeFor picks the block per device
	// (specialization constant 3): 16x16 on a CPU driver, whose tile is
	// then 16 times the workgroup size.
	// Groups: ceil(N/Tile[0]) x ceil(M/Tile[1]). N a multiple of 4 takes the
	// faster vec4 path.
	// Bindings: 0 A (read), 1 B (read), 2 C (write). Push: M, N, K uint32.
	{
		Name:      "matmul",
		Bindings:  []Binding{ro("A"), ro("B"), wo("C")},
		PushSize:  12,
		PushDoc:   "M uint32 (rows of A and C), N uint32 (columns of B and C), K uint32 (columns of A = rows of B)",
		LocalSize: [3]uint32{8, 8, 1},
		Tile:      [2]uint32{64, 64},
	},
	// matmul_wide: matmul's contract for N and K multiples of 8, shaped for
	// CPU drivers: each invocation keeps a 16 x 32 block of C and reads A
	// and B eight elements at a time as 64-bit lanes, so a group covers
	// 16*LocalSize[1] rows by 32*LocalSize[0] columns (128 x 256); ShapeFor
	// sets LocalSize[0] to the SIMD width. Needs shaderInt64: a launcher
	// runs it on a CPU driver that has it and the shape it takes, matmul
	// otherwise (on a GPU its block would not fit in registers).
	// Groups: ceil(N/Tile[0]) x ceil(M/Tile[1]).
	// Bindings: 0 A (read), 1 B (read), 2 C (write). Push: M, N, K uint32.
	{
		Name:      "matmul_wide",
		Bindings:  []Binding{ro("A"), ro("B"), wo("C")},
		PushSize:  12,
		PushDoc:   "M uint32 (rows of A and C), N uint32 (columns of B and C; a multiple of 8), K uint32 (columns of A = rows of B; a multiple of 8)",
		LocalSize: [3]uint32{8, 8, 1},
		Tile:      [2]uint32{wideCols * 8, wideRows * 8},
		Needs:     FeatureInt64,
	},
	// transpose: dst[c][r] = src[r][c] with src rows x cols, row-major,
	// through a shared-memory tile of LocalSize[0] x LocalSize[1] elements.
	// Groups: ceil(cols/Tile[0]) x ceil(rows/Tile[1]) over the input.
	// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
	{
		Name:      "transpose",
		Bindings:  []Binding{ro("src"), wo("dst")},
		PushSize:  8,
		PushDoc:   "rows uint32, cols uint32 (of the input)",
		LocalSize: [3]uint32{16, 16, 1},
		Tile:      [2]uint32{16, 16},
	},
	// softmax_subgroup: the contract of softmax (rows groups, one per row),
	// its row maximum and sum reduced with subgroup arithmetic, the
	// workgroup sized to one subgroup as sum_subgroup's (ShapeFor).
	// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
	{
		Name:      "softmax_subgroup",
		Bindings:  []Binding{ro("src"), wo("dst")},
		PushSize:  8,
		PushDoc:   "rows uint32, cols uint32",
		LocalSize: [3]uint32{64, 1, 1},
		Needs:     FeatureSubgroupArithmetic,
	},
	// softmax: row-wise, numerically stable (subtract the row max, sum the
	// exponentials, divide) over a rows x cols row-major matrix, any cols.
	// One group per row: rows groups, row = gl_WorkGroupID.x +
	// gl_WorkGroupID.y*gl_NumWorkGroups.x, so spread over y past the x limit.
	// Bindings: 0 src (read), 1 dst (write). Push: rows uint32, cols uint32.
	{
		Name:      "softmax",
		Bindings:  []Binding{ro("src"), wo("dst")},
		PushSize:  8,
		PushDoc:   "rows uint32, cols uint32",
		LocalSize: [3]uint32{defaultLocal1D, 1, 1},
	},
	// clamp_groups: dst[i] = min(src[offset+i], limit[i]) for i < 3, one
	// invocation: group counts a kernel wrote, bounded on the device before
	// an indirect dispatch reads them (Kernel.LaunchIndirect with
	// GroupsFrom).
	// Bindings: 0 src (read), 1 dst (write, 3 words). Push: offset uint32
	// (words), limit x, y, z uint32. Groups: 1.
	{
		Name:      "clamp_groups",
		Bindings:  []Binding{ro("src"), wo("dst")},
		PushSize:  16,
		PushDoc:   "offset uint32 (in words into src), limit_x uint32, limit_y uint32, limit_z uint32",
		LocalSize: [3]uint32{1, 1, 1},
	},

	// The dynamic variants (see the package doc): each reads the static
	// kernel's push-constant words, in order, from the read-only scalar
	// buffers that follow its own bindings, and is launched with the
	// static kernel's group counts.

	// fill_dyn: fill with value and n from device memory.
	// Bindings: 0 out (write), 1 value (uint32 bits), 2 n. Groups: ceil(n/256).
	dynamicQuad("fill", []Binding{wo("out"), ro("value"), ro("n")}, u32("value"), u32("n")),
	// copy_dyn: copy with n from device memory.
	// Bindings: 0 src (read), 1 dst (write), 2 n. Groups: ceil(n/256).
	dynamicQuad("copy", []Binding{ro("src"), wo("dst"), ro("n")}, u32("n")),
	// axpy_dyn: axpy with a and n from device memory.
	// Bindings: 0 x (read), 1 y (read-write), 2 a (float32), 3 n. Groups: ceil(n/256).
	dynamicQuad("axpy", []Binding{ro("x"), rw("y"), ro("a"), ro("n")}, f32("a"), u32("n")),
	// scale_dyn: scale with a and n from device memory.
	// Bindings: 0 x (read), 1 y (write), 2 a (float32), 3 n. Groups: ceil(n/256).
	dynamicQuad("scale", []Binding{ro("x"), wo("y"), ro("a"), ro("n")}, f32("a"), u32("n")),
	// add_dyn, sub_dyn, mul_dyn, div_dyn: add, sub, mul, div with n from
	// device memory.
	// Bindings: 0 x, 1 y (read), 2 z (write), 3 n. Groups: ceil(n/256).
	dynamicQuad("add", []Binding{ro("x"), ro("y"), wo("z"), ro("n")}, u32("n")),
	dynamicQuad("sub", []Binding{ro("x"), ro("y"), wo("z"), ro("n")}, u32("n")),
	dynamicQuad("mul", []Binding{ro("x"), ro("y"), wo("z"), ro("n")}, u32("n")),
	dynamicQuad("div", []Binding{ro("x"), ro("y"), wo("z"), ro("n")}, u32("n")),
	// sum_dyn: sum with n from device memory; the same partials, so the
	// caller repeats it on them with n = ceil(n/W) until one value is left.
	// Bindings: 0 src (read), 1 partials (write), 2 n. Groups: ceil(n/W).
	dynamicVector("sum", []Binding{ro("src"), wo("partials"), ro("n")}, u32("n")),
	// sum_subgroup_dyn: sum_subgroup with n from device memory; needs what
	// sum_subgroup needs.
	// Bindings: 0 src (read), 1 partials (write), 2 n. Groups: ceil(n/W).
	func() Kernel {
		k := dynamicVector("sum_subgroup", []Binding{ro("src"), wo("partials"), ro("n")}, u32("n"))
		k.Needs = FeatureSubgroupArithmetic
		k.LocalSize[0], k.GroupSpan = 64, defaultLocal1D
		return k
	}(),
	// dot_dyn: dot with n from device memory; its partials are reduced with
	// sum_dyn (or sum).
	// Bindings: 0 x (read), 1 y (read), 2 partials (write), 3 n. Groups: ceil(n/W).
	dynamicVector("dot", []Binding{ro("x"), ro("y"), wo("partials"), ro("n")}, u32("n")),
	// dot_subgroup_dyn: dot_subgroup with n from device memory; needs what
	// dot_subgroup needs.
	// Bindings: 0 x (read), 1 y (read), 2 partials (write), 3 n. Groups: ceil(n/256).
	func() Kernel {
		k := dynamicVector("dot_subgroup", []Binding{ro("x"), ro("y"), wo("partials"), ro("n")}, u32("n"))
		k.Needs = FeatureSubgroupArithmetic
		k.LocalSize[0], k.GroupSpan = 64, defaultLocal1D
		return k
	}(),
	// sum_wide_dyn, dot_wide_dyn: sum_wide and dot_wide with n from device
	// memory; they need what the static kernels need.
	// Bindings: sum_wide_dyn 0 src, 1 partials, 2 n; dot_wide_dyn 0 x, 1 y,
	// 2 partials, 3 n. Groups: ceil(n/wideSpan).
	wideKernel(dynamicVector("sum_wide", []Binding{ro("src"), wo("partials"), ro("n")}, u32("n"))),
	wideKernel(dynamicVector("dot_wide", []Binding{ro("x"), ro("y"), wo("partials"), ro("n")}, u32("n"))),
	// matmul_dyn: matmul with M, N and K from device memory; the block, the
	// tile and the group counts are matmul's on every device.
	// Bindings: 0 A (read), 1 B (read), 2 C (write), 3 M, 4 N, 5 K.
	// Groups: ceil(N/Tile[0]) x ceil(M/Tile[1]).
	{
		Name:      "matmul_dyn",
		Bindings:  []Binding{ro("A"), ro("B"), wo("C"), ro("M"), ro("N"), ro("K")},
		LocalSize: [3]uint32{8, 8, 1},
		Tile:      [2]uint32{64, 64},
		DynamicOf: "matmul",
		Scalars:   []Scalar{u32("M"), u32("N"), u32("K")},
	},
	// matmul_texel: matmul_wide's contract, shape rule, geometry and
	// arithmetic (the same bits), reading A and B as uniform texel buffers
	// (see Binding.Texel): on a CPU driver a texel fetch is one vector
	// load per lane where a storage-buffer load is a bounds-checked loop
	// over the lanes, so it runs about 1.5x matmul_wide's speed on
	// lavapipe. It needs no 64-bit integers. A launcher runs it on a CPU
	// driver when both inputs may be viewed as texels, matmul_wide or
	// matmul otherwise.
	// Groups: ceil(N/Tile[0]) x ceil(M/Tile[1]).
	// Bindings: 0 A (read, texels), 1 B (read, texels), 2 C (write). Push: M, N, K uint32.
	{
		Name:      "matmul_texel",
		Bindings:  []Binding{rt("A"), rt("B"), wo("C")},
		PushSize:  12,
		PushDoc:   "M uint32 (rows of A and C), N uint32 (columns of B and C; a multiple of 8), K uint32 (columns of A = rows of B; a multiple of 8)",
		LocalSize: [3]uint32{8, 8, 1},
		Tile:      [2]uint32{wideCols * 8, wideRows * 8},
	},
	// matmul_texel_dyn: matmul_texel with M, N and K from device memory.
	// Bindings: 0 A, 1 B (read, texels), 2 C (write), 3 M, 4 N, 5 K.
	{
		Name:      "matmul_texel_dyn",
		Bindings:  []Binding{rt("A"), rt("B"), wo("C"), ro("M"), ro("N"), ro("K")},
		LocalSize: [3]uint32{8, 8, 1},
		Tile:      [2]uint32{wideCols * 8, wideRows * 8},
		DynamicOf: "matmul_texel",
		Scalars:   []Scalar{u32("M"), u32("N"), u32("K")},
	},
	// matmul_wide_dyn: matmul_wide with M, N and K from device memory.
	// Bindings: 0 A (read), 1 B (read), 2 C (write), 3 M, 4 N, 5 K.
	// Groups: ceil(N/Tile[0]) x ceil(M/Tile[1]).
	{
		Name:      "matmul_wide_dyn",
		Bindings:  []Binding{ro("A"), ro("B"), wo("C"), ro("M"), ro("N"), ro("K")},
		LocalSize: [3]uint32{8, 8, 1},
		Tile:      [2]uint32{wideCols * 8, wideRows * 8},
		Needs:     FeatureInt64,
		DynamicOf: "matmul_wide",
		Scalars:   []Scalar{u32("M"), u32("N"), u32("K")},
	},
	// softmax_subgroup_dyn: softmax_subgroup with rows and cols from device
	// memory; needs what softmax_subgroup needs.
	// Bindings: 0 src (read), 1 dst (write), 2 rows, 3 cols. Groups: rows.
	{
		Name:      "softmax_subgroup_dyn",
		Bindings:  []Binding{ro("src"), wo("dst"), ro("rows"), ro("cols")},
		LocalSize: [3]uint32{64, 1, 1},
		Needs:     FeatureSubgroupArithmetic,
		DynamicOf: "softmax_subgroup",
		Scalars:   []Scalar{u32("rows"), u32("cols")},
	},
	// softmax_dyn: softmax with rows and cols from device memory; one group
	// per row, as softmax.
	// Bindings: 0 src (read), 1 dst (write), 2 rows, 3 cols. Groups: rows.
	{
		Name:      "softmax_dyn",
		Bindings:  []Binding{ro("src"), wo("dst"), ro("rows"), ro("cols")},
		LocalSize: [3]uint32{defaultLocal1D, 1, 1},
		DynamicOf: "softmax",
		Scalars:   []Scalar{u32("rows"), u32("cols")},
	},
}

var (
	byName    = map[string]int{}
	dynamicOf = map[string]int{} // static kernel name -> its variant's index
	wideOf    map[string]string  // element-wise kernel (or variant) -> its wide variant
)

// elementwise are the element-wise kernels that have a wide variant
// (<name>_wide, and <name>_wide_dyn of their dynamic variant): every
// source with an `#ifdef WIDE` build.
var elementwise = []string{"fill", "copy", "axpy", "scale", "add", "sub", "mul", "div"}

func init() {
	catalogue = append(catalogue, typedCatalogue...)
	var wides []Kernel
	for _, k := range catalogue {
		base := k.Name
		if k.DynamicOf != "" {
			base = k.DynamicOf
		}
		for _, name := range elementwise {
			if base == name {
				wides = append(wides, wideQuad(k))
			}
		}
	}
	catalogue = append(catalogue, wides...)
	wideOf = map[string]string{}
	for _, name := range elementwise {
		wideOf[name] = name + wideSuffix
		wideOf[name+dynamicSuffix] = name + wideSuffix + dynamicSuffix
	}
	for i := range catalogue {
		k := &catalogue[i]
		code, err := modules.ReadFile("spv/" + k.Name + ".spv")
		if err != nil {
			// A catalogue entry without its module is a build mistake that the
			// tests catch; leaving SPIRV empty keeps the package importable.
			continue
		}
		k.SPIRV = code
		byName[k.Name] = i
		if k.DynamicOf != "" {
			dynamicOf[k.DynamicOf] = i
		}
	}
}

// Get returns the named kernel. The returned value's slices are copies, so a
// caller may keep or change them without touching the catalogue.
func Get(name string) (Kernel, error) {
	i, ok := byName[name]
	if !ok {
		return Kernel{}, fmt.Errorf("%w: %q", ErrUnknownKernel, name)
	}
	return clone(catalogue[i]), nil
}

// Dynamic returns the dynamic variant of the static kernel name (a copy, as
// Get): the kernel a launcher records instead when the scalars must be read
// from device memory at each replay. An unknown name wraps
// ErrUnknownKernel; a kernel without a variant wraps ErrNoDynamicVariant.
func Dynamic(name string) (Kernel, error) {
	if i, ok := dynamicOf[name]; ok {
		return clone(catalogue[i]), nil
	}
	if _, ok := byName[name]; !ok {
		return Kernel{}, fmt.Errorf("%w: %q", ErrUnknownKernel, name)
	}
	return Kernel{}, fmt.Errorf("%w: %q", ErrNoDynamicVariant, name)
}

// Wide returns the name of the wide variant of the element-wise kernel
// name (fill, copy, axpy, scale, add, sub, mul, div, or their dynamic
// variants): the same contract, group counts and outputs, eight elements
// per invocation moved as 64-bit words (Needs FeatureInt64). A CPU driver
// that turns each per-invocation load and store into a loop over its SIMD
// lanes (lavapipe) runs it in about two thirds of the vec4 build's time; a
// GPU keeps the vec4 build, whose 64 invocations fill a wave. ok is false
// for any other name.
func Wide(name string) (wide string, ok bool) {
	wide, ok = wideOf[name]
	return wide, ok
}

// All returns every kernel in the catalogue's stable order (copies, as Get).
func All() []Kernel {
	out := make([]Kernel, 0, len(byName))
	for _, k := range catalogue {
		if _, ok := byName[k.Name]; ok {
			out = append(out, clone(k))
		}
	}
	return out
}

func clone(k Kernel) Kernel {
	k.SPIRV = append([]byte(nil), k.SPIRV...)
	k.Bindings = append([]Binding(nil), k.Bindings...)
	if k.Scalars != nil {
		k.Scalars = append([]Scalar(nil), k.Scalars...)
	}
	return k
}
