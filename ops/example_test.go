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
