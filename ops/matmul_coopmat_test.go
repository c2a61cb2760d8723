package ops

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// coopDevice is a device description with the features cooperative
// matrices need, a subgroup of 32, and the configurations given.
func coopDevice(configs ...vkc.CooperativeMatrix) vkc.DeviceInfo {
	var info vkc.DeviceInfo
	info.Features = vkc.FeatureCooperativeMatrix | vkc.FeatureVulkanMemoryModel | vkc.FeatureFloat16 | vkc.FeatureStorage16
	info.Subgroup.Size = 32
	info.Limits.MaxComputeWorkGroupSize = [3]uint32{1024, 1024, 64}
	info.Limits.MaxComputeWorkGroupInvocations = 1024
	info.Limits.MaxComputeSharedMemorySize = 48 << 10
	info.CooperativeMatrices = configs
	return info
}

// f16Config is a subgroup configuration of m x n x k with Float16 inputs
// and float32 sums.
func f16Config(m, n, k uint32) vkc.CooperativeMatrix {
	return vkc.CooperativeMatrix{M: m, N: n, K: k, A: vkc.ComponentFloat16, B: vkc.ComponentFloat16,
		C: vkc.ComponentFloat32, Result: vkc.ComponentFloat32, Scope: vkc.ScopeSubgroup}
}

// The configuration matmul_coopmat runs with: one of the element type's,
// summed in float32 on a subgroup, the largest that fits; none where the
// device lacks a feature, a fitting configuration or the element type.
func TestCoopConfigForPicksAFittingConfiguration(t *testing.T) {
	sixteen := f16Config(16, 16, 16)
	workgroup := f16Config(32, 32, 32)
	workgroup.Scope = vkc.ScopeWorkgroup
	f16Sums := f16Config(32, 32, 16)
	f16Sums.C, f16Sums.Result = vkc.ComponentFloat16, vkc.ComponentFloat16
	saturating := f16Config(32, 32, 16)
	saturating.SaturatingAddition = true
	huge := f16Config(128, 128, 16)
	f32 := vkc.CooperativeMatrix{M: 16, N: 16, K: 8, A: vkc.ComponentFloat32, B: vkc.ComponentFloat32,
		C: vkc.ComponentFloat32, Result: vkc.ComponentFloat32, Scope: vkc.ScopeSubgroup}
	i8Sums := vkc.CooperativeMatrix{M: 16, N: 16, K: 32, A: vkc.ComponentSint8, B: vkc.ComponentSint8,
		C: vkc.ComponentSint32, Result: vkc.ComponentSint32, Scope: vkc.ScopeSubgroup}
	i8Saturating := i8Sums
	i8Saturating.K, i8Saturating.SaturatingAddition = 64, true
	noFeature := coopDevice(sixteen)
	noFeature.Features &^= vkc.FeatureVulkanMemoryModel
	noSubgroup := coopDevice(sixteen)
	noSubgroup.Subgroup.Size = 0
	littleShared := coopDevice(sixteen, f16Config(32, 32, 32))
	littleShared.Limits.MaxComputeSharedMemorySize = 8 << 10
	for _, tc := range []struct {
		name string
		info vkc.DeviceInfo
		elem mmElem
		want coopConfig
	}{
		{"the largest of two", coopDevice(sixteen, f16Config(16, 8, 16), f16Config(32, 16, 16)), elemF16, coopConfig{true, 32, 32, 16, 16}},
		{"workgroup scope, float16 sums, saturating and oversized ones left out", coopDevice(workgroup, f16Sums, saturating, huge, sixteen), elemF16, coopConfig{true, 32, 16, 16, 16}},
		{"float32 inputs for float32", coopDevice(sixteen, f32), elemF32, coopConfig{true, 32, 16, 16, 8}},
		{"no float32 configuration", coopDevice(sixteen), elemF32, coopConfig{}},
		{"never float64", coopDevice(sixteen, f32), elemF64, coopConfig{}},
		{"no configuration", coopDevice(), elemF16, coopConfig{}},
		{"without the memory model", noFeature, elemF16, coopConfig{}},
		{"no subgroup size", noSubgroup, elemF16, coopConfig{}},
		{"shared memory for the smaller only", littleShared, elemF16, coopConfig{true, 32, 16, 16, 16}},
		{"int8 into int32 for MatmulInt8", coopDevice(sixteen, i8Sums, i8Saturating), elemI8, coopConfig{true, 32, 16, 16, 32}},
		{"no int8 configuration", coopDevice(sixteen), elemI8, coopConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := coopConfigFor(tc.info, tc.elem)
			require.Equal(t, tc.want, got)
			if got.ok {
				size := map[mmElem]int{elemF16: 2, elemF32: 4, elemI8: 1}[tc.elem]
				require.LessOrEqual(t, got.sharedBytes(size), int(tc.info.Limits.MaxComputeSharedMemorySize))
			}
		})
	}
}

// The variant applies to any layout and size where the device has a
// configuration, and to nothing where it has none; the heuristic takes it
// for large products off CPU drivers.
func TestCoopMatAppliesWhereTheDeviceHasIt(t *testing.T) {
	base := problem{elem: elemF16, m: 100, n: 70, k: 33, a: matrix{row: 1, col: 100}, b: matrix{row: 70, col: 1}}
	with := base
	with.coop = coopConfigFor(coopDevice(f16Config(16, 16, 16)), elemF16)
	require.True(t, with.applies(variantCoopMat), "a transposed A of ragged sizes")
	require.Equal(t, variantCoopMat, with.heuristic(), "a large product on a GPU")
	with.cpu = true
	require.NotEqual(t, variantCoopMat, with.heuristic(), "CPU drivers keep the measured choice")
	require.False(t, base.applies(variantCoopMat), "no configuration")
	dyn := with
	dyn.dynamic = true
	require.False(t, dyn.applies(variantCoopMat), "a dynamic M runs through the _dyn builds only")
	tooMany := with
	tooMany.m = (maxGroupsLimit + 1) * with.coop.blockRows()
	require.False(t, tooMany.applies(variantCoopMat), "more row blocks than groups")
}

// coopMatmulCases are products matmul_coopmat must compute: sizes off
// the tile and block, transposes, broadcast batches, a K shorter than
// one step and one of many, and the epilogue.
var coopMatmulCases = []matmulCase{
	{name: "one element", a: []int{1, 1}, b: []int{1, 1}, c: []int{1, 1}},
	{name: "ragged", a: []int{37, 23}, b: []int{23, 45}, c: []int{37, 45}, bias: 45, act: ActGelu},
	{name: "transposed", a: []int{33, 40}, b: []int{40, 17}, c: []int{33, 17}, aT: true, bT: true, act: ActRelu},
	{name: "blocks", a: []int{64, 96}, b: []int{96, 64}, c: []int{64, 64}, bias: 1, act: ActSilu},
	{name: "long K", a: []int{9, 700}, b: []int{700, 12}, c: []int{9, 12}},
	{name: "batched broadcast B", a: []int{2, 3, 17, 28}, b: []int{28, 36}, c: []int{2, 3, 17, 36}, bias: 36},
	{name: "batched broadcast A", a: []int{1, 7, 10}, b: []int{3, 10, 5}, c: []int{3, 7, 5}, aT: true},
}

// Wherever the device has cooperative matrices for an element type,
// matmul_coopmat computes every case to the reference's tolerance (as
// every other applying variant and the tuned call do): the variant is
// tested on every device that has it, and skipped, saying so, on the
// others. Where this build's SPIR-V validator is older than cooperative
// matrices, the kernel is refused with ErrUnsupported and every case
// still computes, without the variant.
func TestMatmulCooperativeMatricesMatchTheReference(t *testing.T) {
	dev := openMatmulDevice(t)
	info := dev.Info()
	ran := false
	for _, elem := range []mmElem{elemF16, elemF32} {
		cfg := coopConfigFor(info, elem)
		if !cfg.ok {
			t.Logf("%v: no cooperative-matrix configuration on %s (features %v; configurations %v)", elem, info.Name, info.Features, info.CooperativeMatrices)
			continue
		}
		ran = true
		t.Logf("%v: %d x %d x %d tiles, subgroup %d", elem, cfg.tm, cfg.tn, cfg.tk, cfg.sg)
		want := []variant{variantCoopMat}
		if _, err := coopKernel(dev, elem, cfg); err != nil {
			require.ErrorIs(t, err, vkc.ErrUnsupported)
			t.Logf("%v: this build cannot load matmul_coopmat: %v", elem, err)
			want = nil
		}
		for _, tc := range coopMatmulCases {
			tc.wantVariants = want
			t.Run(elem.String()+" "+tc.name, func(t *testing.T) {
				if elem == elemF16 {
					checkMatmul[vkc.Float16](t, dev, tc)
				} else {
					checkMatmul[float32](t, dev, tc)
				}
			})
		}
	}
	if !ran {
		t.Skipf("%s has no cooperative matrices vkc uses", info.Name)
	}
}

// A K as long as matmul_coopmat takes on the device (on a CPU driver the
// longest within its loop budget, by coopIters) sums every term: ones
// of 0.25 times 0.5, exact in Float16 and float32 sums, so a loop cut
// short shows. Every other applying variant and the tuned call run too.
func TestMatmulCoopMatLongKSumsEveryTerm(t *testing.T) {
	dev := openMatmulDevice(t)
	info := dev.Info()
	cfg := coopConfigFor(info, elemF16)
	if !cfg.ok {
		t.Skipf("%s has no Float16 cooperative matrices vkc uses", info.Name)
	}
	if _, err := coopKernel(dev, elemF16, cfg); err != nil {
		t.Skip("this build cannot load matmul_coopmat (TestMatmulCooperativeMatricesMatchTheReference says why)")
	}
	cpu := info.Type == vkc.TypeCPU
	k := 70000
	for ; k > 0; k -= cfg.tk {
		p := problem{elem: elemF16, m: 2, n: 8, k: k, coop: cfg, cpu: cpu}
		if p.applies(variantCoopMat) {
			break
		}
	}
	require.Positive(t, k)
	t.Logf("K of %d (%d loop iterations by coopIters)", k, (&problem{k: k, coop: cfg}).coopIters())
	checkLongK[vkc.Float16](t, dev, 2, 8, k)
}

// Wherever the device has int8 cooperative matrices summed in int32,
// MatmulInt8's i8-coopmat applies to any layout and size and gives the
// exact sums (values over the whole int8 range); elsewhere the test is
// skipped, saying why.
func TestMatmulInt8CooperativeMatricesMatchExactSums(t *testing.T) {
	dev := openMatmulDevice(t)
	info := dev.Info()
	cfg := coopConfigFor(info, elemI8)
	if !cfg.ok {
		t.Skipf("%s has no int8 cooperative matrices vkc uses (configurations %v)", info.Name, info.CooperativeMatrices)
	}
	if _, err := coopKernel(dev, elemI8, cfg); err != nil {
		t.Skip("this build cannot load matmul_coopmat_i8 (TestMatmulCooperativeMatricesMatchTheReference says why)")
	}
	s := dev.Stream()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range []struct {
		m, n, k int
		aT, bT  bool
	}{{1, 1, 1, false, false}, {37, 45, 23, true, false}, {64, 40, 300, false, true}} {
		a, av := int8Operand(t, dev, rng, sh.m, sh.k, sh.aT)
		b, bv := int8Operand(t, dev, rng, sh.k, sh.n, sh.bT)
		cBuf := fresh[int32](t, dev, sh.m*sh.n)
		p, err := planInt8(s, a, b, Of(cBuf, sh.m, sh.n))
		require.NoError(t, err)
		require.True(t, p.applies(variantI8CoopMat), "%+v", sh)
		require.NoError(t, vkc.Fill(s, cBuf, -7))
		require.NoError(t, p.runVariant(s, variantI8CoopMat))
		got, err := cBuf.Read(context.Background())
		require.NoError(t, err)
		for i := range sh.m {
			for j := range sh.n {
				var sum int64
				for q := range sh.k {
					sum += av[i*sh.k+q] * bv[q*sh.n+j]
				}
				require.Equal(t, int32(sum), got[i*sh.n+j], "%+v: C[%d][%d]", sh, i, j)
			}
		}
	}
}
