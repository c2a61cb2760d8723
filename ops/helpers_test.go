package ops

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc"
)

// TestMain points the user's cache directory at a temporary one, so the
// devices these tests open keep their pipeline caches there.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vkc-ops-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Unsetenv("VKC_PIPELINE_CACHE")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// openTest opens a device (the validation layer on, except in benchmarks)
// and, at cleanup, closes it and fails the test on any validation message,
// any Vulkan object left alive, or the ops cache keeping the device.
func openTest(t testing.TB) *vkc.Device {
	t.Helper()
	_, bench := t.(*testing.B)
	dev, err := vkc.Open(vkc.WithValidation(!bench))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, dev.Close())
		assert.Empty(t, dev.LiveObjects(), "Vulkan objects alive after Close")
		errs, warns, recent := dev.ValidationMessages()
		assert.Zero(t, errs+warns, "validation messages: %q", recent)
		cache.mu.Lock()
		_, kept := cache.devs[dev]
		cache.mu.Unlock()
		assert.False(t, kept, "the ops kernel cache keeps a closed device")
	})
	return dev
}

// fromFloat is v as a T: rounded to nearest for the floats, truncated for
// the integers.
func fromFloat[T vkc.Element](v float64) T {
	var z T
	switch p := any(&z).(type) {
	case *float32:
		*p = float32(v)
	case *float64:
		*p = v
	case *vkc.Float16:
		*p = vkc.Float16From(float32(v))
	case *vkc.BFloat16:
		*p = vkc.BFloat16From(float32(v))
	case *int32:
		*p = int32(v)
	case *uint32:
		*p = uint32(v)
	case *int8:
		*p = int8(v)
	case *uint8:
		*p = uint8(v)
	case *int16:
		*p = int16(v)
	case *uint16:
		*p = uint16(v)
	case *int64:
		*p = int64(v)
	case *uint64:
		*p = uint64(v)
	}
	return z
}

// toFloat is x's exact value as a float64.
func toFloat[T vkc.Element](x T) float64 {
	switch v := any(x).(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	case vkc.Float16:
		return float64(v.Float32())
	case vkc.BFloat16:
		return float64(v.Float32())
	case int32:
		return float64(v)
	case uint32:
		return float64(v)
	case int8:
		return float64(v)
	case uint8:
		return float64(v)
	case int16:
		return float64(v)
	case uint16:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return math.NaN()
}

// randomValues is n values a T holds exactly, from lo to hi (whole numbers
// for the integer types), drawn from rng.
func randomValues[T vkc.Element](rng *rand.Rand, n int, lo, hi float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		v := lo + (hi-lo)*rng.Float64()
		if !typeOf[T]().float {
			v = math.Round(v)
		}
		out[i] = toFloat(fromFloat[T](v))
	}
	return out
}

// upload makes a buffer holding vs as T.
func upload[T vkc.Element](t testing.TB, dev *vkc.Device, vs []float64) *vkc.Buffer[T] {
	t.Helper()
	xs := make([]T, len(vs))
	for i, v := range vs {
		xs[i] = fromFloat[T](v)
	}
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// fresh makes a buffer of n elements no work has written.
func fresh[T vkc.Element](t testing.TB, dev *vkc.Device, n int) *vkc.Buffer[T] {
	t.Helper()
	b, err := vkc.NewBuffer[T](dev, n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// download reads b as float64s.
func download[T vkc.Element](t testing.TB, b *vkc.Buffer[T]) []float64 {
	t.Helper()
	xs, err := b.Read(context.Background())
	require.NoError(t, err)
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = toFloat(x)
	}
	return out
}

// unit is the unit roundoff of T's arithmetic: half the gap between 1 and
// the next value (0 for the integers, which are exact).
func unit[T vkc.Element]() float64 {
	switch typeOf[T]().suffix {
	case "f32":
		return 0x1p-24
	case "f16":
		return 0x1p-11
	case "f64":
		return 0x1p-53
	}
	return 0
}

// tiny is the most rounding to T moves a value below T's smallest normal
// number: half the gap between subnormals.
func tiny[T vkc.Element]() float64 {
	switch typeOf[T]().suffix {
	case "f32":
		return 0x1p-150
	case "f16":
		return 0x1p-25
	}
	return 0
}

// computeUnit is the unit roundoff of the type T computes in: float32's
// for Float16.
func computeUnit[T vkc.Element]() float64 {
	if typeOf[T]().suffix == "f16" {
		return 0x1p-24
	}
	return unit[T]()
}

// gather reads the elements of l from all, row-major.
func gatherLayout(all []float64, l layout) []float64 {
	idx := indices(l)
	out := make([]float64, len(idx))
	for i, at := range idx {
		out[i] = all[at]
	}
	return out
}

// within checks got against want element by element: |got - want| at
// most tol(i).
func within(t testing.TB, what string, got, want []float64, tol func(i int) float64) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	bad := 0
	for i := range want {
		d := math.Abs(got[i] - want[i])
		if !(d <= tol(i)) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) && !(math.IsInf(want[i], 0) && got[i] == want[i]) {
			if bad < 5 {
				t.Errorf("%s: element %d: got %v, want %v (tolerance %g)", what, i, got[i], want[i], tol(i))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements outside tolerance", what, bad, len(want))
	}
}

// overBudget is a length whose loop, one element a lane and 64 lanes a
// group, runs past a CPU driver's loop budget (loopBudget) in one
// invocation, by 1024 iterations.
const overBudget = wg * (loopBudget + 1024)

// constants is a buffer of n float32 copies of v.
func constants(t *testing.T, dev *vkc.Device, n int, v float32) *vkc.Buffer[float32] {
	t.Helper()
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = v
	}
	b, err := vkc.FromSlice(dev, xs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// requireEvery fails the test unless every element of b is want, naming
// how many are not and the first.
func requireEvery[T vkc.Element](t *testing.T, b *vkc.Buffer[T], want T) {
	t.Helper()
	xs, err := b.Read(t.Context())
	require.NoError(t, err)
	bad, first := 0, -1
	for i, x := range xs {
		if x != want {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	require.Zero(t, bad, "%d of %d elements are not %v, the first at %d", bad, len(xs), want, first)
}

// refusedOnCPU reports whether err is a CPU driver's refusal (wrapping
// vkc.ErrUnsupported, the op having written nothing); on any other
// device, or where err is nil, it requires err nil and reports false.
func refusedOnCPU(t *testing.T, dev *vkc.Device, err error) bool {
	t.Helper()
	if err != nil && dev.Info().Type == vkc.TypeCPU {
		require.ErrorIs(t, err, vkc.ErrUnsupported)
		return true
	}
	require.NoError(t, err)
	return false
}
