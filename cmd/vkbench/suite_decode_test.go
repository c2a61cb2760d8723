package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The decode suite, quick: every step of a context window, eager and
// replayed, matches the float64 model, and it reports both ways' host and
// device time per step.
func TestDecodeSuite(t *testing.T) {
	res, err := runDecode(quickSettings())
	require.NoError(t, err)
	require.Empty(t, res.Failures)
	require.Len(t, res.Figures, len(decodeWays))
	for i, f := range res.Figures {
		assert.Equal(t, "decode", f.Suite)
		assert.Equal(t, decodeWays[i], f.Name)
		assert.Equal(t, "us/step", f.Unit)
		assert.Positive(t, f.Value, f.Name)
		assert.Positive(t, f.Device, f.Name)
		assert.Equal(t, decodeConfigFor(true).params(), f.Params)
	}
}

// The decode check passes the reference's own logits, and fails a logit
// moved past its tolerance and an argmax that is not the largest logit.
func TestDecodeCheckCatchesWrongResults(t *testing.T) {
	c := decodeConfigFor(true)
	ref := newDecodeRef(c, newDecodeWeights(c))
	want, scale := ref.step(decodeFirstToken, 0)
	coef := decodeErrorCoefficient(c, ref.spread)
	got := make([]float32, len(want))
	best := 0
	for j, v := range want {
		got[j] = float32(v)
		if v > want[best] {
			best = j
		}
	}
	require.NoError(t, checkDecodeStep("eager", 0, got, uint32(best), want, scale, coef))

	other := (best + 1) % len(want)
	require.ErrorIs(t, checkDecodeStep("eager", 0, got, uint32(other), want, scale, coef), ErrMismatch)

	moved := append([]float32(nil), got...)
	moved[3] += 0.01 * float32(scale[3])
	err := checkDecodeStep("eager", 0, moved, uint32(best), want, scale, coef)
	require.ErrorIs(t, err, ErrMismatch)
	assert.Contains(t, err.Error(), "logit 3")

}
