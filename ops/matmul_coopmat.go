package ops

import (
	"github.com/vkcompute/vkc"
)

// The cooperative-matrix variant (variantCoopMat): matmul_coopmat runs
// the device's cooperative matrices (VK_KHR_cooperative_matrix: the
// tensor cores and matrix units of GPUs) on blocks of A and B that each
// workgroup stages in shared memory. The staging reads A and B through
// their strides and zero-fills past the edges, so the variant takes any
// layout, transposes and broadcast batches included, and any M, N and K;
// the multiply-adds run on whole tiles of the device's configuration.
//
// Inputs are Float16 (float32 where the device lists a float32
// configuration), sums float32, C rounded once: the accuracy of the
// generic kernel's 16-bit build, which also sums in float32. MatmulInt8
// has a build of its own (variantI8CoopMat): int8 inputs, int32 sums,
// exact as its other kernels are.

// Each workgroup is one subgroup and keeps coopBlocks x coopBlocks tiles
// of C, each the configuration's M x N.
const coopBlocks = 2

// coopMaxTile bounds a configuration's sizes vkc uses: the staged blocks
// of a larger one would outgrow the shared memory most devices have.
const coopMaxTile = 64

// coopConfig is the configuration matmul_coopmat is specialized with:
// the subgroup size (its workgroup) and the tile's M, N and K (its
// specialization constants 0 to 3). ok is false where the device has
// none for the element type.
type coopConfig struct {
	ok             bool
	sg, tm, tn, tk int
}

// blockRows and blockCols are the rows and columns of C a workgroup keeps.
func (c coopConfig) blockRows() int { return coopBlocks * c.tm }
func (c coopConfig) blockCols() int { return coopBlocks * c.tn }

// constants are c as matmul_coopmat's specialization constants.
func (c coopConfig) constants() map[uint32]float64 {
	return map[uint32]float64{0: float64(c.sg), 1: float64(c.tm), 2: float64(c.tn), 3: float64(c.tk)}
}

// coopConfigFor picks the configuration matmul_coopmat runs e with on the
// device info describes: subgroup scope, A and B of e's type, C and the
// result float32 (int32 for int8), no saturation, sizes at most coopMaxTile, a subgroup
// that fits a workgroup and staged blocks that fit its shared memory; of
// those, the one with the most multiply-adds per tile (the device lists
// its fastest shapes, and larger tiles reuse each staged element more),
// the first listed on a tie. None without FeatureCooperativeMatrix and
// FeatureVulkanMemoryModel (every module with cooperative matrices
// declares the Vulkan memory model).
func coopConfigFor(info vkc.DeviceInfo, e mmElem) coopConfig {
	if !info.Features.Has(vkc.FeatureCooperativeMatrix | vkc.FeatureVulkanMemoryModel) {
		return coopConfig{}
	}
	var want, sum vkc.ComponentType
	var size int
	switch e {
	case elemF16:
		want, sum, size = vkc.ComponentFloat16, vkc.ComponentFloat32, 2
	case elemF32:
		want, sum, size = vkc.ComponentFloat32, vkc.ComponentFloat32, 4
	case elemI8:
		want, sum, size = vkc.ComponentSint8, vkc.ComponentSint32, 1
	default:
		return coopConfig{}
	}
	sg := int(info.Subgroup.Size)
	if sg < 1 || sg > int(info.Limits.MaxComputeWorkGroupSize[0]) || sg > int(info.Limits.MaxComputeWorkGroupInvocations) {
		return coopConfig{}
	}
	var best coopConfig
	for _, m := range info.CooperativeMatrices {
		if m.Scope != vkc.ScopeSubgroup || m.A != want || m.B != want || m.C != sum ||
			m.Result != sum || m.SaturatingAddition {
			continue
		}
		c := coopConfig{ok: true, sg: sg, tm: int(m.M), tn: int(m.N), tk: int(m.K)}
		if min(c.tm, c.tn, c.tk) < 1 || max(c.tm, c.tn, c.tk) > coopMaxTile {
			continue
		}
		if c.sharedBytes(size) > int(info.Limits.MaxComputeSharedMemorySize) {
			continue
		}
		if !best.ok || c.tm*c.tn*c.tk > best.tm*best.tn*best.tk {
			best = c
		}
	}
	return best
}

// sharedBytes is matmul_coopmat's shared memory with elements of size
// bytes: the staged blocks of A and B, and C's 32-bit block.
func (c coopConfig) sharedBytes(size int) int {
	return (c.blockRows()*c.tk+c.tk*c.blockCols())*size + c.blockRows()*c.blockCols()*4
}

// coopFits reports whether matmul_coopmat can compute p: the device has
// a configuration for p's element type, and the groups fit.
func (p *problem) coopFits() bool {
	inner := 1
	if len(p.batch) > 0 {
		inner = p.batch[len(p.batch)-1]
	}
	return p.coop.fits(p.m, p.n) && inner <= maxGroupsLimit
}

// fits reports whether c's launch over an m x n C has few enough groups.
func (c coopConfig) fits(m, n int) bool {
	return c.ok && ceilDiv(n, c.blockCols()) <= maxGroupsLimit && ceilDiv(m, c.blockRows()) <= maxGroupsLimit
}

// coopIters is matmul_coopmat's loop iterations per invocation: per step
// of K, the staging of A's and B's blocks a subgroup's lanes share, and
// the loads and multiply-adds of its tiles (a CPU driver may lower each
// to loops over the tile, counted at one iteration per row of it); then
// the stores of its tiles and of C's block.
func (p *problem) coopIters() int {
	if !p.coop.ok {
		return p.k
	}
	return p.coop.iters(p.k)
}

// iters is coopIters for a K of k.
func (c coopConfig) iters(k int) int {
	tiles := coopBlocks * coopBlocks
	perStep := ceilDiv(c.blockRows()*c.tk, c.sg) + ceilDiv(c.tk*c.blockCols(), c.sg) + 1 +
		2*coopBlocks*c.tk + tiles*c.tm
	return ceilDiv(k, c.tk)*perStep + tiles*c.tm + ceilDiv(c.blockRows()*c.blockCols(), c.sg) + 1
}

// coopKernel is matmul_coopmat's build for e specialized with cfg,
// loaded on first use. A device with the features may still refuse it,
// or a SPIR-V validator older than cooperative matrices (vkc built
// against SPIRV-Tools before 2023.4): a plan that gets an error here
// drops the variant instead of failing the product, and the refusal is
// kept (kernelWith), so it is asked once.
func coopKernel(dev *vkc.Device, e mmElem, cfg coopConfig) (*vkc.Kernel, error) {
	dk, err := kernelsOf(dev)
	if err != nil {
		return nil, err
	}
	return dk.kernelWith("matmul_coopmat"+e.suffix(), cfg.constants())
}

// groups are c's workgroups over an m x n C and inner matrices.
func (c coopConfig) groups(m, n, inner int) ([3]uint32, error) {
	return groups(ceilDiv(n, c.blockCols()), ceilDiv(m, c.blockRows()), inner)
}

// runCoopMat launches matmul_coopmat (the plan's coopKernel) over group
// z's inner batch axis at batch offsets da, db, dc.
func (p *matmulPlan[T]) runCoopMat(s *vkc.Stream, inner, da, db, dc int) error {
	gr, err := p.coop.groups(p.m, p.n, inner)
	if err != nil {
		return err
	}
	bias, flags := p.biasArg()
	return p.coopKernel.Launch(s, gr, p.wideWords(da, db, dc, flags), p.aBuf, p.bBuf, p.cBuf, bias)
}
