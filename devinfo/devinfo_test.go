package devinfo

import (
	"testing"
)

// A texel range must be whole texels of its format, start aligned and
// hold at most maxTexelBufferElements texels; CheckTexelRange is the
// catalogue's 16-byte case.
func TestCheckTexelRangeOf(t *testing.T) {
	l := Limits{MinTexelBufferOffsetAlignment: 16, MaxTexelBufferElements: 8}
	for _, c := range []struct {
		offset, size, texel uint64
		ok                  bool
	}{
		{0, 32, 4, true},
		{16, 32, 4, true},
		{4, 32, 4, false},  // offset off the alignment
		{0, 30, 4, false},  // not whole texels
		{0, 0, 4, false},   // empty
		{0, 36, 4, false},  // 9 texels
		{0, 128, 16, true}, // 8 texels of 16 bytes
		{0, 144, 16, false},
		{0, 8, 0, false}, // no texel size
	} {
		err := l.CheckTexelRangeOf(c.offset, c.size, c.texel)
		if (err == nil) != c.ok {
			t.Errorf("CheckTexelRangeOf(%d, %d, %d) = %v, want ok %v", c.offset, c.size, c.texel, err, c.ok)
		}
	}
	if err := l.CheckTexelRange(0, 48); err != nil {
		t.Errorf("CheckTexelRange of three 16-byte texels: %v", err)
	}
}

// Each format's size is its texel's bytes, and the zero value is the
// catalogue's R32G32B32A32_UINT.
func TestTexelFormatSizes(t *testing.T) {
	want := map[TexelFormat]uint64{TexelRGBA32Uint: 16, TexelR32Float: 4, TexelR32Uint: 4, TexelR32Sint: 4,
		TexelRGBA32Float: 16, TexelRGBA32Sint: 16, TexelRGBA16Float: 8,
		TexelR16Float: 2, TexelR16Uint: 2, TexelR16Sint: 2, TexelR8Uint: 1, TexelR8Sint: 1}
	for f, size := range want {
		if f.Size() != size {
			t.Errorf("%v.Size() = %d, want %d", f, f.Size(), size)
		}
	}
	var zero TexelFormat
	if zero.String() != "R32G32B32A32_UINT" {
		t.Errorf("zero format %v", zero)
	}
}
