package vkc

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
	"github.com/vkcompute/vkc/shaders"
)

// The dynamic variants of the catalogue kernels (shaders.Dynamic) are
// loaded through the public LoadKernel, given their scalars in one-element
// buffers, and launched with the group counts the static op uses. On
// lavapipe and on the pure-Go device alike, each variant must give exactly
// the static kernel's result on every buffer, and both must match a
// float64 reference on the elements the scalars select while leaving the
// rest of the output as it was.

// dynSentinel marks output words a launch must leave alone: a NaN whose
// payload no kernel computes.
const dynSentinel = 0x7fc0dead

// dynStep is one launch of a static catalogue kernel (or its variant) on
// some of a case's buffers.
type dynStep struct {
	kernel  string    // the static kernel's catalogue name
	scalars []uint32  // its push-constant words, in order
	groups  [3]uint32 // the group counts its op would use
	args    []int     // indices into the case's buffers, in binding order
}

// dynCase is a sequence of launches over buffers and what the output must
// hold after it.
type dynCase struct {
	name    string
	needs   shaders.Feature
	buffers [][]uint32 // initial contents, as words
	steps   []dynStep
	out     int       // the buffer holding the result
	want    []float64 // the leading elements of out; the rest keep their initial words
	// tol is the allowed distance from want[i]; nil asks for the float32
	// of want[i], bit for bit.
	tol func(i int) float64
}

// buffer adds a buffer to the case and returns its index.
func (c *dynCase) buffer(words []uint32) int {
	c.buffers = append(c.buffers, words)
	return len(c.buffers) - 1
}

// step appends a launch.
func (c *dynCase) step(kernel string, groups [3]uint32, scalars []uint32, args ...int) {
	c.steps = append(c.steps, dynStep{kernel: kernel, scalars: scalars, groups: groups, args: args})
}

// reduce appends the passes with which Sum reduces n values of src into
// out with kernel sum, whose groups sum span values each, each pass
// writing its partials to a new buffer; the first pass's groups are sized
// for dispatch >= n values, the groups of an indirect dispatch sized for
// more than the current length.
func (c *dynCase) reduce(dev *Device, sum string, span, src, n, dispatch, out int) {
	for n > span {
		partials := c.buffer(dynSentinels(int(ceilDiv(dispatch, span))))
		c.step(sum, dev.groups1D(dispatch, uint32(span)), []uint32{uint32(n)}, src, partials)
		src, n = partials, int(ceilDiv(n, span))
		dispatch = n
	}
	c.step(sum, [3]uint32{1, 1, 1}, []uint32{uint32(n)}, src, out)
}

func dynSentinels(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = dynSentinel
	}
	return out
}

func dynWords(xs []float32) []uint32 {
	out := make([]uint32, len(xs))
	for i, x := range xs {
		out[i] = math.Float32bits(x)
	}
	return out
}

// dynSizes are the vector shapes: one element; lengths that are not a
// multiple of 256 in buffers that hold more; and a launch whose groups
// cover the whole capacity while the length is smaller, as an indirect
// dispatch sized for more would.
var dynSizes = []struct{ n, capacity, dispatch int }{
	{1, 1, 1},
	{1000, 1300, 1000},
	{4099, 4116, 4099},
	{1000, 1300, 1300},
}

// dynReductionSizes add a three-pass reduction (70000 > 256²).
var dynReductionSizes = append(dynSizes[:len(dynSizes):len(dynSizes)], struct{ n, capacity, dispatch int }{70000, 70300, 70000})

func dynVectorCases(dev *Device) []dynCase {
	var cases []dynCase
	for _, sz := range dynSizes {
		n, capacity := sz.n, sz.capacity
		label := fmt.Sprintf("n=%d,capacity=%d,groups-for=%d", n, capacity, sz.dispatch)
		groups := dev.groups1D(sz.dispatch, 256)
		r := rng(90, n, capacity, sz.dispatch)
		xs, ys := randFloats(r, capacity, -4, 4), randFloats(r, capacity, 0.5, 2)
		a := -2 + 4*r.Float32()

		fill := dynCase{name: "fill/" + label, out: 0}
		fill.buffer(dynSentinels(capacity))
		fill.step("fill", groups, []uint32{math.Float32bits(a), uint32(n)}, 0)
		for range n {
			fill.want = append(fill.want, float64(a))
		}
		cases = append(cases, fill)

		cp := dynCase{name: "copy/" + label, out: 1}
		cp.step("copy", groups, []uint32{uint32(n)}, cp.buffer(dynWords(xs)), cp.buffer(dynSentinels(capacity)))
		for _, x := range xs[:n] {
			cp.want = append(cp.want, float64(x))
		}
		cases = append(cases, cp)

		axpy := dynCase{name: "axpy/" + label, out: 1}
		axpy.step("axpy", groups, []uint32{math.Float32bits(a), uint32(n)}, axpy.buffer(dynWords(xs)), axpy.buffer(dynWords(ys)))
		axpyMag := make([]float64, n)
		for i := range n {
			axpy.want = append(axpy.want, float64(a)*float64(xs[i])+float64(ys[i]))
			axpyMag[i] = math.Abs(float64(a)*float64(xs[i])) + math.Abs(float64(ys[i]))
		}
		axpy.tol = func(i int) float64 { return ulps(2, axpyMag[i]) } // a fused or a separate multiply-add
		cases = append(cases, axpy)

		scale := dynCase{name: "scale/" + label, out: 1}
		scale.step("scale", groups, []uint32{math.Float32bits(a), uint32(n)}, scale.buffer(dynWords(xs)), scale.buffer(dynSentinels(capacity)))
		for i := range n {
			scale.want = append(scale.want, float64(a)*float64(xs[i]))
		}
		scale.tol = func(i int) float64 { return ulps(1, math.Abs(scale.want[i])) }
		cases = append(cases, scale)

		for _, op := range []struct {
			name string
			f    func(x, y float64) float64
			ulp  float64
		}{
			{"add", func(x, y float64) float64 { return x + y }, 1},
			{"sub", func(x, y float64) float64 { return x - y }, 1},
			{"mul", func(x, y float64) float64 { return x * y }, 1},
			{"div", func(x, y float64) float64 { return x / y }, 3}, // Vulkan allows 2.5 ULP
		} {
			c := dynCase{name: op.name + "/" + label, out: 2}
			c.step(op.name, groups, []uint32{uint32(n)}, c.buffer(dynWords(xs)), c.buffer(dynWords(ys)), c.buffer(dynSentinels(capacity)))
			mag := make([]float64, n)
			for i := range n {
				x, y := float64(xs[i]), float64(ys[i])
				c.want = append(c.want, op.f(x, y))
				mag[i] = math.Max(math.Abs(op.f(x, y)), math.Max(math.Abs(x), math.Abs(y)))
			}
			c.tol = func(i int) float64 { return ulps(op.ulp, mag[i]) }
			cases = append(cases, c)
		}
	}
	// The same cases on the wide variants (eight elements per invocation
	// as 64-bit words, the same groups), which CPU drivers run.
	for _, c := range cases[:len(cases):len(cases)] {
		wide := c
		wide.name, wide.needs = "wide:"+c.name, shaders.FeatureInt64
		wide.steps = append([]dynStep(nil), c.steps...)
		for i := range wide.steps {
			name, ok := shaders.Wide(wide.steps[i].kernel)
			if !ok {
				panic(wide.steps[i].kernel + " has no wide variant")
			}
			wide.steps[i].kernel = name
		}
		cases = append(cases, wide)
	}
	return cases
}

func dynReductionCases(dev *Device) []dynCase {
	var cases []dynCase
	for _, sz := range dynReductionSizes {
		n, capacity := sz.n, sz.capacity
		label := fmt.Sprintf("n=%d,capacity=%d,groups-for=%d", n, capacity, sz.dispatch)
		r := rng(91, n, capacity, sz.dispatch)
		xs, ys := randFloats(r, capacity, -1, 1), randFloats(r, capacity, -1, 1)
		// A tree (or any ordered) float32 sum of n terms is off by at most
		// about log2(n)+1 roundings of the sum of magnitudes; allow 4x that.
		depth := math.Ceil(math.Log2(float64(n))) + 1

		var sum, sumMag float64
		for _, x := range xs[:n] {
			sum += float64(x)
			sumMag += math.Abs(float64(x))
		}
		for _, kernel := range []string{"sum", "sum_subgroup", "sum_wide"} {
			c := dynCase{name: kernel + "/" + label, out: 1, want: []float64{sum}, needs: kernelNeeds(kernel)}
			src := c.buffer(dynWords(xs))
			c.buffer(dynSentinels(1))
			c.reduce(dev, kernel, spanOf(kernel), src, n, sz.dispatch, 1)
			c.tol = func(int) float64 { return ulps(4*depth, sumMag) }
			cases = append(cases, c)
		}

		var dot, dotMag float64
		for i := range n {
			p := float64(xs[i]) * float64(ys[i])
			dot += p
			dotMag += math.Abs(p)
		}
		for _, kernel := range []string{"dot", "dot_subgroup", "dot_wide"} {
			c := dynCase{name: kernel + "/" + label, want: []float64{dot}, needs: kernelNeeds(kernel)}
			x, y := c.buffer(dynWords(xs)), c.buffer(dynWords(ys))
			c.out = c.buffer(dynSentinels(1))
			if span := spanOf(kernel); n <= span {
				c.step(kernel, [3]uint32{1, 1, 1}, []uint32{uint32(n)}, x, y, c.out)
			} else {
				partials := c.buffer(dynSentinels(int(ceilDiv(sz.dispatch, span))))
				c.step(kernel, dev.groups1D(sz.dispatch, uint32(span)), []uint32{uint32(n)}, x, y, partials)
				c.reduce(dev, "sum", 256, partials, int(ceilDiv(n, span)), int(ceilDiv(n, span)), c.out)
			}
			c.tol = func(int) float64 { return ulps(4*(depth+1), dotMag) }
			cases = append(cases, c)
		}
	}
	return cases
}

// needsSubgroups and needsInt64 say what a kernel's feature asks of the
// device.
func needsSubgroups(f shaders.Feature) bool {
	return f == shaders.FeatureSubgroupArithmetic || f == shaders.FeatureSubgroupArithmeticInt64
}

func needsInt64(f shaders.Feature) bool {
	return f == shaders.FeatureInt64 || f == shaders.FeatureSubgroupArithmeticInt64
}

// kernelNeeds is the device feature the catalogue kernel name needs.
func kernelNeeds(name string) shaders.Feature {
	k, err := shaders.Get(name)
	if err != nil {
		panic(err)
	}
	return k.Needs
}

// spanOf is the elements one group of the 1-D catalogue kernel name
// covers at its own workgroup size, which LoadKernel builds it with.
func spanOf(name string) int {
	k, err := shaders.Get(name)
	if err != nil {
		panic(err)
	}
	return int(k.Span(k.LocalSize[0]))
}

func dynMatrixCases(dev *Device) []dynCase {
	var cases []dynCase
	// M x N x K; A and C hold capRows rows and the groups cover
	// dispatchRows of them. N = 64 takes matmul's vec4 path, 53 its scalar
	// one.
	// matmul_wide and matmul_texel (N and K multiples of 8; tiles of 128
	// rows by 256 columns): one octet, rows past a tile, columns past one.
	for _, sh := range []struct {
		kernel                         string
		m, n, k, capRows, dispatchRows int
		tile                           [2]int
	}{
		{"matmul", 1, 1, 1, 1, 1, [2]int{64, 64}},
		{"matmul", 37, 53, 29, 37, 37, [2]int{64, 64}},
		{"matmul", 20, 64, 16, 90, 90, [2]int{64, 64}},
		{"matmul_wide", 1, 8, 8, 1, 1, [2]int{256, 128}},
		{"matmul_wide", 37, 72, 24, 37, 37, [2]int{256, 128}},
		{"matmul_wide", 20, 264, 16, 150, 150, [2]int{256, 128}},
		{"matmul_texel", 1, 8, 8, 1, 1, [2]int{256, 128}},
		{"matmul_texel", 37, 72, 24, 37, 37, [2]int{256, 128}},
		{"matmul_texel", 20, 264, 16, 150, 150, [2]int{256, 128}},
	} {
		m, n, k := sh.m, sh.n, sh.k
		r := rng(92, m, n, k, sh.capRows)
		as, bs := randFloats(r, sh.capRows*k, -1, 1), randFloats(r, k*n, -1, 1)
		c := dynCase{name: fmt.Sprintf("%s/%dx%dx%d,capacity-rows=%d", sh.kernel, m, n, k, sh.capRows), out: 2}
		c.step(sh.kernel, [3]uint32{ceilDiv(n, sh.tile[0]), ceilDiv(sh.dispatchRows, sh.tile[1]), 1}, []uint32{uint32(m), uint32(n), uint32(k)},
			c.buffer(dynWords(as)), c.buffer(dynWords(bs)), c.buffer(dynSentinels(sh.capRows*n)))
		c.want = make([]float64, m*n)
		mag := make([]float64, m*n)
		for i := range m {
			for p := range k {
				for j := range n {
					prod := float64(as[i*k+p]) * float64(bs[p*n+j])
					c.want[i*n+j] += prod
					mag[i*n+j] += math.Abs(prod)
				}
			}
		}
		// Sequential accumulation over k: up to k+1 roundings.
		c.tol = func(i int) float64 { return ulps(float64(k+1), mag[i]) + 1e-30 }
		cases = append(cases, c)
	}

	// rows x cols; the buffers hold capRows rows and the groups cover
	// dispatchRows of them (one group per row).
	for _, sh := range []struct{ rows, cols, capRows, dispatchRows int }{
		{1, 1, 1, 1},
		{37, 53, 37, 37},
		{2, 257, 2, 2},
		{3, 300, 5, 5},
		{4, 64, 4, 4},
	} {
		for _, kernel := range []string{"softmax", "softmax_subgroup"} {
			rows, cols := sh.rows, sh.cols
			xs := randFloats(rng(93, rows, cols, sh.capRows), sh.capRows*cols, -8, 8)
			c := dynCase{name: fmt.Sprintf("%s/%dx%d,capacity-rows=%d", kernel, rows, cols, sh.capRows), out: 1}
			if kernel == "softmax_subgroup" {
				c.needs = shaders.FeatureSubgroupArithmetic
			}
			c.step(kernel, dev.groups1D(sh.dispatchRows, 1), []uint32{uint32(rows), uint32(cols)},
				c.buffer(dynWords(xs)), c.buffer(dynSentinels(sh.capRows*cols)))
			c.want = make([]float64, rows*cols)
			for i := range rows {
				row := xs[i*cols : (i+1)*cols]
				mx := math.Inf(-1)
				for _, v := range row {
					mx = math.Max(mx, float64(v))
				}
				var s float64
				for j, v := range row {
					c.want[i*cols+j] = math.Exp(float64(v) - mx)
					s += c.want[i*cols+j]
				}
				for j := range row {
					c.want[i*cols+j] /= s
				}
			}
			// exp is allowed 3+2|x| ULP in Vulkan; |x| <= 16 here, plus the
			// row sum's roundings.
			c.tol = func(i int) float64 { return ulps(64, c.want[i]) + 1e-12 }
			cases = append(cases, c)
		}
	}
	return cases
}

// openDynHost opens the public API on the pure-Go device, whose kernels
// are the Go references of the catalogue (hostdev.Builtins), and checks at
// cleanup that it leaked nothing and saw no misuse.
func openDynHost(t *testing.T) *Device {
	t.Helper()
	dev, err := Open(withRecorderDevice(func() (recorder.Device, error) { return hostdev.New(hostdev.Options{}), nil }))
	require.NoError(t, err)
	t.Cleanup(func() { closeAndCheck(t, dev) })
	return dev
}

// dynKernels loads catalogue kernels on one device through LoadKernel,
// once each, deriving their descriptions from the modules.
type dynKernels struct {
	dev    *Device
	loaded map[string]*Kernel
}

func (ks *dynKernels) get(t *testing.T, name string, dynamic bool) *Kernel {
	t.Helper()
	sk, err := shaders.Get(name)
	if dynamic {
		sk, err = shaders.Dynamic(name)
	}
	require.NoError(t, err)
	if k, ok := ks.loaded[sk.Name]; ok {
		return k
	}
	if slices.ContainsFunc(sk.Bindings, func(b shaders.Binding) bool { return b.Texel }) {
		// User kernels bind storage buffers only: the device's own build,
		// with the catalogue's geometry, which these cases' groups follow.
		k, err := ks.dev.builtin(sk.Name)
		require.NoError(t, err)
		require.Equal(t, sk.LocalSize, k.local, "%s: the cases' group counts assume the default geometry", sk.Name)
		ks.loaded[sk.Name] = k
		return k
	}
	k, err := ks.dev.LoadKernel(KernelSpec{Name: sk.Name, SPIRV: sk.SPIRV})
	require.NoError(t, err)
	spec := k.Spec()
	require.Len(t, spec.Bindings, len(sk.Bindings), sk.Name)
	require.Equal(t, sk.PushSize, spec.PushSize, sk.Name)
	ks.loaded[sk.Name] = k
	return k
}

// run performs a case's launches with the static kernels or their
// variants and returns every buffer's final contents.
func (ks *dynKernels) run(t *testing.T, c dynCase, dynamic bool) [][]uint32 {
	t.Helper()
	dev, s := ks.dev, ks.dev.Stream()
	// Buffers hold float32 (a uint binding takes them as raw words), so
	// every kernel's binding accepts them; contents are compared as bits.
	bufs := make([]*Buffer[float32], len(c.buffers))
	for i, words := range c.buffers {
		floats := make([]float32, len(words))
		for j, w := range words {
			floats[j] = math.Float32frombits(w)
		}
		bufs[i] = upload(t, dev, floats)
	}
	for _, st := range c.steps {
		k := ks.get(t, st.kernel, dynamic)
		args := make([]Arg, 0, len(st.args)+len(st.scalars))
		for _, i := range st.args {
			args = append(args, bufs[i])
		}
		var push []byte
		if dynamic {
			v, err := shaders.Dynamic(st.kernel)
			require.NoError(t, err)
			require.Len(t, v.Scalars, len(st.scalars))
			for i, sc := range v.Scalars {
				require.Equal(t, len(args), v.ScalarBinding(i))
				if sc.Float {
					args = append(args, upload(t, dev, []float32{math.Float32frombits(st.scalars[i])}))
				} else {
					args = append(args, upload(t, dev, []uint32{st.scalars[i]}))
				}
			}
		} else {
			for _, w := range st.scalars {
				push = binary.LittleEndian.AppendUint32(push, w)
			}
		}
		require.NoError(t, k.Launch(s, st.groups, push, args...), "%s (dynamic %v)", st.kernel, dynamic)
	}
	out := make([][]uint32, len(bufs))
	for i, b := range bufs {
		for _, f := range readAll(t, b) {
			out[i] = append(out[i], math.Float32bits(f))
		}
	}
	return out
}

// checkDynResult compares a case's output with its reference on the
// leading elements and with its initial words past them.
func checkDynResult(t *testing.T, c dynCase, got [][]uint32) {
	t.Helper()
	out := got[c.out]
	require.Len(t, out, len(c.buffers[c.out]))
	values := make([]float32, len(c.want))
	for i := range values {
		values[i] = math.Float32frombits(out[i])
	}
	if c.tol == nil {
		want := make([]float32, len(c.want))
		for i, w := range c.want {
			want[i] = float32(w)
		}
		requireSame(t, want, values)
	} else {
		requireClose(t, c.want, values, c.tol)
	}
	requireSame(t, c.buffers[c.out][len(c.want):], out[len(c.want):])
}

func TestDynKernelsMatchStaticKernels(t *testing.T) {
	vk := openTest(t, WithSyncValidation(syncValidation()))
	host := openDynHost(t)
	sg := vk.Info().Subgroup
	subgroups := sg.Arithmetic && sg.Size > 0 && 256%sg.Size == 0
	devices := []struct {
		name string
		ks   *dynKernels
	}{
		{"lavapipe", &dynKernels{dev: vk, loaded: map[string]*Kernel{}}},
		{"hostdev", &dynKernels{dev: host, loaded: map[string]*Kernel{}}},
	}
	var cases []dynCase
	cases = append(cases, dynVectorCases(vk)...)
	cases = append(cases, dynReductionCases(vk)...)
	cases = append(cases, dynMatrixCases(vk)...)
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if needsSubgroups(c.needs) && !subgroups {
				t.Skip("the device has no subgroup arithmetic for a 256-wide workgroup")
			}
			if needsInt64(c.needs) && !vk.Info().Features.Has(FeatureInt64) {
				t.Skip("the device has no shaderInt64")
			}
			for _, d := range devices {
				static := d.ks.run(t, c, false)
				dynamic := d.ks.run(t, c, true)
				for i := range c.buffers {
					requireSame(t, static[i], dynamic[i])
				}
				checkDynResult(t, c, dynamic)
			}
			for _, st := range c.steps {
				covered[st.kernel] = true
			}
		})
	}
	// Every variant ran on both devices (sum_subgroup where lavapipe has it).
	for _, k := range shaders.All() {
		if typedKernel(k.DynamicOf) {
			continue // TestTypedKernelVariantsMatchStatic covers the Float16 and float64 kernels
		}
		runs := (!needsSubgroups(k.Needs) || subgroups) && (!needsInt64(k.Needs) || vk.Info().Features.Has(FeatureInt64))
		if k.DynamicOf != "" && runs {
			require.True(t, covered[k.DynamicOf], "%s has no case", k.Name)
		}
	}
}

// The device values of a dynamic reduction's passes are ceil(n/div), div
// the product of the earlier passes' spans, while each pass's own groups
// write ceil(count/span) partials of the count before it: the two agree
// only because ceil(ceil(n/a)/b) = ceil(n/(a*b)) for every n and spans, mixed
// as a Float16 sum mixes them (256, then the wide 16384). Checked here
// against passes computed one at a time, for random and edge lengths.
func TestPartialCountsOfMixedSpansCompose(t *testing.T) {
	r := rng(97)
	spans := []uint64{256, 16384, 64, 8, 1}
	lengths := []uint32{1, 2, 255, 256, 257, 16383, 16384, 16385, 1<<22 + 1, 1<<32 - 1}
	for range 2000 {
		lengths = append(lengths, uint32(r.Uint64()>>uint(r.IntN(32)+32)))
	}
	for _, n := range lengths {
		n = max(n, 1)
		for range 4 {
			count, div := uint64(n), uint64(1)
			for pass := 0; pass < 4; pass++ {
				require.Equal(t, count, divide(n, div), "n=%d after spans dividing %d", n, div)
				span := spans[r.IntN(len(spans))]
				count = (count + span - 1) / span
				div *= span
			}
		}
	}
	require.Equal(t, uint64(5), divide(70000, 16384))
	require.Equal(t, uint64(70000), divide(70000, 0), "a div of 0 is the length itself")
}
