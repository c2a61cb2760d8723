package ops_test

import (
	"context"
	"fmt"
	"log"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/ops"
)

// Adding a bias row to every row of a batch is a broadcast: no copy of
// the bias is made.
func ExampleAdd() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6})
	bias, _ := vkc.FromSlice(dev, []float32{10, 20, 30})
	y, _ := vkc.NewBuffer[float32](dev, 6)
	s := dev.Stream()
	if err := ops.Add(s, ops.Of(x, 2, 3), ops.Of(bias, 3), ops.Of(y, 2, 3)); err != nil {
		log.Fatal(err)
	}
	got, _ := y.Read(context.Background())
	fmt.Println(got)
	// Output: [11 22 33 14 25 36]
}

// A captured graph of ops over a dynamic tensor does as many rows as the
// param holds on each replay.
func ExampleTensor_Dynamic() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	rows, _ := vkc.NewParam[uint32](dev, 4)
	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6, 7, 8})
	y, _ := vkc.FromSlice(dev, make([]float32, 8))
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error {
		return ops.Softmax(s, ops.Of(x, 4, 2).Dynamic(rows), -1, ops.Of(y, 4, 2).Dynamic(rows))
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	for _, n := range []uint32{1, 3} {
		_ = rows.Set(n)
		_ = g.Replay()
		head, _ := y.View(0, 2*int(n))
		got, _ := head.Read(context.Background())
		fmt.Printf("%d rows: %.3f\n", n, got)
		head.Close()
	}
	// Output:
	// 1 rows: [0.269 0.731]
	// 3 rows: [0.269 0.731 0.269 0.731 0.269 0.731]
}

// A dense layer with a fused epilogue, then a softmax over each row: the
// weights are read transposed through their strides (no copy), and the
// bias and activation are applied inside the product. This is README's
// "The op library" example, as written there.
func ExampleMatmul() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	xb, _ := vkc.FromSlice(dev, []float32{1, 0, 2, -1, 1, 0}) // 2 rows of 3
	wb, _ := vkc.FromSlice(dev, []float32{1, 0, 1, 0, 1, 1})  // 2 outputs × 3 inputs
	bb, _ := vkc.FromSlice(dev, []float32{0.5, -0.5})
	hb, _ := vkc.NewBuffer[float32](dev, 4)
	pb, _ := vkc.NewBuffer[float32](dev, 4)
	s := dev.Stream()

	x, w, h, p := ops.Of(xb, 2, 3), ops.Of(wb, 2, 3), ops.Of(hb, 2, 2), ops.Of(pb, 2, 2)
	err = ops.Matmul(s, x, w.T(), h, ops.MatmulOptions[float32]{Bias: ops.Of(bb, 2), Activation: ops.ActRelu})
	if err == nil {
		err = ops.Softmax(s, h, -1, p) // along the last axis
	}
	if err != nil {
		log.Fatal(err)
	}
	hidden, _ := hb.Read(context.Background())
	probs, _ := pb.Read(context.Background())
	fmt.Println(hidden)
	fmt.Printf("%.3f\n", probs)
	// Output:
	// [3.5 1.5 0 0.5]
	// [0.881 0.119 0.378 0.622]
}

// A graph whose scalar and length change on every replay, with no
// re-capture: Scale reads its factor from a Param (ParamOf) and its
// length from another (Tensor.Dynamic), and Set changes both between
// replays. Elements past the length are left as they were.
func ExampleParamOf() {
	dev, err := vkc.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	s := dev.NewStream()

	x, _ := vkc.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6})
	y, _ := vkc.FromSlice(dev, []float32{0, 0, 0, 0, 0, 0})
	a, _ := vkc.NewParam(dev, float32(1)) // the scale
	n, _ := vkc.NewParam(dev, uint32(6))  // how many elements

	g, err := s.Capture(func(s *vkc.Stream) error {
		// y[:n] = a * x[:n]
		return ops.Scale(s, ops.ParamOf(a), ops.Of(x).Dynamic(n), ops.Of(y).Dynamic(n))
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	for _, step := range []struct {
		a float32
		n uint32
	}{{10, 2}, {100, 3}, {-1, 6}} {
		if err := a.Set(step.a); err != nil {
			log.Fatal(err)
		}
		if err := n.Set(step.n); err != nil {
			log.Fatal(err)
		}
		if err := g.Replay(); err != nil {
			log.Fatal(err)
		}
		ys, _ := y.ReadOn(context.Background(), s)
		fmt.Println(ys)
	}
	// A length above what the graph's buffers hold is refused at Set.
	fmt.Println(n.Set(7))
	// Output:
	// [10 20 3 4 5 6]
	// [100 200 300 4 5 6]
	// [-1 -2 -3 -4 -5 -6]
	// vkc: length 7 above 6, what the buffers of a live graph or a recording window sized by this param hold
}
