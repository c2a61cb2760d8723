package blackbox_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

// TestConcurrentStreams drives four streams from four goroutines, each on
// its own buffers: writes, launches (eager and through a captured graph),
// reads and syncs interleave on the shared device, queue, allocator,
// ledger and kernel cache. Run under -race; every result is checked.
func TestConcurrentStreams(t *testing.T) {
	dev := openDevice(t)
	const workers, rounds, n = 4, 12, 1000
	k := loadAffine(t, dev)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		s := dev.NewStream()
		wg.Go(func() { errs[w] = streamWorker(dev, s, k, w, rounds, n) })
	}
	wg.Wait()
	for w, err := range errs {
		assert.NoError(t, err, "worker %d", w)
	}
}

// streamWorker is one goroutine's loop; it returns the first wrong result
// or failed call (require must not be called off the test goroutine).
func streamWorker(dev *vkc.Device, s *vkc.Stream, k *vkc.Kernel, w, rounds, n int) (err error) {
	ctx := context.Background()
	var owned []interface{ Close() error }
	defer func() {
		for i := len(owned) - 1; i >= 0; i-- {
			if cerr := owned[i].Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	alloc := func(n int) (*vkc.Buffer[float32], error) {
		b, err := vkc.NewBuffer[float32](dev, n)
		if err == nil {
			owned = append(owned, b)
		}
		return b, err
	}
	x, err := alloc(n)
	if err != nil {
		return err
	}
	y, err := alloc(n)
	if err != nil {
		return err
	}
	z, err := alloc(n)
	if err != nil {
		return err
	}
	sum, err := alloc(1)
	if err != nil {
		return err
	}
	xs := randFloats(rng(11, w), n, -1, 1)
	if err := x.WriteOn(s, xs); err != nil {
		return err
	}
	// A graph per stream: z = 2*x + w, recorded on this worker's slot.
	g, err := s.Capture(func(s *vkc.Stream) error {
		return k.Launch(s, [3]uint32{uint32((n + 63) / 64), 1, 1}, affinePush(2, float32(w), uint32(n)), x, z)
	})
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	owned = append(owned, g)
	got := make([]float32, n)
	for r := range rounds {
		c := float32(w*100 + r)
		if err := vkc.Fill(s, y, c); err != nil {
			return err
		}
		if err := opAxpy(s, 1, x, y); err != nil {
			return err
		}
		if err := opSum(s, y, sum); err != nil {
			return err
		}
		if err := g.Replay(); err != nil {
			return err
		}
		if r%3 == 0 {
			if err := s.Sync(ctx); err != nil {
				return err
			}
		}
		if err := y.ReadInto(ctx, s, got); err != nil {
			return err
		}
		for i := range got {
			if got[i] != c+xs[i] {
				return fmt.Errorf("round %d: y[%d] = %g, want %g", r, i, got[i], c+xs[i])
			}
		}
		total, err := sum.ReadOn(ctx, s)
		if err != nil {
			return err
		}
		var want, mag float64
		for _, v := range got {
			want += float64(v)
			mag += math.Abs(float64(v))
		}
		if math.Abs(float64(total[0])-want) > ulps(64, mag) {
			return fmt.Errorf("round %d: sum %g, want %g", r, total[0], want)
		}
		if err := z.ReadInto(ctx, s, got); err != nil {
			return err
		}
		for i := range got {
			if want := 2*xs[i] + float32(w); got[i] != want {
				return fmt.Errorf("round %d: replayed z[%d] = %g, want %g", r, i, got[i], want)
			}
		}
		if r%4 == 3 {
			// Fresh inputs every few rounds, written while others launch.
			for i := range xs {
				xs[i] = -xs[i]
			}
			if err := x.WriteOn(s, xs); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestNewStreamConcurrentIDs(t *testing.T) {
	// Streams created from many goroutines at once get distinct ids, the
	// premise of driving one stream per goroutine.
	dev := openDevice(t)
	ids := map[uint64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			id := dev.NewStream().ID()
			mu.Lock()
			ids[id] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, ids, 8)
}
