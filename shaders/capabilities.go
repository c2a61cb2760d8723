package shaders

import "fmt"

// Capability is a SPIR-V capability a module declares (OpCapability): what
// it asks of the device beyond the core of its environment.
type Capability uint32

// The capabilities that need optional device features: those of vkc's
// element types, and some a compute kernel may declare whose features vkc
// does not enable (so that a launcher can refuse them by name), with
// their numbers from the SPIR-V specification.
const (
	CapabilityFloat16                            Capability = 9
	CapabilityFloat64                            Capability = 10
	CapabilityInt64                              Capability = 11
	CapabilityInt64Atomics                       Capability = 12
	CapabilityInt16                              Capability = 22
	CapabilityInt8                               Capability = 39
	CapabilityStorageBuffer16BitAccess           Capability = 4433
	CapabilityUniformAndStorageBuffer16BitAccess Capability = 4434
	CapabilityStoragePushConstant16              Capability = 4435
	CapabilityStorageInputOutput16               Capability = 4436
	CapabilityStorageBuffer8BitAccess            Capability = 4448
	CapabilityUniformAndStorageBuffer8BitAccess  Capability = 4449
	CapabilityStoragePushConstant8               Capability = 4450
	CapabilityVulkanMemoryModel                  Capability = 5345
	CapabilityCooperativeMatrixNV                Capability = 5357
	CapabilityAtomicFloat32MinMaxEXT             Capability = 5612
	CapabilityAtomicFloat64MinMaxEXT             Capability = 5613
	CapabilityAtomicFloat16MinMaxEXT             Capability = 5616
	CapabilityDotProductInputAll                 Capability = 6016
	CapabilityDotProductInput4x8Bit              Capability = 6017
	CapabilityDotProductInput4x8BitPacked        Capability = 6018
	CapabilityDotProduct                         Capability = 6019
	CapabilityAtomicFloat32AddEXT                Capability = 6033
	CapabilityAtomicFloat64AddEXT                Capability = 6034
	CapabilityAtomicFloat16AddEXT                Capability = 6095
	CapabilityCooperativeMatrixKHR               Capability = 6022
)

// capabilityNames name the capabilities above as the specification does.
var capabilityNames = map[Capability]string{
	CapabilityFloat16: "Float16", CapabilityFloat64: "Float64", CapabilityInt64: "Int64",
	CapabilityInt64Atomics: "Int64Atomics", CapabilityInt16: "Int16", CapabilityInt8: "Int8",
	CapabilityStorageBuffer16BitAccess:           "StorageBuffer16BitAccess",
	CapabilityUniformAndStorageBuffer16BitAccess: "UniformAndStorageBuffer16BitAccess",
	CapabilityStoragePushConstant16:              "StoragePushConstant16",
	CapabilityStorageInputOutput16:               "StorageInputOutput16",
	CapabilityStorageBuffer8BitAccess:            "StorageBuffer8BitAccess",
	CapabilityUniformAndStorageBuffer8BitAccess:  "UniformAndStorageBuffer8BitAccess",
	CapabilityStoragePushConstant8:               "StoragePushConstant8",
	CapabilityVulkanMemoryModel:                  "VulkanMemoryModel",
	CapabilityCooperativeMatrixNV:                "CooperativeMatrixNV",
	CapabilityAtomicFloat32MinMaxEXT:             "AtomicFloat32MinMaxEXT",
	CapabilityAtomicFloat64MinMaxEXT:             "AtomicFloat64MinMaxEXT",
	CapabilityAtomicFloat16MinMaxEXT:             "AtomicFloat16MinMaxEXT",
	CapabilityDotProductInputAll:                 "DotProductInputAll",
	CapabilityDotProductInput4x8Bit:              "DotProductInput4x8Bit",
	CapabilityDotProductInput4x8BitPacked:        "DotProductInput4x8BitPacked",
	CapabilityDotProduct:                         "DotProduct",
	CapabilityAtomicFloat32AddEXT:                "AtomicFloat32AddEXT",
	CapabilityAtomicFloat64AddEXT:                "AtomicFloat64AddEXT",
	CapabilityAtomicFloat16AddEXT:                "AtomicFloat16AddEXT",
	CapabilityCooperativeMatrixKHR:               "CooperativeMatrixKHR",
}

// String is the capability's name in the specification, or its number.
func (c Capability) String() string {
	if n, ok := capabilityNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Capability(%d)", uint32(c))
}

const opCapability = 17

// Capabilities lists the capabilities a module declares, in order: the
// OpCapability instructions that open every module. A launcher compares
// them with the features its device has before a driver sees the module
// (a driver may crash on a module that needs a feature it was not created
// with). Bytes that are not a whole module fail as Inspect fails.
func Capabilities(code []byte) ([]Capability, error) {
	insts, err := decode(code)
	if err != nil {
		return nil, err
	}
	var caps []Capability
	for _, in := range insts {
		if in.op != opCapability {
			continue
		}
		if err := in.need(1); err != nil {
			return nil, err
		}
		caps = append(caps, Capability(in.operands[0]))
	}
	return caps, nil
}
