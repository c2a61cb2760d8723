package blackbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
)

func TestEndToEndEagerAndCapture(t *testing.T) {
	dev, err := vkc.Open(vkc.WithValidation(true))
	require.NoError(t, err)
	defer dev.Close()
	x, err := vkc.FromSlice(dev, []float32{1, 2, 3})
	require.NoError(t, err)
	y, err := vkc.FromSlice(dev, []float32{10, 20, 30})
	require.NoError(t, err)
	require.NoError(t, opAxpy(dev.Stream(), 2, x, y))
	out, err := y.Read(context.Background())
	require.NoError(t, err)
	require.Equal(t, []float32{12, 24, 36}, out)
	g, err := dev.Stream().Capture(func(s *vkc.Stream) error { return opAxpy(s, 1, x, y) })
	require.NoError(t, err)
	out, _ = y.Read(context.Background())
	require.Equal(t, []float32{13, 26, 39}, out)
	require.NoError(t, g.Replay())
	require.NoError(t, g.Replay())
	out, err = y.Read(context.Background())
	require.NoError(t, err)
	require.Equal(t, []float32{15, 30, 45}, out)
	s1 := dev.NewStream()
	big := make([]float32, 100000)
	for i := range big {
		big[i] = 1
	}
	b, _ := vkc.FromSlice(dev, big)
	o, _ := vkc.NewBuffer[float32](dev, 1)
	require.NoError(t, opSum(s1, b, o))
	r, err := o.ReadOn(context.Background(), s1)
	require.NoError(t, err)
	require.Equal(t, float32(100000), r[0])
	_, err = vkc.NewBuffer[float32](dev, 5)
	require.NoError(t, err)
	u, _ := vkc.NewBuffer[float32](dev, 5)
	_, err = u.Read(context.Background())
	require.ErrorIs(t, err, vkc.ErrUnwritten)
	require.ErrorIs(t, err, vkc.ErrNeverWritten)
	require.NoError(t, g.Close())
	require.NoError(t, dev.Close())
	require.Empty(t, dev.LiveObjects())
	e, w, msgs := dev.ValidationMessages()
	require.Zero(t, e+w, msgs)
}
