package vkc

import (
	"fmt"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/shaders"
)

// SPIR-V image formats (ImageFormat) a storage texel buffer may declare.
const (
	imageFormatUnknown  = 0
	imageFormatRgba32f  = 1
	imageFormatRgba16f  = 2
	imageFormatR32f     = 3
	imageFormatRgba32i  = 21
	imageFormatR32i     = 24
	imageFormatRgba32ui = 30
	imageFormatR32ui    = 33
)

// texelFormat is the format a user kernel's texel binding views its
// buffers as, fixed at load from the module: a storage texel buffer's
// declared format (GLSL layout(r32f) and the like: r32f, r32i, r32ui,
// rgba32f, rgba32i, rgba32ui, rgba16f, the formats every device supports
// for storage texel buffers); a uniform texel buffer's (which declares
// none) is one element per texel of its sampled type, 32 bits wide here
// (R32_SFLOAT for a samplerBuffer, R32_SINT for isamplerBuffer, R32_UINT
// for usamplerBuffer) and chosen per launch by the buffer's element type
// (uniformTexelFormat).
func texelFormat(kernel string, i int, b shaders.ModuleBinding) (recorder.TexelFormat, error) {
	if b.Kind == shaders.UniformTexelBuffer {
		switch b.TexelType {
		case shaders.ScalarFloat:
			return recorder.TexelR32Float, nil
		case shaders.ScalarInt:
			return recorder.TexelR32Sint, nil
		case shaders.ScalarUint:
			return recorder.TexelR32Uint, nil
		}
		return 0, fmt.Errorf("vkc: kernel %q: binding %d is a uniform texel buffer of %v texels; vkc views 32-bit float, int and uint buffers", kernel, i, b.TexelType)
	}
	switch b.TexelFormat {
	case imageFormatR32f:
		return recorder.TexelR32Float, nil
	case imageFormatR32i:
		return recorder.TexelR32Sint, nil
	case imageFormatR32ui:
		return recorder.TexelR32Uint, nil
	case imageFormatRgba32f:
		return recorder.TexelRGBA32Float, nil
	case imageFormatRgba32i:
		return recorder.TexelRGBA32Sint, nil
	case imageFormatRgba32ui:
		return recorder.TexelRGBA32Uint, nil
	case imageFormatRgba16f:
		return recorder.TexelRGBA16Float, nil
	case imageFormatUnknown:
		return 0, fmt.Errorf("vkc: kernel %q: binding %d is a storage texel buffer without a format; declare one (GLSL layout(r32f) and the like)", kernel, i)
	}
	return 0, fmt.Errorf("vkc: kernel %q: binding %d is a storage texel buffer of SPIR-V image format %d; vkc views buffers as r32f, r32i, r32ui, rgba32f, rgba32i, rgba32ui or rgba16f", kernel, i, b.TexelFormat)
}

// vec4Texels checks KernelSpec.Vec4Texels against the module's bindings
// and sets each listed binding's format to R32G32B32A32 of its sampled
// type, the view it then keeps for every launch; the result has bit i set
// for binding i listed. An index out of range or listed twice, and a
// binding that is not a uniform texel buffer of 32-bit sampled type, are
// refused.
func vec4Texels(kernel string, list []int, bindings []shaders.ModuleBinding, formats *[recorder.MaxBindings]recorder.TexelFormat) (uint32, error) {
	var set uint32
	for _, i := range list {
		if i < 0 || i >= len(bindings) {
			return 0, fmt.Errorf("vkc: kernel %q: Vec4Texels lists binding %d; the module has bindings 0..%d", kernel, i, len(bindings)-1)
		}
		if set>>uint(i)&1 != 0 {
			return 0, fmt.Errorf("vkc: kernel %q: Vec4Texels lists binding %d twice", kernel, i)
		}
		b := bindings[i]
		if b.Kind != shaders.UniformTexelBuffer {
			return 0, fmt.Errorf("vkc: kernel %q: Vec4Texels lists binding %d, a %v; only a uniform texel buffer (samplerBuffer, isamplerBuffer, usamplerBuffer) is viewed four elements per texel", kernel, i, b.Kind)
		}
		switch b.TexelType {
		case shaders.ScalarFloat:
			formats[i] = recorder.TexelRGBA32Float
		case shaders.ScalarInt:
			formats[i] = recorder.TexelRGBA32Sint
		case shaders.ScalarUint:
			formats[i] = recorder.TexelRGBA32Uint
		default:
			return 0, fmt.Errorf("vkc: kernel %q: Vec4Texels lists binding %d, a uniform texel buffer of %v texels; only 32-bit float, int and uint texels are viewed four elements per texel", kernel, i, b.TexelType)
		}
		set |= 1 << uint(i)
	}
	return set, nil
}

// uniformTexelFormat is the format a uniform texel buffer of sampled type
// t views a buffer of element type e as: one element per texel, the
// element's width (float32 R32_SFLOAT, Float16 R16_SFLOAT; int32, int16,
// int8 R32/R16/R8_SINT; uint32, uint16, uint8 R32/R16/R8_UINT, the formats
// Vulkan requires of uniform texel buffers); false for an element type the
// sampled type does not read.
func uniformTexelFormat(t shaders.ScalarType, e elemKind) (recorder.TexelFormat, bool) {
	switch {
	case t == shaders.ScalarFloat && e == elemFloat:
		return recorder.TexelR32Float, true
	case t == shaders.ScalarFloat && e == elemFloat16:
		return recorder.TexelR16Float, true
	case t == shaders.ScalarInt && e == elemInt:
		return recorder.TexelR32Sint, true
	case t == shaders.ScalarInt && e == elemInt16:
		return recorder.TexelR16Sint, true
	case t == shaders.ScalarInt && e == elemInt8:
		return recorder.TexelR8Sint, true
	case t == shaders.ScalarUint && e == elemUint:
		return recorder.TexelR32Uint, true
	case t == shaders.ScalarUint && e == elemUint16:
		return recorder.TexelR16Uint, true
	case t == shaders.ScalarUint && e == elemUint8:
		return recorder.TexelR8Uint, true
	}
	return 0, false
}

// uniformTexelTakes names the element types a uniform texel buffer of
// sampled type t takes, for messages.
func uniformTexelTakes(t shaders.ScalarType) string {
	switch t {
	case shaders.ScalarFloat:
		return "float32 or Float16"
	case shaders.ScalarInt:
		return "int32, int16 or int8"
	}
	return "uint32, uint16 or uint8"
}

// formatFor is the format binding i, a texel binding, views a buffer of
// element type e as in this launch; checkDescriptor has checked it exists.
// A uniform texel binding viewed four elements per texel keeps the format
// LoadKernel fixed, as a storage texel binding does.
func (k *Kernel) formatFor(i int, e elemKind) recorder.TexelFormat {
	if k.perElement(i) {
		f, _ := uniformTexelFormat(k.texelTypes[i], e)
		return f
	}
	return k.formats[i]
}

// perElement reports whether binding i's format follows the element type
// of the buffer bound (a uniform texel binding not listed in
// KernelSpec.Vec4Texels) rather than being fixed at load.
func (k *Kernel) perElement(i int) bool {
	return k.kinds[i] == shaders.UniformTexelBuffer && k.vec4>>uint(i)&1 == 0
}

// texelElem is the element type a buffer viewed as format must hold: a
// format's component, one element per component.
func texelElem(f recorder.TexelFormat) elemKind {
	switch f {
	case recorder.TexelR32Float, recorder.TexelRGBA32Float:
		return elemFloat
	case recorder.TexelR32Sint, recorder.TexelRGBA32Sint:
		return elemInt
	case recorder.TexelRGBA16Float:
		return elemFloat16
	}
	return elemUint
}

// checkDescriptor refuses a buffer that binding i of k, a uniform or texel
// binding, cannot take as it is: another element type than its texel
// format's; a range the device's texel or uniform limits forbid. vkc
// stands in for no such view (an aligned copy, as for storage buffers,
// would change what a texel index addresses only by the offset, but the
// refusal is clearer than a silent copy of a uniform block).
func (k *Kernel) checkDescriptor(i int, c *bufferCore) error {
	lim := k.dev.info.Limits
	size := uint64(c.n) * c.elem.size()
	switch {
	case k.perElement(i):
		f, ok := uniformTexelFormat(k.texelTypes[i], c.elem)
		if !ok {
			return fmt.Errorf("vkc: kernel %q: binding %d is a uniform texel buffer of %v texels, which takes %s elements; given %v", k.name, i, k.texelTypes[i], uniformTexelTakes(k.texelTypes[i]), c.elem)
		}
		if err := lim.checkTexelRange(c.claim.Offset, size-size%f.Size(), f.Size()); err != nil {
			return fmt.Errorf("vkc: kernel %q: binding %d (%v of %v): buffer of %d bytes: %w", k.name, i, k.kinds[i], f, size, err)
		}
	case k.kinds[i] == shaders.StorageTexelBuffer || k.kinds[i] == shaders.UniformTexelBuffer:
		f := k.formats[i]
		if want := texelElem(f); c.elem != want {
			return fmt.Errorf("vkc: kernel %q: binding %d is a %v viewed as %v, which takes %v elements; given %v", k.name, i, k.kinds[i], f, want, c.elem)
		}
		if err := lim.checkTexelRange(c.claim.Offset, size-size%f.Size(), f.Size()); err != nil {
			return fmt.Errorf("vkc: kernel %q: binding %d (%v of %v): buffer of %d bytes: %w", k.name, i, k.kinds[i], f, size, err)
		}
	case k.kinds[i] == shaders.UniformBuffer:
		if size > uint64(lim.MaxUniformBufferRange) {
			return fmt.Errorf("vkc: kernel %q: binding %d is a uniform buffer; the buffer's %d bytes exceed maxUniformBufferRange %d (bind a view of the block)", k.name, i, size, lim.MaxUniformBufferRange)
		}
		if a := lim.MinUniformBufferOffsetAlignment; a != 0 && c.claim.Offset%a != 0 {
			return fmt.Errorf("vkc: kernel %q: binding %d is a uniform buffer; a view at byte %d of its memory is not a multiple of minUniformBufferOffsetAlignment %d", k.name, i, c.claim.Offset, a)
		}
	}
	return nil
}

// checkTexelRange is the device's rule for texel views
// (devinfo.Limits.CheckTexelRangeOf).
func (l Limits) checkTexelRange(offset, size, texel uint64) error {
	return recorder.Limits(l).CheckTexelRangeOf(offset, size, texel)
}
