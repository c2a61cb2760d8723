package recorder_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
)

// A texel binding views the whole texels of the claim bound: a claim whose
// tail is short of a texel binds without that tail, which the kernel
// cannot read anyway. A kernel whose texel binding is written, or lies past
// its bindings, is refused when it is built.
func TestTexelBindingsViewWholeTexels(t *testing.T) {
	g := newRig(t, true, recorder.Options{})
	for _, texels := range []uint32{0b10, 0b100} {
		_, err := g.r.NewKernel(code, recorder.PipelineDesc{Name: "copy", Bindings: 2, Writes: 0b10, Texels: texels, PushSize: 4})
		require.ErrorContains(t, err, "texel bindings", "texels %#b", texels)
	}
	k, err := g.r.NewKernel(code, recorder.PipelineDesc{Name: "copy", Bindings: 2, Writes: 0b10, Texels: 0b01, PushSize: 4})
	require.NoError(t, err)
	src, err := g.r.Alloc(alloc.DeviceLocal, 4*(n+2)) // n words and half a texel
	require.NoError(t, err)
	require.NoError(t, g.write(0, src, nil, append(ramp(1), 0, 0)))
	dst := g.buf()
	require.NoError(t, g.r.Launch(0, k, &recorder.Launch{Args: []capture.Binding{rd(src), wr(dst)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)}))
	g.mustRead(0, dst, ramp(1))
	require.NoError(t, k.Release())
	g.close()
}

// A texel range the device refuses (here at an offset short of its texel
// alignment) fails the launch: its output reads as unwritten with the
// device's error, the set it was written into is freed at once, and in a
// recording window the failure dooms the window.
func TestRefusedTexelRangeFailsTheLaunch(t *testing.T) {
	g := newRig(t, true, recorder.Options{})
	k, err := g.r.NewKernel(code, recorder.PipelineDesc{Name: "copy", Bindings: 2, Writes: 0b10, Texels: 0b01, PushSize: 4})
	require.NoError(t, err)
	whole, err := g.r.Alloc(alloc.DeviceLocal, 4*(n+4))
	require.NoError(t, err)
	require.NoError(t, g.write(0, whole, nil, append(ramp(1), 0, 0, 0, 0)))
	askew := alloc.Claim{Page: whole.Page, Offset: whole.Offset + 4, Size: 4 * n} // 4 bytes into its texel
	sets := func() int64 { return g.dev.Live()["descriptor-set"] }
	before := sets()
	dst := g.buf()
	launch := func() error {
		return g.r.Launch(0, k, &recorder.Launch{Args: []capture.Binding{rd(askew), wr(dst)}, Groups: [3]uint32{1, 1, 1}, Push: words(n)})
	}
	err = launch()
	require.ErrorContains(t, err, "minTexelBufferOffsetAlignment")
	g.requireUnwritten(0, dst, err)
	require.Equal(t, before, sets(), "the refused set is freed")

	require.NoError(t, g.r.PrepareCapture(0))
	require.NoError(t, g.r.BeginCapture(0))
	require.Error(t, launch())
	_, err = g.r.EndCapture(0)
	require.ErrorContains(t, err, "minTexelBufferOffsetAlignment", "the window is doomed by the refusal")
	require.Equal(t, before, sets(), "the refused set is freed")
	require.NoError(t, k.Release())
	g.close()
}
