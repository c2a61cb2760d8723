package vkc

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// Features is a set of optional device features: what element types other
// than 32 bits need, and what a kernel module's capabilities ask for. Open
// enables every one the device offers (unless WithoutFeatures leaves it
// out), and DeviceInfo.Features reports the set: listed by Devices, what
// the device offers; of an open Device, what is enabled on it.
type Features uint32

// The optional features, each named after the Vulkan feature it enables.
const (
	FeatureFloat16             Features = 1 << iota // shaderFloat16: 16-bit float arithmetic in kernels
	FeatureFloat64                                  // shaderFloat64: 64-bit float arithmetic
	FeatureInt8                                     // shaderInt8: 8-bit integer arithmetic
	FeatureInt16                                    // shaderInt16: 16-bit integer arithmetic
	FeatureInt64                                    // shaderInt64: 64-bit integer arithmetic
	FeatureStorage8                                 // storageBuffer8BitAccess: 8-bit loads and stores in storage buffers
	FeatureStorage16                                // storageBuffer16BitAccess: 16-bit loads and stores in storage buffers
	FeatureUniformAndStorage8                       // uniformAndStorageBuffer8BitAccess
	FeatureUniformAndStorage16                      // uniformAndStorageBuffer16BitAccess
	FeatureIntegerDotProduct                        // shaderIntegerDotProduct: OpSDot and its kin (SPV_KHR_integer_dot_product) in kernels
	FeatureCooperativeMatrix                        // cooperativeMatrix: cooperative-matrix types and multiply-adds (SPV_KHR_cooperative_matrix) in kernels, the configurations of DeviceInfo.CooperativeMatrices
	FeatureVulkanMemoryModel                        // vulkanMemoryModel and vulkanMemoryModelDeviceScope: modules in the Vulkan memory model, as every module with cooperative matrices is
)

// featureNames are the Vulkan names of the features, by bit.
var featureNames = [...]string{"shaderFloat16", "shaderFloat64", "shaderInt8", "shaderInt16", "shaderInt64",
	"storageBuffer8BitAccess", "storageBuffer16BitAccess",
	"uniformAndStorageBuffer8BitAccess", "uniformAndStorageBuffer16BitAccess", "shaderIntegerDotProduct",
	"cooperativeMatrix", "vulkanMemoryModel"}

// allFeatures is every feature vkc knows.
const allFeatures = Features(1)<<len(featureNames) - 1

// Has reports whether every feature of want is in f.
func (f Features) Has(want Features) bool { return f&want == want }

// String lists the features by their Vulkan names ("none" for the empty set).
func (f Features) String() string {
	if f == 0 {
		return "none"
	}
	var names []string
	for rest := f; rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros32(uint32(rest))
		if i < len(featureNames) {
			names = append(names, featureNames[i])
		} else {
			names = append(names, fmt.Sprintf("Features(1<<%d)", i))
		}
	}
	return strings.Join(names, ", ")
}

// WithoutFeatures leaves features out of the device Open creates even
// where it offers them, so a program (or a test) sees the device as one
// that lacks them: buffers of the element types and modules that need
// them are refused with ErrUnsupported.
func WithoutFeatures(f Features) Option {
	return func(c *config) { c.without |= f }
}

// unsupported is the error for a request that needs features the device
// lacks; it names them.
func (d *Device) unsupported(what string, need Features) error {
	if missing := need &^ d.info.Features; missing != 0 {
		return fmt.Errorf("%w: %s needs %s, which device %q does not have enabled", ErrUnsupported, what, missing, d.info.Name)
	}
	return nil
}

// featuresOf is the public form of the recorder's feature set (the same bits).
func featuresOf(f recorder.Features) Features { return Features(f) & allFeatures }

// capabilityFeatures is the feature each SPIR-V capability needs; a
// capability mapped to 0 needs a feature vkc never enables.
var capabilityFeatures = map[shaders.Capability]Features{
	shaders.CapabilityFloat16:                            FeatureFloat16,
	shaders.CapabilityFloat64:                            FeatureFloat64,
	shaders.CapabilityInt64:                              FeatureInt64,
	shaders.CapabilityInt16:                              FeatureInt16,
	shaders.CapabilityInt8:                               FeatureInt8,
	shaders.CapabilityStorageBuffer16BitAccess:           FeatureStorage16,
	shaders.CapabilityUniformAndStorageBuffer16BitAccess: FeatureUniformAndStorage16,
	shaders.CapabilityStorageBuffer8BitAccess:            FeatureStorage8,
	shaders.CapabilityUniformAndStorageBuffer8BitAccess:  FeatureUniformAndStorage8,
	shaders.CapabilityInt64Atomics:                       0, // shaderBufferInt64Atomics
	shaders.CapabilityStoragePushConstant16:              0,
	shaders.CapabilityStorageInputOutput16:               0,
	shaders.CapabilityStoragePushConstant8:               0,
	shaders.CapabilityVulkanMemoryModel:                  FeatureVulkanMemoryModel,
	shaders.CapabilityCooperativeMatrixNV:                0, // VK_NV_cooperative_matrix's cooperativeMatrix
	shaders.CapabilityCooperativeMatrixKHR:               FeatureCooperativeMatrix,
	shaders.CapabilityAtomicFloat32MinMaxEXT:             0, // shaderBufferFloat32AtomicMinMax
	shaders.CapabilityAtomicFloat64MinMaxEXT:             0,
	shaders.CapabilityAtomicFloat16MinMaxEXT:             0,
	shaders.CapabilityAtomicFloat32AddEXT:                0, // shaderBufferFloat32AtomicAdd
	shaders.CapabilityAtomicFloat64AddEXT:                0,
	shaders.CapabilityAtomicFloat16AddEXT:                0,
	shaders.CapabilityDotProductInputAll:                 FeatureIntegerDotProduct,
	shaders.CapabilityDotProductInput4x8Bit:              FeatureIntegerDotProduct,
	shaders.CapabilityDotProductInput4x8BitPacked:        FeatureIntegerDotProduct,
	shaders.CapabilityDotProduct:                         FeatureIntegerDotProduct,
}

// CooperativeMatrix is one configuration of cooperative-matrix
// multiply-add a device runs (VkCooperativeMatrixPropertiesKHR): an M x K
// matrix of A times a K x N one of B, plus an M x N one of C, into an
// M x N result, each of the component type given, shared among the
// invocations of Scope. A kernel's coopmat types must match one of them.
type CooperativeMatrix struct {
	M, N, K         uint32
	A, B, C, Result ComponentType
	// SaturatingAddition: integer sums saturate instead of wrapping.
	SaturatingAddition bool
	Scope              Scope
}

// String is the configuration as "16x16x16 float16·float16+float32→float32 (subgroup)".
func (m CooperativeMatrix) String() string {
	return fmt.Sprintf("%dx%dx%d %v·%v+%v→%v (%v)", m.M, m.N, m.K, m.A, m.B, m.C, m.Result, m.Scope)
}

// ComponentType is a cooperative matrix's element type
// (VkComponentTypeKHR's values).
type ComponentType uint32

// The component types.
const (
	ComponentFloat16 ComponentType = 0
	ComponentFloat32 ComponentType = 1
	ComponentFloat64 ComponentType = 2
	ComponentSint8   ComponentType = 3
	ComponentSint16  ComponentType = 4
	ComponentSint32  ComponentType = 5
	ComponentSint64  ComponentType = 6
	ComponentUint8   ComponentType = 7
	ComponentUint16  ComponentType = 8
	ComponentUint32  ComponentType = 9
	ComponentUint64  ComponentType = 10
)

// String is the type's name ("float16"), or its number for a type vkc
// does not know.
func (t ComponentType) String() string { return recorder.ComponentType(t).String() }

// Scope is the set of invocations sharing a cooperative matrix
// (VkScopeKHR's values): GLSL's gl_ScopeSubgroup is ScopeSubgroup.
type Scope uint32

// The scopes.
const (
	ScopeDevice      Scope = 1
	ScopeWorkgroup   Scope = 2
	ScopeSubgroup    Scope = 3
	ScopeQueueFamily Scope = 5
)

// String is the scope's name, or its number.
func (s Scope) String() string { return recorder.Scope(s).String() }

// checkCapabilities refuses a module that declares a capability needing
// a feature the device does not have enabled, naming both, before the
// module reaches the driver (which may crash on it: VUID-VkShaderModuleCreateInfo-pCode-08740).
func (d *Device) checkCapabilities(name string, code []byte) error {
	caps, err := shaders.Capabilities(code)
	if err != nil {
		return publicOp("kernel "+strconv.Quote(name), err)
	}
	for _, c := range caps {
		need, known := capabilityFeatures[c]
		if !known {
			continue
		}
		if need == 0 {
			return fmt.Errorf("%w: kernel %q declares capability %v, whose device feature vkc does not enable", ErrUnsupported, name, c)
		}
		if err := d.unsupported(fmt.Sprintf("kernel %q (capability %v)", name, c), need); err != nil {
			return err
		}
	}
	return nil
}

// checkCooperativeMatrices refuses a module whose cooperative matrix
// types, under the specialization the kernel is built with, are not among
// the device's configurations: each type's component type, scope and
// sizes must be those of A, of B, or of C or the result in one of
// DeviceInfo.CooperativeMatrices
// (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-08974), and a driver
// given another may crash. Without FeatureCooperativeMatrix the
// capability check has refused any such module already.
func (d *Device) checkCooperativeMatrices(spec KernelSpec, constants map[uint32]uint32) error {
	if !d.info.Features.Has(FeatureCooperativeMatrix) {
		return nil
	}
	types, err := shaders.CooperativeMatrixTypes(spec.SPIRV, constants)
	if err != nil {
		return public(fmt.Errorf("vkc: kernel %q: reading its cooperative matrices: %w", spec.Name, err))
	}
	for _, t := range types {
		if !runsCooperativeMatrix(d.info.CooperativeMatrices, t) {
			return fmt.Errorf("%w: kernel %q: cooperative matrix %v is in none of device %q's configurations %v",
				ErrUnsupported, spec.Name, t, d.info.Name, d.info.CooperativeMatrices)
		}
	}
	return nil
}

// runsCooperativeMatrix reports whether one of configs has t: its scope,
// and its sizes and component type in t's use.
func runsCooperativeMatrix(configs []CooperativeMatrix, t shaders.CooperativeMatrixType) bool {
	comp, ok := componentOf(t)
	if !ok {
		return false
	}
	for _, c := range configs {
		if uint32(c.Scope) != t.Scope {
			continue
		}
		switch t.Use {
		case shaders.UseMatrixA:
			ok = c.M == t.Rows && c.K == t.Columns && c.A == comp
		case shaders.UseMatrixB:
			ok = c.K == t.Rows && c.N == t.Columns && c.B == comp
		case shaders.UseAccumulator:
			ok = c.M == t.Rows && c.N == t.Columns && (c.C == comp || c.Result == comp)
		default:
			ok = false
		}
		if ok {
			return true
		}
	}
	return false
}

// componentOf is the ComponentType of t's components.
func componentOf(t shaders.CooperativeMatrixType) (ComponentType, bool) {
	at := map[uint32]int{8: 0, 16: 1, 32: 2, 64: 3}
	i, ok := at[t.Bits]
	switch {
	case !ok:
		return 0, false
	case t.Float:
		if t.Bits == 8 {
			return 0, false
		}
		return [...]ComponentType{0, ComponentFloat16, ComponentFloat32, ComponentFloat64}[i], true
	case t.Signed:
		return [...]ComponentType{ComponentSint8, ComponentSint16, ComponentSint32, ComponentSint64}[i], true
	}
	return [...]ComponentType{ComponentUint8, ComponentUint16, ComponentUint32, ComponentUint64}[i], true
}
