// Package devinfo describes a compute device in plain values: its name,
// type, vendor, versions, limits, memory heaps and subgroup support.
//
// It is declared once, here, below everything that speaks of a device:
// package vk fills it in from the driver, the recorder sizes its pools and
// checks launches by it, and recorder/hostdev makes one up. It imports
// nothing of the project and no C, so the pure packages can use it. The
// public package keeps its own vkc.DeviceInfo, converted from this one.
package devinfo

import (
	"fmt"
	"math/bits"
	"strings"
)

// DeviceType orders devices for default selection: a discrete GPU beats an
// integrated one, which beats a virtual one, which beats a CPU driver.
type DeviceType uint8

// Device types as Vulkan reports them.
const (
	TypeOther DeviceType = iota
	TypeIntegrated
	TypeDiscrete
	TypeVirtual
	TypeCPU
)

// String names the type as vulkaninfo does, without the prefix.
func (t DeviceType) String() string {
	switch t {
	case TypeIntegrated:
		return "integrated"
	case TypeDiscrete:
		return "discrete"
	case TypeVirtual:
		return "virtual"
	case TypeCPU:
		return "cpu"
	}
	return "other"
}

// Rank is the default-selection preference: higher wins.
func (t DeviceType) Rank() int {
	switch t {
	case TypeDiscrete:
		return 4
	case TypeIntegrated:
		return 3
	case TypeVirtual:
		return 2
	case TypeCPU:
		return 1
	}
	return 0
}

// Limits are the device limits that compute work runs into.
type Limits struct {
	MaxComputeWorkGroupCount        [3]uint32
	MaxComputeWorkGroupSize         [3]uint32
	MaxComputeWorkGroupInvocations  uint32
	MaxComputeSharedMemorySize      uint32
	MaxStorageBufferRange           uint32
	MaxPushConstantsSize            uint32
	MaxMemoryAllocationCount        uint32
	MinStorageBufferOffsetAlignment uint64
	// MinTexelBufferOffsetAlignment and MaxTexelBufferElements bound the
	// ranges a uniform texel binding may view (offset a multiple of the
	// first, at most the second 16-byte texels).
	MinTexelBufferOffsetAlignment uint64
	MaxTexelBufferElements        uint32
	// MaxUniformBufferRange and MinUniformBufferOffsetAlignment bound the
	// ranges a uniform-buffer binding may name.
	MaxUniformBufferRange           uint32
	MinUniformBufferOffsetAlignment uint64
	NonCoherentAtomSize             uint64
	TimestampPeriod                 float32 // nanoseconds per timestamp tick
}

// TexelSize is the bytes of one texel of a uniform texel binding
// (R32G32B32A32_UINT), the only format vkc views buffers as.
const TexelSize = 16

// CheckTexelRange refuses a buffer range no texel view may cover on the
// device: one that is empty or not whole texels, starts off
// MinTexelBufferOffsetAlignment, or holds more than MaxTexelBufferElements
// texels. It is the one statement of the rule, which the Vulkan layer
// enforces, the host device mirrors and the launcher checks before it
// picks a kernel reading texels.
func (l Limits) CheckTexelRange(offset, size uint64) error {
	return l.CheckTexelRangeOf(offset, size, TexelSize)
}

// CheckTexelRangeOf is CheckTexelRange for texels of texel bytes (a
// format's size).
func (l Limits) CheckTexelRangeOf(offset, size, texel uint64) error {
	switch {
	case texel == 0 || size == 0 || size%texel != 0:
		return fmt.Errorf("range of %d bytes is not whole %d-byte texels", size, texel)
	case l.MinTexelBufferOffsetAlignment != 0 && offset%l.MinTexelBufferOffsetAlignment != 0:
		return fmt.Errorf("offset %d is not a multiple of minTexelBufferOffsetAlignment %d", offset, l.MinTexelBufferOffsetAlignment)
	case size/texel > uint64(l.MaxTexelBufferElements):
		return fmt.Errorf("%d texels exceed maxTexelBufferElements %d", size/texel, l.MaxTexelBufferElements)
	}
	return nil
}

// TexelFormat is the format a texel binding views a buffer as. The zero
// value is R32G32B32A32_UINT, what the catalogue's texel kernels read.
type TexelFormat uint8

// The texel formats vkc views buffers as: those Vulkan requires every
// device to support for both uniform and storage texel buffers.
const (
	TexelRGBA32Uint TexelFormat = iota
	TexelR32Float
	TexelR32Uint
	TexelR32Sint
	TexelRGBA32Float
	TexelRGBA32Sint
	TexelRGBA16Float
	// The narrow formats below are for uniform texel buffers only (Vulkan
	// requires them there, not for storage texel buffers).
	TexelR16Float
	TexelR16Uint
	TexelR16Sint
	TexelR8Uint
	TexelR8Sint
)

// Size is the bytes of one texel.
func (f TexelFormat) Size() uint64 {
	switch f {
	case TexelR32Float, TexelR32Uint, TexelR32Sint:
		return 4
	case TexelRGBA16Float:
		return 8
	case TexelR16Float, TexelR16Uint, TexelR16Sint:
		return 2
	case TexelR8Uint, TexelR8Sint:
		return 1
	}
	return 16
}

// String names the format as Vulkan does.
func (f TexelFormat) String() string {
	switch f {
	case TexelRGBA32Uint:
		return "R32G32B32A32_UINT"
	case TexelR32Float:
		return "R32_SFLOAT"
	case TexelR32Uint:
		return "R32_UINT"
	case TexelR32Sint:
		return "R32_SINT"
	case TexelRGBA32Float:
		return "R32G32B32A32_SFLOAT"
	case TexelRGBA32Sint:
		return "R32G32B32A32_SINT"
	case TexelRGBA16Float:
		return "R16G16B16A16_SFLOAT"
	case TexelR16Float:
		return "R16_SFLOAT"
	case TexelR16Uint:
		return "R16_UINT"
	case TexelR16Sint:
		return "R16_SINT"
	case TexelR8Uint:
		return "R8_UINT"
	case TexelR8Sint:
		return "R8_SINT"
	}
	return fmt.Sprintf("TexelFormat(%d)", uint8(f))
}

// MemoryHeap is one heap of the device.
type MemoryHeap struct {
	Size        uint64
	DeviceLocal bool
}

// SubgroupInfo says what subgroup operations compute shaders may use.
type SubgroupInfo struct {
	Size       uint32
	Arithmetic bool // GL_KHR_shader_subgroup_arithmetic in compute
}

// DeviceInfo describes one device.
type DeviceInfo struct {
	Index         int
	Name          string
	Type          DeviceType
	VendorID      uint32
	DeviceID      uint32
	Vendor        string
	DriverVersion string
	APIVersion    string
	Limits        Limits
	Heaps         []MemoryHeap
	Subgroup      SubgroupInfo
	// UnifiedMemory: device-local memory is also host-visible, so reads and
	// writes go through the mapping with no staging copy.
	UnifiedMemory bool
	// PipelineCacheUUID and DriverVersionCode say which pipeline-cache data
	// this driver accepts: data saved by another driver build is not
	// handed to it (internal/pipecache).
	PipelineCacheUUID [16]byte
	DriverVersionCode uint32
	// Features are the optional features the device offers (a list of
	// devices) or, for an open device, the ones enabled on it.
	Features Features
	// CooperativeMatrices are the cooperative-matrix configurations the
	// device runs (VK_KHR_cooperative_matrix), as it lists them; none
	// where it lacks the extension.
	CooperativeMatrices []CooperativeMatrix
}

// CooperativeMatrix is one configuration of cooperative-matrix
// multiply-add a device runs (VkCooperativeMatrixPropertiesKHR): an M x K
// matrix of A times a K x N one of B, plus an M x N one of C, into an
// M x N result, each of the component type given, shared among the
// invocations of Scope.
type CooperativeMatrix struct {
	M, N, K            uint32
	A, B, C, Result    ComponentType
	SaturatingAddition bool // integer sums saturate instead of wrapping
	Scope              Scope
}

// ComponentType is a cooperative matrix's element type
// (VkComponentTypeKHR's values).
type ComponentType uint32

// The component types vkc names; others print as their number.
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

var componentNames = [...]string{"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}

// String is the type's name ("float16"), or its number for one vkc does
// not know.
func (t ComponentType) String() string {
	if int(t) < len(componentNames) {
		return componentNames[t]
	}
	return fmt.Sprintf("ComponentType(%d)", uint32(t))
}

// Scope is the set of invocations sharing a cooperative matrix
// (VkScopeKHR's values).
type Scope uint32

// The scopes.
const (
	ScopeDevice      Scope = 1
	ScopeWorkgroup   Scope = 2
	ScopeSubgroup    Scope = 3
	ScopeQueueFamily Scope = 5
)

// String is the scope's name, or its number.
func (s Scope) String() string {
	switch s {
	case ScopeDevice:
		return "device"
	case ScopeWorkgroup:
		return "workgroup"
	case ScopeSubgroup:
		return "subgroup"
	case ScopeQueueFamily:
		return "queue family"
	}
	return fmt.Sprintf("Scope(%d)", uint32(s))
}

// Features is a set of the optional device features vkc enables when the
// device offers them: what element types other than 32 bits need to be
// stored and computed with, integer dot products, cooperative matrices
// and the Vulkan memory model. The bits are vk's VKC_FEATURE_* (vk checks at
// compile time that they agree).
type Features uint32

// The optional features, by the Vulkan feature each stands for.
const (
	FeatureFloat16             Features = 1 << iota // shaderFloat16
	FeatureFloat64                                  // shaderFloat64
	FeatureInt8                                     // shaderInt8
	FeatureInt16                                    // shaderInt16
	FeatureInt64                                    // shaderInt64
	FeatureStorage8                                 // storageBuffer8BitAccess
	FeatureStorage16                                // storageBuffer16BitAccess
	FeatureUniformAndStorage8                       // uniformAndStorageBuffer8BitAccess
	FeatureUniformAndStorage16                      // uniformAndStorageBuffer16BitAccess
	FeatureIntegerDotProduct                        // shaderIntegerDotProduct
	FeatureCooperativeMatrix                        // cooperativeMatrix (VK_KHR_cooperative_matrix)
	FeatureVulkanMemoryModel                        // vulkanMemoryModel and vulkanMemoryModelDeviceScope
	// AllFeatures is every feature above.
	AllFeatures = FeatureVulkanMemoryModel<<1 - 1
)

// featureNames are the Vulkan names of the features, by bit.
var featureNames = [...]string{"shaderFloat16", "shaderFloat64", "shaderInt8", "shaderInt16", "shaderInt64",
	"storageBuffer8BitAccess", "storageBuffer16BitAccess",
	"uniformAndStorageBuffer8BitAccess", "uniformAndStorageBuffer16BitAccess", "shaderIntegerDotProduct",
	"cooperativeMatrix", "vulkanMemoryModel"}

// String lists the features by their Vulkan names ("none" for the empty
// set), so an error can name what a device lacks.
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
