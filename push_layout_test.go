package vkc

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A push-constant block holding a matrix spans its MatrixStride-apart
// columns (or rows), not packed ones: LoadKernel derives that size from
// the module's decorations, and the kernel reads every element the
// caller placed at the offsets std430 gives (a mat3's columns 16 bytes
// apart; a row-major mat3x2's rows of three floats 16 bytes apart).
func TestDerivedPushSizeCoversEveryMatrixElement(t *testing.T) {
	dev := openTest(t)
	cases := []struct {
		module string
		size   uint32
		want   []float32
		// place writes want's values where the block keeps them.
		place func(push []byte, want []float32)
	}{
		{"mat3push", 44, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, func(push []byte, want []float32) {
			for c := 0; c < 3; c++ {
				for r := 0; r < 3; r++ {
					binary.LittleEndian.PutUint32(push[16*c+4*r:], math.Float32bits(want[3*c+r]))
				}
			}
		}},
		{"rowmajorpush", 44, []float32{1, 2, 3, 4, 5, 6, 7}, func(push []byte, want []float32) {
			binary.LittleEndian.PutUint32(push[0:], math.Float32bits(want[6]))
			for c := 0; c < 3; c++ {
				for r := 0; r < 2; r++ {
					binary.LittleEndian.PutUint32(push[16+16*r+4*c:], math.Float32bits(want[2*c+r]))
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.module, func(t *testing.T) {
			k, err := dev.LoadKernel(KernelSpec{Name: c.module, SPIRV: testSPIRV(t, c.module)})
			require.NoError(t, err)
			defer func() { assert.NoError(t, k.Close()) }()
			require.Equal(t, c.size, k.Spec().PushSize, "derived push size")
			push := make([]byte, c.size)
			c.place(push, c.want)
			y := scratch[float32](t, dev, len(c.want))
			require.NoError(t, k.Launch(dev.Stream(), [3]uint32{1, 1, 1}, push, y))
			assert.Equal(t, c.want, readAll(t, y))
		})
	}
}
