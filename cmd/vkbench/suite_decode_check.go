package main

import (
	"fmt"
	"math"
)

// decodeErrorCoefficient is G in the decode check's tolerance
// G·u·(S_j + 1) on logit j (u = 2⁻²⁴, S_j = Σ_k |xf_k·embed_jk|): the
// per-op bounds of the ops and matmul guides, in units of u relative to
// each op's own scale, added along the step's chain of dependent ops —
// a first-order bound that passes each op's relative error on unamplified
// (LayerNorm rescales its input, so an error relative to the residual
// stream stays relative to it). spread is the largest max-minus-score of
// the softmaxes (the reference's), which the guide's softmax bound needs.
func decodeErrorCoefficient(c decodeConfig, spread float64) float64 {
	matmul := func(k int) float64 { return float64(k + 2 + 1 + 17) } // (K+2)u·S + u|C| + 10⁻⁶(S+1)
	layerNorm := float64(4*c.d + 16 + 2)
	softmax := (6+4*spread)*2 + float64(c.ctx) + 5 + 1
	const add, scale = 4, 2
	perLayer := layerNorm + matmul(c.d) + matmul(c.dh()) + scale + softmax + matmul(c.ctx) + // attention
		matmul(c.d) + add + // output projection and residual
		layerNorm + matmul(c.d) + matmul(c.ff) + add // the MLP and residual
	return float64(c.layers)*perLayer + 2 + add + layerNorm + matmul(c.d) // embeddings, final norm, logits
}

// checkDecodeStep compares one step's logits with the reference's (want,
// with scale S per logit), each within coef·u·(S_j + 1), and checks that
// the argmax is the first largest of the device's own logits. Together
// they bound the argmax: it is the reference's unless the reference's two
// logits lie closer than their tolerances (a tie no float32 run can be
// held to).
func checkDecodeStep(what string, step int, got []float32, arg uint32, want, scale []float64, coef float64) error {
	const u = 0x1p-24
	best := 0
	for j := range want {
		tol := coef * u * (scale[j] + 1)
		if d := math.Abs(float64(got[j]) - want[j]); !(d <= tol) {
			return fmt.Errorf("%w: decode %s, step %d: logit %d is %g, the reference's %g (tolerance %.3g)", ErrMismatch, what, step, j, got[j], want[j], tol)
		}
		if got[j] > got[best] {
			best = j
		}
	}
	if int(arg) != best {
		return fmt.Errorf("%w: decode %s, step %d: argmax is %d, the largest logit is %d's", ErrMismatch, what, step, arg, best)
	}
	return nil
}
