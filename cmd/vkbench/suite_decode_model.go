package main

import (
	"math"
	"math/rand/v2"

	"github.com/vkcompute/vkc/ops"
)

// decodeConfig is the decode suite's model: a pre-norm transformer
// decoder (GPT-2's layout) of d-wide embeddings, layers blocks of heads
// attention heads and a ff-wide MLP, vocab tokens whose embedding is tied
// to the logits, and a context window of ctx positions.
type decodeConfig struct {
	d, layers, heads, vocab, ctx, ff int
	// fixedMatmul picks ops.Matmul's kernels by its fixed rule instead of
	// timing them: -quick checks that everything runs, and tuning would
	// compile every candidate kernel of every product's shape first.
	fixedMatmul bool
}

// decodeConfigFor is the model the suite runs: d=256, 4 layers of 4
// heads, a 1000-token vocabulary and 64 positions; with -quick a tiny one.
func decodeConfigFor(quick bool) decodeConfig {
	if quick {
		return decodeConfig{d: 32, layers: 2, heads: 2, vocab: 50, ctx: 8, ff: 128, fixedMatmul: true}
	}
	return decodeConfig{d: 256, layers: 4, heads: 4, vocab: 1000, ctx: 64, ff: 1024}
}

// matmul is the options of the model's products: o, with the kernels
// chosen by rule when fixedMatmul.
func (c decodeConfig) matmul(o ops.MatmulOptions[float32]) ops.MatmulOptions[float32] {
	o.Heuristic = c.fixedMatmul
	return o
}

// dh is the width of one head.
func (c decodeConfig) dh() int { return c.d / c.heads }

// params are the figure's parameters.
func (c decodeConfig) params() map[string]int64 {
	return map[string]int64{"d": int64(c.d), "layers": int64(c.layers), "heads": int64(c.heads),
		"vocab": int64(c.vocab), "ctx": int64(c.ctx)}
}

// decodeLayer is one block's weights, row-major, each matrix [in, out].
type decodeLayer struct {
	ln1G, ln1B []float32
	wqkv, bqkv []float32 // [d, 3d]: q, k and v side by side
	wo, bo     []float32 // [d, d]
	ln2G, ln2B []float32
	w1, b1     []float32 // [d, ff]
	w2, b2     []float32 // [ff, d]
}

// decodeWeights are the whole model's weights.
type decodeWeights struct {
	embed      []float32 // [vocab, d], also the logits' matrix (tied)
	pos        []float32 // [ctx, d], learned positions
	layers     []decodeLayer
	lnfG, lnfB []float32
}

// newDecodeWeights draws the weights from a seeded generator: matrices
// uniform in ±1/√fan-in, so activations stay of order 1, norms' gains
// near 1 and biases small.
func newDecodeWeights(c decodeConfig) decodeWeights {
	r := rand.New(rand.NewPCG(31, 37))
	uniform := func(n int, scale float64, base float32) []float32 {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = base + float32((r.Float64()*2-1)*scale)
		}
		return xs
	}
	inv := func(n int) float64 { return 1 / math.Sqrt(float64(n)) }
	w := decodeWeights{
		embed: uniform(c.vocab*c.d, 1, 0),
		pos:   uniform(c.ctx*c.d, 0.3, 0),
		lnfG:  uniform(c.d, 0.1, 1),
		lnfB:  uniform(c.d, 0.1, 0),
	}
	for range c.layers {
		w.layers = append(w.layers, decodeLayer{
			ln1G: uniform(c.d, 0.1, 1), ln1B: uniform(c.d, 0.1, 0),
			wqkv: uniform(c.d*3*c.d, inv(c.d), 0), bqkv: uniform(3*c.d, 0.1, 0),
			wo: uniform(c.d*c.d, inv(c.d), 0), bo: uniform(c.d, 0.1, 0),
			ln2G: uniform(c.d, 0.1, 1), ln2B: uniform(c.d, 0.1, 0),
			w1: uniform(c.d*c.ff, inv(c.d), 0), b1: uniform(c.ff, 0.1, 0),
			w2: uniform(c.ff*c.d, inv(c.ff), 0), b2: uniform(c.d, 0.1, 0),
		})
	}
	return w
}

// decodeEps is every LayerNorm's epsilon.
const decodeEps = 1e-5

// decodeRef is the model in float64 on the host, with its own K/V cache:
// the reference the device's logits are checked against.
type decodeRef struct {
	c      decodeConfig
	w      decodeWeights
	k, v   [][][]float64 // [layer][position][d]
	spread float64       // the largest max-minus-score of a softmax so far
}

func newDecodeRef(c decodeConfig, w decodeWeights) *decodeRef {
	r := &decodeRef{c: c, w: w}
	r.reset()
	return r
}

// reset empties the cache for a new sequence.
func (r *decodeRef) reset() {
	r.k = make([][][]float64, r.c.layers)
	r.v = make([][][]float64, r.c.layers)
}

// step runs token tok at position pos (the next one of the sequence) and
// returns the logits, and S: for each logit the sum of |xf_k·embed_jk|
// of its product, the scale its rounding errors are relative to.
func (r *decodeRef) step(tok, pos int) (logits, scale []float64) {
	c := r.c
	x := make([]float64, c.d)
	for i := range x {
		x[i] = float64(r.w.embed[tok*c.d+i]) + float64(r.w.pos[pos*c.d+i])
	}
	for l, lw := range r.w.layers {
		h := layerNorm64(x, lw.ln1G, lw.ln1B)
		qkv := affine64(h, lw.wqkv, lw.bqkv, 3*c.d)
		r.k[l] = append(r.k[l], qkv[c.d:2*c.d])
		r.v[l] = append(r.v[l], qkv[2*c.d:])
		attn := r.attend(l, qkv[:c.d])
		addInto(x, affine64(attn, lw.wo, lw.bo, c.d))
		u := affine64(layerNorm64(x, lw.ln2G, lw.ln2B), lw.w1, lw.b1, c.ff)
		for i := range u {
			u[i] = gelu64(u[i])
		}
		addInto(x, affine64(u, lw.w2, lw.b2, c.d))
	}
	xf := layerNorm64(x, r.w.lnfG, r.w.lnfB)
	logits = make([]float64, c.vocab)
	scale = make([]float64, c.vocab)
	for j := range logits {
		for i, xi := range xf {
			p := xi * float64(r.w.embed[j*c.d+i])
			logits[j] += p
			scale[j] += math.Abs(p)
		}
	}
	return logits, scale
}

// attend is softmax(q·Kᵀ/√dh)·V per head over the cached positions.
func (r *decodeRef) attend(l int, q []float64) []float64 {
	c := r.c
	dh := c.dh()
	out := make([]float64, c.d)
	n := len(r.k[l])
	for h := range c.heads {
		lo := h * dh
		s := make([]float64, n)
		top := math.Inf(-1)
		for j := range n {
			for i := lo; i < lo+dh; i++ {
				s[j] += q[i] * r.k[l][j][i]
			}
			s[j] /= math.Sqrt(float64(dh))
			top = max(top, s[j])
		}
		var sum float64
		for j := range s {
			r.spread = max(r.spread, top-s[j])
			s[j] = math.Exp(s[j] - top)
			sum += s[j]
		}
		for j := range n {
			for i := lo; i < lo+dh; i++ {
				out[i] += s[j] / sum * r.v[l][j][i]
			}
		}
	}
	return out
}

// layerNorm64 is (x - mean)/sqrt(var + eps)·g + b, var biased.
func layerNorm64(x []float64, g, b []float32) []float64 {
	var mean, sq float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sq += (v - mean) * (v - mean)
	}
	inv := 1 / math.Sqrt(sq/float64(len(x))+decodeEps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v-mean)*inv*float64(g[i]) + float64(b[i])
	}
	return y
}

// affine64 is x·W + b for W of len(x) rows and n columns.
func affine64(x []float64, w, b []float32, n int) []float64 {
	y := make([]float64, n)
	for j := range y {
		y[j] = float64(b[j])
	}
	for i, xi := range x {
		row := w[i*n : (i+1)*n]
		for j, wij := range row {
			y[j] += xi * float64(wij)
		}
	}
	return y
}

func addInto(x, y []float64) {
	for i := range x {
		x[i] += y[i]
	}
}

// gelu64 is GELU's tanh form, as ops.ActGelu.
func gelu64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}
