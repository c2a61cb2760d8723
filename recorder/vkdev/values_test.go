package vkdev_test

import (
	"encoding/binary"
	"math"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/capture"
)

// n is the element count of every buffer the adapter test uses.
const n = 16

func rd(c alloc.Claim) capture.Binding { return capture.Binding{Claim: c} }
func wr(c alloc.Claim) capture.Binding { return capture.Binding{Claim: c, Write: true} }
func rw(c alloc.Claim) capture.Binding { return capture.Binding{Claim: c, Write: true, Read: true} }

func bits(v float32) uint32 { return math.Float32bits(v) }

// words packs push constants.
func words(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, w := range v {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

func bytesOf(v []float32) []byte {
	w := make([]uint32, len(v))
	for i, f := range v {
		w[i] = math.Float32bits(f)
	}
	return words(w...)
}

func floatsOf(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// ramp is base, base+1, ... (n values).
func ramp(base float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = base + float32(i)
	}
	return v
}

// splat is n copies of x.
func splat(x float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = x
	}
	return v
}

func addf(x, y []float32) []float32 {
	z := make([]float32, len(x))
	for i := range z {
		z[i] = x[i] + y[i]
	}
	return z
}

func axpyf(a float32, x, y []float32) []float32 {
	z := make([]float32, len(x))
	for i := range z {
		z[i] = a*x[i] + y[i]
	}
	return z
}
