package vkc

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/recorder/hostdev"
)

// The host device's Go reference of the convert kernel and the shader
// agree bit for bit on random bit patterns for every ordered pair of
// element types, so tests on the host device see what a GPU computes
// (blackbox/convert_test.go checks the shader against a model).
func TestConvertReferenceMatchesShader(t *testing.T) {
	gpu := openTest(t)
	host := openTest(t, withRecorderDevice(func() (recorder.Device, error) { return hostdev.New(hostdev.Options{}), nil }))
	rng := rand.New(rand.NewPCG(5, 18))
	const n = 301 // ends inside a word of every width
	for from := elemFloat; from <= elemBFloat16; from++ {
		data := make([]byte, uint64(n)*from.size())
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		for to := elemFloat; to <= elemBFloat16; to++ {
			var got [2][]byte
			for i, d := range []*Device{gpu, host} {
				src, err := newCore(d, n, from, alloc.DeviceLocal)
				require.NoError(t, err)
				dst, err := newCore(d, n, to, alloc.DeviceLocal)
				require.NoError(t, err)
				require.NoError(t, src.fill(data))
				require.NoError(t, convertCores(d.def, src, dst))
				got[i] = make([]byte, uint64(n)*to.size())
				require.NoError(t, d.rec.Read(context.Background(), d.def.id, dst.claim, got[i]))
				require.NoError(t, src.close())
				require.NoError(t, dst.close())
			}
			require.Equal(t, got[0], got[1], "%v -> %v: shader and Go reference differ", from, to)
		}
	}
}
