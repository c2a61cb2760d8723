package vk

/*
#include <stdlib.h>
#include "cvk.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// PipelineCacheHeaderSize is the size of VkPipelineCacheHeaderVersionOne:
// header length, header version, vendor ID, device ID and the 16-byte
// pipeline-cache UUID.
const PipelineCacheHeaderSize = 32

// ErrForeignPipelineCache: pipeline-cache data whose header names another
// device, driver build or header version, or that is too short to hold one.
var ErrForeignPipelineCache = errors.New("pipeline-cache data not made by this device's driver")

// CheckPipelineCacheHeader refuses data that this device's driver did not
// write: a driver is only promised to reject foreign data, not to survive
// it, so no data is handed to vkCreatePipelineCache before its header
// (VkPipelineCacheHeaderVersionOne, little-endian on every platform vkc
// runs on) names this device's vendor, device and pipeline-cache UUID.
func CheckPipelineCacheHeader(data []byte, info DeviceInfo) error {
	if len(data) < PipelineCacheHeaderSize {
		return fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrForeignPipelineCache, len(data), PipelineCacheHeaderSize)
	}
	le := binary.LittleEndian
	length, version := le.Uint32(data[0:]), le.Uint32(data[4:])
	vendor, device := le.Uint32(data[8:]), le.Uint32(data[12:])
	switch {
	case length < PipelineCacheHeaderSize || uint64(length) > uint64(len(data)):
		return fmt.Errorf("%w: header length %d in %d bytes", ErrForeignPipelineCache, length, len(data))
	case version != 1:
		return fmt.Errorf("%w: header version %d (want 1)", ErrForeignPipelineCache, version)
	case vendor != info.VendorID || device != info.DeviceID:
		return fmt.Errorf("%w: made for vendor 0x%x device 0x%x, this is 0x%x 0x%x", ErrForeignPipelineCache, vendor, device, info.VendorID, info.DeviceID)
	case [16]byte(data[16:32]) != info.PipelineCacheUUID:
		return fmt.Errorf("%w: pipeline-cache UUID %x, this driver's is %x", ErrForeignPipelineCache, data[16:32], info.PipelineCacheUUID)
	}
	return nil
}

// UsePipelineCache creates the device's pipeline cache, seeded with
// initial (nil: empty), which every later NewPipeline passes to the
// driver, so that a pipeline the cache already holds is not compiled
// again. Initial data must pass CheckPipelineCacheHeader. It is meant for
// right after OpenDevice; a second call, or one after device loss, fails
// and leaves the cache in place.
func (d *Device) UsePipelineCache(initial []byte) error {
	if len(initial) > 0 {
		if err := CheckPipelineCacheHeader(initial, d.info); err != nil {
			return err
		}
	}
	// Exclusively: no pipeline creation reads fns.cache while it is set.
	d.gate.Lock()
	defer d.gate.Unlock()
	if d.closed.Load() {
		return ErrClosed
	}
	if d.lost.Load() {
		return ErrDeviceLost
	}
	if d.fns.cache != nil {
		return errors.New("the device already has a pipeline cache")
	}
	var data unsafe.Pointer
	if len(initial) > 0 {
		data = C.CBytes(initial)
		defer C.free(data)
	}
	if err := d.check("vkCreatePipelineCache", Result(C.vkc_create_pipeline_cache(d.fns, data, C.size_t(len(initial))))); err != nil {
		return err
	}
	d.live[ObjPipelineCache].Add(1)
	return nil
}

// PipelineCacheData returns what the device's pipeline cache holds, for
// saving (nil when it has none). It fails with ErrPipelineCacheTooLarge,
// without copying, when that is more than limit bytes.
func (d *Device) PipelineCacheData(limit int) ([]byte, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	// The cache may grow between the two calls (another goroutine building
	// a pipeline): VK_INCOMPLETE then asks again.
	for {
		var size C.size_t
		if err := d.check("vkGetPipelineCacheData", Result(C.vkc_pipeline_cache_data(d.fns, &size, nil))); err != nil {
			return nil, err
		}
		if size == 0 {
			return nil, nil
		}
		if uint64(size) > uint64(max(limit, 0)) {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrPipelineCacheTooLarge, uint64(size), limit)
		}
		buf := C.malloc(size)
		n := size
		r := Result(C.vkc_pipeline_cache_data(d.fns, &n, buf))
		out := append([]byte(nil), unsafe.Slice((*byte)(buf), int(n))...)
		C.free(buf)
		if r == Incomplete {
			continue
		}
		if err := d.check("vkGetPipelineCacheData", r); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// ErrPipelineCacheTooLarge: the pipeline cache holds more than the caller's limit.
var ErrPipelineCacheTooLarge = errors.New("pipeline cache larger than the limit")
