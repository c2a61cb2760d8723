package vk

/*
#include "cvk.h"
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vkcompute/vkc/devinfo"
)

// The description of a physical device is declared once below the root,
// in package devinfo; vk fills it in from the driver.
type (
	DeviceType   = devinfo.DeviceType
	Limits       = devinfo.Limits
	MemoryHeap   = devinfo.MemoryHeap
	SubgroupInfo = devinfo.SubgroupInfo
	DeviceInfo   = devinfo.DeviceInfo
)

// Features is devinfo's set of optional device features; its bits are
// cvk.h's VKC_FEATURE_*, which the array lengths below check at compile
// time (a mismatch is a negative or non-zero length).
type Features = devinfo.Features

// The features, as devinfo names them.
const (
	FeatureFloat16             = devinfo.FeatureFloat16
	FeatureFloat64             = devinfo.FeatureFloat64
	FeatureInt8                = devinfo.FeatureInt8
	FeatureInt16               = devinfo.FeatureInt16
	FeatureInt64               = devinfo.FeatureInt64
	FeatureStorage8            = devinfo.FeatureStorage8
	FeatureStorage16           = devinfo.FeatureStorage16
	FeatureUniformAndStorage8  = devinfo.FeatureUniformAndStorage8
	FeatureUniformAndStorage16 = devinfo.FeatureUniformAndStorage16
	FeatureIntegerDotProduct   = devinfo.FeatureIntegerDotProduct
	FeatureCooperativeMatrix   = devinfo.FeatureCooperativeMatrix
	FeatureVulkanMemoryModel   = devinfo.FeatureVulkanMemoryModel
)

var _ = [0]struct{}{} == [FeatureFloat16 ^ C.VKC_FEATURE_FLOAT16 |
	FeatureFloat64 ^ C.VKC_FEATURE_FLOAT64 | FeatureInt8 ^ C.VKC_FEATURE_INT8 |
	FeatureInt16 ^ C.VKC_FEATURE_INT16 | FeatureInt64 ^ C.VKC_FEATURE_INT64 |
	FeatureStorage8 ^ C.VKC_FEATURE_STORAGE8 | FeatureStorage16 ^ C.VKC_FEATURE_STORAGE16 |
	FeatureUniformAndStorage8 ^ C.VKC_FEATURE_UNIFORM_STORAGE8 |
	FeatureUniformAndStorage16 ^ C.VKC_FEATURE_UNIFORM_STORAGE16 |
	FeatureIntegerDotProduct ^ C.VKC_FEATURE_INTEGER_DOT_PRODUCT |
	FeatureCooperativeMatrix ^ C.VKC_FEATURE_COOPERATIVE_MATRIX |
	FeatureVulkanMemoryModel ^ C.VKC_FEATURE_VULKAN_MEMORY_MODEL]struct{}{}

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

// physicalDevices lists the physical devices; the caller is inside the
// instance's gate.
func (in *Instance) physicalDevices() ([]C.VkPhysicalDevice, error) {
	var n C.uint32_t
	if err := check("vkEnumeratePhysicalDevices", Result(C.vkc_enumerate_devices(in.gipa, in.handle, &n, nil))); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	pds := make([]C.VkPhysicalDevice, n)
	r := Result(C.vkc_enumerate_devices(in.gipa, in.handle, &n, &pds[0]))
	if r != Incomplete {
		if err := check("vkEnumeratePhysicalDevices", r); err != nil {
			return nil, err
		}
	}
	return pds[:n], nil
}

// physical is what vk reads about one physical device.
type physical struct {
	info     DeviceInfo
	api      uint32       // the API version vk uses on it: the device's, capped at the instance's 1.3
	memTypes []memoryType // the device's memory types, in index order
	// maxBuffer is the largest buffer the device creates (maintenance4's
	// maxBufferSize, reported from Vulkan 1.3 on); 0 where unknown.
	maxBuffer uint64
	families  []uint32 // each queue family's VkQueueFlags
	queues    []uint32 // each queue family's queue count
	handle    C.VkPhysicalDevice
}

// memoryType is one of the device's memory types: its property flags and
// the size of the heap it allocates from.
type memoryType struct {
	flags    uint32
	heapSize uint64
}

// Vulkan memory-property and queue bits vk reads.
const (
	memDeviceLocal  = 0x1
	memHostVisible  = 0x2
	memHostCoherent = 0x4
	memHostCached   = 0x8
	heapDeviceLocal = 0x1
	queueGraphics   = 0x1
	queueCompute    = 0x2
)

// instanceAPI is the API version vkc_create_instance asks for (1.3): the
// most vk may use on any device. A device is used at the lower of it and
// its own version, so a Vulkan 1.1 device still opens, and modules are
// validated for, and may need no more than, the version in use
// (ValidateSPIRV).
const instanceAPI = 1<<22 | 3<<12

func (in *Instance) describe(i int, pd C.VkPhysicalDevice) physical {
	var c C.vkc_physical
	C.vkc_describe(in.gipa, in.handle, pd, &c)
	p := &c.props
	l := &p.limits
	dev := uint32(p.apiVersion)
	info := DeviceInfo{
		Index:         i,
		Name:          C.GoString(&p.deviceName[0]),
		Type:          DeviceType(p.deviceType),
		VendorID:      uint32(p.vendorID),
		DeviceID:      uint32(p.deviceID),
		Vendor:        vendorName(uint32(p.vendorID)),
		DriverVersion: driverString(uint32(p.vendorID), uint32(p.driverVersion)),
		APIVersion:    versionString(dev),
		Limits: Limits{
			MaxComputeWorkGroupCount:        [3]uint32{uint32(l.maxComputeWorkGroupCount[0]), uint32(l.maxComputeWorkGroupCount[1]), uint32(l.maxComputeWorkGroupCount[2])},
			MaxComputeWorkGroupSize:         [3]uint32{uint32(l.maxComputeWorkGroupSize[0]), uint32(l.maxComputeWorkGroupSize[1]), uint32(l.maxComputeWorkGroupSize[2])},
			MaxComputeWorkGroupInvocations:  uint32(l.maxComputeWorkGroupInvocations),
			MaxComputeSharedMemorySize:      uint32(l.maxComputeSharedMemorySize),
			MaxStorageBufferRange:           uint32(l.maxStorageBufferRange),
			MaxPushConstantsSize:            uint32(l.maxPushConstantsSize),
			MaxMemoryAllocationCount:        uint32(l.maxMemoryAllocationCount),
			MinStorageBufferOffsetAlignment: uint64(l.minStorageBufferOffsetAlignment),
			MinTexelBufferOffsetAlignment:   uint64(l.minTexelBufferOffsetAlignment),
			MaxTexelBufferElements:          uint32(l.maxTexelBufferElements),
			MaxUniformBufferRange:           uint32(l.maxUniformBufferRange),
			MinUniformBufferOffsetAlignment: uint64(l.minUniformBufferOffsetAlignment),
			NonCoherentAtomSize:             uint64(l.nonCoherentAtomSize),
			TimestampPeriod:                 float32(l.timestampPeriod),
		},
	}
	info.DriverVersionCode = uint32(p.driverVersion)
	for i := range info.PipelineCacheUUID {
		info.PipelineCacheUUID[i] = byte(p.pipelineCacheUUID[i])
	}
	if info.Type > devinfo.TypeCPU {
		info.Type = devinfo.TypeOther
	}
	if strings.Contains(info.Name, "llvmpipe") && info.Vendor != "Mesa" {
		info.Vendor = "Mesa"
	}
	m := &c.mem
	for _, h := range m.memoryHeaps[:m.memoryHeapCount] {
		info.Heaps = append(info.Heaps, MemoryHeap{Size: uint64(h.size), DeviceLocal: h.flags&heapDeviceLocal != 0})
	}
	out := physical{handle: pd, api: min(dev&^0xfff, instanceAPI), maxBuffer: uint64(c.max_buffer_size)}
	const unified = memDeviceLocal | memHostVisible | memHostCoherent
	for _, t := range m.memoryTypes[:m.memoryTypeCount] {
		flags := uint32(t.propertyFlags)
		var heap uint64
		if i := int(t.heapIndex); i < len(info.Heaps) {
			heap = info.Heaps[i].Size
		}
		out.memTypes = append(out.memTypes, memoryType{flags: flags, heapSize: heap})
		if flags&unified == unified && (info.Type == devinfo.TypeIntegrated || info.Type == devinfo.TypeCPU) {
			info.UnifiedMemory = true
		}
	}
	for _, f := range c.family_flags[:c.family_count] {
		out.families = append(out.families, uint32(f))
	}
	for _, n := range c.family_queues[:c.family_count] {
		out.queues = append(out.queues, uint32(n))
	}
	const computeStage, arithmeticOp = 0x20, 0x4
	info.Subgroup = SubgroupInfo{Size: uint32(c.subgroup_size), Arithmetic: c.subgroup_stages&computeStage != 0 && c.subgroup_ops&arithmeticOp != 0}
	info.Features = Features(c.features)
	for _, m := range c.coopmat[:c.coopmat_count] {
		info.CooperativeMatrices = append(info.CooperativeMatrices, devinfo.CooperativeMatrix{
			M: uint32(m.m), N: uint32(m.n), K: uint32(m.k),
			A: devinfo.ComponentType(m.a), B: devinfo.ComponentType(m.b),
			C: devinfo.ComponentType(m.c), Result: devinfo.ComponentType(m.result),
			SaturatingAddition: m.saturating != 0, Scope: devinfo.Scope(m.scope)})
	}
	out.info = info
	return out
}

// Devices lists every physical device the loader reports.
func (in *Instance) Devices() ([]DeviceInfo, error) {
	if err := in.enter(); err != nil {
		return nil, err
	}
	defer in.leave()
	pds, err := in.physicalDevices()
	if err != nil {
		return nil, err
	}
	infos := make([]DeviceInfo, len(pds))
	for i, pd := range pds {
		infos[i] = in.describe(i, pd).info
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
			if d.Type.Rank() > infos[best].Type.Rank() {
				best = i
			}
		}
		return best, nil
	}
	if n, err := strconv.Atoi(want); err == nil {
		if n < 0 || n >= len(infos) {
			return 0, fmt.Errorf("device index %d out of range (have %d devices)", n, len(infos))
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
	return 0, fmt.Errorf("no device matches %q (have %s)", want, strings.Join(names, "; "))
}
