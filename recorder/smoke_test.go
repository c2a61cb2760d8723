package recorder_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
	"github.com/vkcompute/vkc/shaders"
)

func TestSmoke(t *testing.T) {
	for _, unified := range []bool{true, false} {
		dev := hostdev.New(hostdev.Options{Unified: unified})
		r, err := recorder.New(dev, recorder.Options{PageSize: 1 << 20})
		require.NoError(t, err)
		x, err := r.Alloc(alloc.DeviceLocal, 64)
		require.NoError(t, err)
		y, err := r.Alloc(alloc.DeviceLocal, 64)
		require.NoError(t, err)
		buf := make([]byte, 64)
		for i := 0; i < 16; i++ {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(i)))
		}
		var sx, sy *recorder.Staging
		require.NoError(t, r.Write(0, x, &sx, buf))
		require.NoError(t, r.Write(0, y, &sy, buf))
		axpy, err := shaders.Get("axpy")
		require.NoError(t, err)
		k, err := r.NewKernel(axpy.SPIRV, recorder.PipelineDesc{Name: "axpy", Bindings: 2, Writes: 2, PushSize: 8})
		require.NoError(t, err)
		push := make([]byte, 8)
		binary.LittleEndian.PutUint32(push, math.Float32bits(2))
		binary.LittleEndian.PutUint32(push[4:], 16)
		l := recorder.Launch{Args: []capture.Binding{{Claim: x}, {Claim: y, Write: true, Read: true}}, Groups: [3]uint32{1, 1, 1}, Push: push}
		require.NoError(t, r.Launch(0, k, &l))
		require.NoError(t, r.Launch(0, k, &l))
		out := make([]byte, 64)
		require.NoError(t, r.Read(context.Background(), 0, y, out))
		for i := 0; i < 16; i++ {
			require.Equal(t, float32(5*i), math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])))
		}
		require.NoError(t, k.Release())
		require.NoError(t, r.Free(x))
		require.NoError(t, r.Free(y))
		require.NoError(t, r.Close())
		require.Empty(t, dev.Live())
		require.Zero(t, dev.Diagnostics().Errors, dev.Diagnostics().Recent)
	}
}
