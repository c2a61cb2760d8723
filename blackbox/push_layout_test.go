package blackbox_test

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// testdataModule is a module the root package's testdata/gen.sh builds.
func testdataModule(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + name + ".spv")
	require.NoError(t, err)
	return b
}

// Promise (KernelSpec: a derived PushSize is "the bytes from its start to
// the end of its last member, every member placed by the module's Offset,
// ArrayStride, MatrixStride and RowMajor decorations"): the kernel reads
// every matrix element the caller placed where std430 puts it (a mat3's
// columns 16 bytes apart, a row-major mat3x2's rows of three floats 16
// bytes apart), and the derived size covers them all.
func TestDerivedPushSizeCoversEveryMatrixElement(t *testing.T) {
	dev := openDevice(t)
	s := dev.Stream()
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
			k, err := dev.LoadKernel(vkc.KernelSpec{Name: c.module, SPIRV: testdataModule(t, c.module)})
			require.NoError(t, err)
			defer k.Close()
			require.Equal(t, c.size, k.Spec().PushSize, "derived push size")
			p := make([]byte, c.size)
			c.place(p, c.want)
			y := newBuffer[float32](t, dev, len(c.want))
			require.NoError(t, k.Launch(s, [3]uint32{1, 1, 1}, p, y))
			require.Equal(t, c.want, read(t, s, y))
		})
	}
}
