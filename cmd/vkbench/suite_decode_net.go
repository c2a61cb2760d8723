package main

import (
	"context"
	"errors"
	"math"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// decodeBlock is one block's weights on the device.
type decodeBlock struct {
	ln1G, ln1B, wqkv, bqkv, wo, bo, ln2G, ln2B, w1, b1, w2, b2 *vkc.Buffer[float32]
	kv                                                         *vkc.Buffer[float32] // the K/V cache, [ctx, 2d]: k then v per position
}

// decodeNet is the model on the device: its weights, its caches, the
// inputs written before every step (the token, its position and the
// caches' length, a param) and the step's activations, reused by every
// layer and step.
type decodeNet struct {
	c       decodeConfig
	embed   *vkc.Buffer[float32]
	posEmb  *vkc.Buffer[float32]
	blocks  []decodeBlock
	lnfG    *vkc.Buffer[float32]
	lnfB    *vkc.Buffer[float32]
	tok     *vkc.Buffer[uint32] // [1]: the input token
	pos     *vkc.Buffer[uint32] // [1]: its position, 0 for a sequence's first
	argmax  *vkc.Buffer[uint32] // [1]: the step's output, the next token
	logits  *vkc.Buffer[float32]
	length  *vkc.Param[uint32]   // the positions cached once the step has added its own: pos+1
	x, pe   *vkc.Buffer[float32] // the residual stream, the position's embedding
	h, xf   *vkc.Buffer[float32] // a norm's output
	qkv     *vkc.Buffer[float32]
	prod    *vkc.Buffer[float32] // [ctx, heads, dh]: q·k or p·v per cached position, before the sums
	scores  *vkc.Buffer[float32] // [ctx, heads]
	attn, o *vkc.Buffer[float32]
	u, m    *vkc.Buffer[float32] // the MLP's hidden layer and output
	zeros   []float32            // a cache's worth
	closers []func() error
}

// newDecodeNet uploads the weights and makes the buffers.
func newDecodeNet(dev *vkc.Device, c decodeConfig, w decodeWeights) (n *decodeNet, err error) {
	n = &decodeNet{c: c, zeros: make([]float32, c.ctx*2*c.d)}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.close())
		}
	}()
	up := func(xs []float32) *vkc.Buffer[float32] {
		return keep(n, &err, func() (*vkc.Buffer[float32], error) { return vkc.FromSlice(dev, xs) })
	}
	f32 := func(len int) *vkc.Buffer[float32] {
		return keep(n, &err, func() (*vkc.Buffer[float32], error) { return vkc.NewBuffer[float32](dev, len) })
	}
	u32 := func() *vkc.Buffer[uint32] {
		return keep(n, &err, func() (*vkc.Buffer[uint32], error) { return vkc.NewBuffer[uint32](dev, 1) })
	}
	n.embed, n.posEmb, n.lnfG, n.lnfB = up(w.embed), up(w.pos), up(w.lnfG), up(w.lnfB)
	for _, l := range w.layers {
		n.blocks = append(n.blocks, decodeBlock{
			ln1G: up(l.ln1G), ln1B: up(l.ln1B), wqkv: up(l.wqkv), bqkv: up(l.bqkv), wo: up(l.wo), bo: up(l.bo),
			ln2G: up(l.ln2G), ln2B: up(l.ln2B), w1: up(l.w1), b1: up(l.b1), w2: up(l.w2), b2: up(l.b2),
			kv: up(n.zeros),
		})
	}
	n.tok, n.pos, n.argmax = u32(), u32(), u32()
	n.x, n.pe, n.h, n.xf, n.attn, n.o, n.m = f32(c.d), f32(c.d), f32(c.d), f32(c.d), f32(c.d), f32(c.d), f32(c.d)
	n.qkv, n.prod, n.scores, n.u, n.logits = f32(3*c.d), f32(c.ctx*c.d), f32(c.ctx*c.heads), f32(c.ff), f32(c.vocab)
	if err == nil {
		if n.length, err = vkc.NewParam[uint32](dev, 1); err == nil {
			n.closers = append(n.closers, n.length.Close)
		}
	}
	return n, err
}

// keep makes a buffer with mk unless *err is set, and closes it with n;
// the first failure lands in *err.
func keep[T vkc.Element](n *decodeNet, err *error, mk func() (*vkc.Buffer[T], error)) *vkc.Buffer[T] {
	if *err != nil {
		return nil
	}
	b, e := mk()
	if e != nil {
		*err = e
		return nil
	}
	n.closers = append(n.closers, b.Close)
	return b
}

// close frees every buffer.
func (n *decodeNet) close() error {
	var errs []error
	for i := len(n.closers) - 1; i >= 0; i-- {
		errs = append(errs, n.closers[i]())
	}
	return errors.Join(errs...)
}

// startSequence empties the K/V caches on s: the step adds a position's
// k and v into its (zero) cache row.
func (n *decodeNet) startSequence(s *vkc.Stream) error {
	for _, b := range n.blocks {
		if err := b.kv.WriteOn(s, n.zeros); err != nil {
			return err
		}
	}
	return nil
}

// setInputs writes the step's token and position on s, and sets the
// caches' length to the positions the step attends to (pos+1).
func (n *decodeNet) setInputs(s *vkc.Stream, tok, pos int) error {
	return errors.Join(n.tok.WriteOn(s, []uint32{uint32(tok)}), n.pos.WriteOn(s, []uint32{uint32(pos)}),
		n.length.Set(uint32(pos+1)))
}

// readArgmax waits for s and returns the step's argmax.
func (n *decodeNet) readArgmax(ctx context.Context, s *vkc.Stream) (uint32, error) {
	out := make([]uint32, 1)
	err := n.argmax.ReadInto(ctx, s, out)
	return out[0], err
}

// all runs fs in order and stops at the first error.
func all(fs ...func() error) error {
	for _, f := range fs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// step queues one decode step on s, ops only: the token's embedding plus
// its position's (two Gathers), each block, the final norm, the logits
// against the tied embedding (a transposed view) and their argmax.
func (n *decodeNet) step(s *vkc.Stream) error {
	c := n.c
	row := func(b *vkc.Buffer[float32]) ops.Tensor[float32] { return ops.Of(b, 1, b.Len()) }
	err := all(
		func() error { return ops.Gather(s, ops.Of(n.embed, c.vocab, c.d), ops.Of(n.tok), row(n.x)) },
		func() error { return ops.Gather(s, ops.Of(n.posEmb, c.ctx, c.d), ops.Of(n.pos), row(n.pe)) },
		func() error { return ops.Add(s, row(n.x), row(n.pe), row(n.x)) },
	)
	if err != nil {
		return err
	}
	for _, b := range n.blocks {
		if err := n.block(s, b); err != nil {
			return err
		}
	}
	return all(
		func() error {
			return ops.LayerNorm(s, row(n.x), ops.Of(n.lnfG), ops.Of(n.lnfB), ops.Const(decodeEps), row(n.xf))
		},
		func() error {
			return ops.Matmul(s, row(n.xf), ops.Of(n.embed, c.vocab, c.d).T(), row(n.logits), c.matmul(ops.MatmulOptions[float32]{}))
		},
		func() error { return ops.Argmax(s, row(n.logits), -1, ops.Of(n.argmax)) },
	)
}

// block queues one pre-norm transformer block: attention over the cache
// with the position's k and v added into it first, then the MLP, each
// added to the residual stream. The attention covers the cache's first
// length positions alone: the cache, the products and the scores are
// dynamic on the length param, so a captured step follows it with no
// mask and no work past the cached positions.
func (n *decodeNet) block(s *vkc.Stream, b decodeBlock) error {
	c := n.c
	d, dh, H := c.d, c.dh(), c.heads
	row := func(b *vkc.Buffer[float32]) ops.Tensor[float32] { return ops.Of(b, 1, b.Len()) }
	qkv := ops.Of(n.qkv, 1, 3*d)
	// The cache as [ctx, heads, dh] views, the first length positions:
	// k at offset 0 of each row, v at d.
	kCache := ops.Strided(b.kv, 0, []int{c.ctx, H, dh}, []int{2 * d, dh, 1}).Dynamic(n.length)
	vCache := ops.Strided(b.kv, d, []int{c.ctx, H, dh}, []int{2 * d, dh, 1}).Dynamic(n.length)
	q := ops.Of(n.qkv, 3*d).Slice(0, 0, d).Reshape(1, H, dh).BroadcastTo(c.ctx, H, dh)
	prod := ops.Of(n.prod, c.ctx, H, dh).Dynamic(n.length)
	scores := ops.Of(n.scores, c.ctx, H).Dynamic(n.length)
	// p_j, each head's weight of position j, repeated over the head's dh.
	weights := ops.Of(n.scores, c.ctx, H, 1).Dynamic(n.length).BroadcastTo(c.ctx, H, dh)
	return all(
		func() error {
			return ops.LayerNorm(s, row(n.x), ops.Of(b.ln1G), ops.Of(b.ln1B), ops.Const(decodeEps), row(n.h))
		},
		func() error {
			return ops.Matmul(s, row(n.h), ops.Of(b.wqkv, d, 3*d), qkv, c.matmul(ops.MatmulOptions[float32]{Bias: ops.Of(b.bqkv)}))
		},
		// Cache row pos += [k v] (the row is zero: a sequence starts with
		// an empty cache), the row chosen by the pos buffer on the device.
		func() error { return ops.ScatterAdd(s, qkv.Slice(1, d, 3*d), ops.Of(n.pos), ops.Of(b.kv, c.ctx, 2*d)) },
		// scores[j, h] = q_h·k_jh/√dh, softmax over j < length, then
		// attn_h = Σ_j p_jh·v_jh.
		func() error { return ops.Mul(s, kCache, q, prod) },
		func() error { return ops.Sum(s, prod, -1, scores) },
		func() error { return ops.Scale(s, ops.Const(1/math.Sqrt(float64(dh))), scores, scores) },
		func() error { return ops.Softmax(s, scores, 0, scores) },
		func() error { return ops.Mul(s, vCache, weights, prod) },
		func() error { return ops.Sum(s, prod, 0, ops.Of(n.attn, H, dh)) },
		func() error {
			return ops.Matmul(s, row(n.attn), ops.Of(b.wo, d, d), row(n.o), c.matmul(ops.MatmulOptions[float32]{Bias: ops.Of(b.bo)}))
		},
		func() error { return ops.Add(s, row(n.x), row(n.o), row(n.x)) },
		func() error {
			return ops.LayerNorm(s, row(n.x), ops.Of(b.ln2G), ops.Of(b.ln2B), ops.Const(decodeEps), row(n.h))
		},
		func() error {
			return ops.Matmul(s, row(n.h), ops.Of(b.w1, d, c.ff), row(n.u), c.matmul(ops.MatmulOptions[float32]{Bias: ops.Of(b.b1), Activation: ops.ActGelu}))
		},
		func() error {
			return ops.Matmul(s, row(n.u), ops.Of(b.w2, c.ff, d), row(n.m), c.matmul(ops.MatmulOptions[float32]{Bias: ops.Of(b.b2)}))
		},
		func() error { return ops.Add(s, row(n.x), row(n.m), row(n.x)) },
	)
}
