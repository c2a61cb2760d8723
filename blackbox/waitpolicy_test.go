package blackbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// A device computes the same under every wait policy, chosen by option or
// by VKC_WAIT_POLICY, and Open refuses a policy that is none of them.
func TestEveryWaitPolicyComputesTheSame(t *testing.T) {
	t.Setenv("VKC_WAIT_POLICY", "")
	for _, p := range []vkc.WaitPolicy{vkc.WaitAuto, vkc.WaitSpin, vkc.WaitYield, vkc.WaitBlock} {
		for _, byEnv := range []bool{false, true} {
			var opts []vkc.Option
			if byEnv {
				t.Setenv("VKC_WAIT_POLICY", p.String())
			} else {
				opts = append(opts, vkc.WithWaitPolicy(p))
			}
			dev := openDevice(t, opts...)
			xs, ys := make([]float32, 1000), make([]float32, 1000)
			for i := range xs {
				xs[i], ys[i] = float32(i), 1
			}
			x, y := upload(t, dev, xs), upload(t, dev, ys)
			for range 5 { // five launches, each a wait under eager use
				require.NoError(t, opAxpy(dev.Stream(), 2, x, y))
				require.NoError(t, dev.Stream().Sync(testCtx(t)))
			}
			got, err := y.Read(testCtx(t))
			require.NoError(t, err)
			for i, v := range got {
				require.Equal(t, float32(1+10*i), v, "%v (by env: %v): y[%d]", p, byEnv, i)
			}
			require.NoError(t, dev.Close())
			t.Setenv("VKC_WAIT_POLICY", "")
		}
	}
	_, err := vkc.Open(vkc.WithWaitPolicy(vkc.WaitPolicy(9)))
	require.ErrorIs(t, err, vkc.ErrWaitPolicy)
	t.Setenv("VKC_WAIT_POLICY", "busy")
	_, err = vkc.Open()
	require.ErrorIs(t, err, vkc.ErrWaitPolicy)
	require.Equal(t, "WaitPolicy(9)", vkc.WaitPolicy(9).String())
}

// Open reads VKC_WAIT_POLICY with spaces trimmed and case ignored, and
// WithWaitPolicy wins over an invalid value without reading it.
func TestWaitPolicyVariableSpellingAndPrecedence(t *testing.T) {
	t.Setenv("VKC_WAIT_POLICY", "  Block\t")
	dev := openDevice(t)
	x := upload(t, dev, filled(64, 2))
	require.NoError(t, opScale(dev.Stream(), 3, x, x))
	require.Equal(t, filled(64, 6), read(t, dev.Stream(), x))

	t.Setenv("VKC_WAIT_POLICY", "busy")
	_, err := vkc.Open()
	require.ErrorIs(t, err, vkc.ErrWaitPolicy, "an invalid value alone")
	dev = openDevice(t, vkc.WithWaitPolicy(vkc.WaitYield))
	y := upload(t, dev, filled(64, 2))
	require.NoError(t, opScale(dev.Stream(), 3, y, y))
	require.Equal(t, filled(64, 6), read(t, dev.Stream(), y), "the option wins")
}
