package vk

/*
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
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

// rank is the default-selection preference; higher wins.
func (t DeviceType) rank() int {
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
	NonCoherentAtomSize             uint64
	TimestampPeriod                 float32 // nanoseconds per timestamp tick
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

// DeviceInfo describes one physical device.
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
}

// DeviceLocalBytes sums the device-local heaps.
func (d DeviceInfo) DeviceLocalBytes() uint64 {
	var n uint64
	for _, h := range d.Heaps {
		if h.DeviceLocal {
			n += h.Size
		}
	}
	return n
}

func vendorName(id uint32) string {
	switch id {
	case 0x10DE:
		return "NVIDIA"
	case 0x1002:
		return "AMD"
	case 0x8086:
		return "Intel"
	case 0x106B:
		return "Apple"
	case 0x13B5:
		return "ARM"
	case 0x5143:
		return "Qualcomm"
	case 0x10005:
		return "Mesa"
	}
	return fmt.Sprintf("0x%04x", id)
}

func versionString(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v>>22, (v>>12)&0x3ff, v&0xfff)
}

func driverString(vendor, v uint32) string {
	if vendor == 0x10DE { // NVIDIA packs 10.8.8.6 bits
		return fmt.Sprintf("%d.%d.%d.%d", v>>22, (v>>14)&0xff, (v>>6)&0xff, v&0x3f)
	}
	return versionString(v)
}

func cstr(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func (in *Instance) physicalDevices() ([]vulkan.PhysicalDevice, error) {
	var n uint32
	if err := checkV("vkEnumeratePhysicalDevices", vulkan.EnumeratePhysicalDevices(in.vkInstance(), &n, nil)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	pds := make([]vulkan.PhysicalDevice, n)
	if err := checkV("vkEnumeratePhysicalDevices", vulkan.EnumeratePhysicalDevices(in.vkInstance(), &n, pds)); err != nil {
		return nil, err
	}
	return pds[:n], nil
}

func memoryProperties(pd vulkan.PhysicalDevice) vulkan.PhysicalDeviceMemoryProperties {
	var mp vulkan.PhysicalDeviceMemoryProperties
	vulkan.GetPhysicalDeviceMemoryProperties(pd, &mp)
	mp.Deref()
	for i := range mp.MemoryTypes[:mp.MemoryTypeCount] {
		mp.MemoryTypes[i].Deref()
	}
	for i := range mp.MemoryHeaps[:mp.MemoryHeapCount] {
		mp.MemoryHeaps[i].Deref()
	}
	return mp
}

func (in *Instance) describe(i int, pd vulkan.PhysicalDevice) DeviceInfo {
	var p vulkan.PhysicalDeviceProperties
	vulkan.GetPhysicalDeviceProperties(pd, &p)
	p.Deref()
	p.Limits.Deref()
	l := p.Limits
	info := DeviceInfo{
		Index:         i,
		Name:          cstr(p.DeviceName[:]),
		Type:          DeviceType(p.DeviceType),
		VendorID:      p.VendorID,
		DeviceID:      p.DeviceID,
		Vendor:        vendorName(p.VendorID),
		DriverVersion: driverString(p.VendorID, p.DriverVersion),
		APIVersion:    versionString(p.ApiVersion),
		Limits: Limits{
			MaxComputeWorkGroupCount:        l.MaxComputeWorkGroupCount,
			MaxComputeWorkGroupSize:         l.MaxComputeWorkGroupSize,
			MaxComputeWorkGroupInvocations:  l.MaxComputeWorkGroupInvocations,
			MaxComputeSharedMemorySize:      l.MaxComputeSharedMemorySize,
			MaxStorageBufferRange:           l.MaxStorageBufferRange,
			MaxPushConstantsSize:            l.MaxPushConstantsSize,
			MaxMemoryAllocationCount:        l.MaxMemoryAllocationCount,
			MinStorageBufferOffsetAlignment: uint64(l.MinStorageBufferOffsetAlignment),
			NonCoherentAtomSize:             uint64(l.NonCoherentAtomSize),
			TimestampPeriod:                 l.TimestampPeriod,
		},
	}
	if info.Type > TypeCPU {
		info.Type = TypeOther
	}
	if strings.Contains(info.Name, "llvmpipe") && info.Vendor != "Mesa" {
		info.Vendor = "Mesa"
	}
	mp := memoryProperties(pd)
	for _, h := range mp.MemoryHeaps[:mp.MemoryHeapCount] {
		info.Heaps = append(info.Heaps, MemoryHeap{Size: uint64(h.Size), DeviceLocal: h.Flags&vulkan.MemoryHeapFlags(vulkan.MemoryHeapDeviceLocalBit) != 0})
	}
	const unified = vulkan.MemoryPropertyDeviceLocalBit | vulkan.MemoryPropertyHostVisibleBit | vulkan.MemoryPropertyHostCoherentBit
	for _, t := range mp.MemoryTypes[:mp.MemoryTypeCount] {
		if t.PropertyFlags&vulkan.MemoryPropertyFlags(unified) == vulkan.MemoryPropertyFlags(unified) &&
			(info.Type == TypeIntegrated || info.Type == TypeCPU) {
			info.UnifiedMemory = true
		}
	}
	var sg C.vkc_subgroup
	C.vkc_query_subgroup(in.gipa, in.handle, *(*C.VkPhysicalDevice)(unsafe.Pointer(&pd)), &sg)
	const computeStage, arithmeticOp = 0x20, 0x4
	info.Subgroup = SubgroupInfo{Size: uint32(sg.size), Arithmetic: sg.stages&computeStage != 0 && sg.ops&arithmeticOp != 0}
	return info
}

// Devices lists every physical device the loader reports.
func (in *Instance) Devices() ([]DeviceInfo, error) {
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	infos := make([]DeviceInfo, len(pds))
	for i, pd := range pds {
		infos[i] = in.describe(i, pd)
	}
	return infos, nil
}

// Select picks a device: want "" takes the best by type (discrete >
// integrated > virtual > CPU, first listed on a tie); a decimal want is an
// index; anything else is a case-insensitive substring of the name.
func Select(infos []DeviceInfo, want string) (int, error) {
	if len(infos) == 0 {
		return 0, ErrNoDevice
	}
	want = strings.TrimSpace(want)
	if want == "" {
		best := 0
		for i, d := range infos {
			if d.Type.rank() > infos[best].Type.rank() {
				best = i
			}
		}
		return best, nil
	}
	if n, err := strconv.Atoi(want); err == nil {
		if n < 0 || n >= len(infos) {
			return 0, fmt.Errorf("vkc: device index %d out of range (have %d devices)", n, len(infos))
		}
		return n, nil
	}
	lw := strings.ToLower(want)
	for i, d := range infos {
		if strings.Contains(strings.ToLower(d.Name), lw) {
			return i, nil
		}
	}
	names := make([]string, len(infos))
	for i, d := range infos {
		names[i] = fmt.Sprintf("%d: %s", i, d.Name)
	}
	return 0, fmt.Errorf("vkc: no device matches %q (have %s)", want, strings.Join(names, "; "))
}
