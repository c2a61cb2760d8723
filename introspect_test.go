package vkc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStreamCapturingFollowsTheWindow(t *testing.T) {
	dev := openTest(t)
	s := dev.NewStream()
	assert.False(t, s.Capturing())
	require.NoError(t, s.PrepareCapture())
	assert.True(t, s.Capturing(), "the warmup runs inside the window")
	require.NoError(t, s.BeginCapture())
	assert.True(t, s.Capturing())
	g, err := s.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Close())
	assert.False(t, s.Capturing())
	g, err = s.Capture(func(in *Stream) error {
		assert.True(t, in.Capturing())
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, g.Close())
	var nilStream *Stream
	assert.False(t, nilStream.Capturing())
}

func TestPipelineCacheDirIsTheOneOpenUsed(t *testing.T) {
	dir := t.TempDir()
	dev := openTest(t, WithPipelineCache(dir))
	assert.Equal(t, dir, dev.PipelineCacheDir())
	off := openTest(t, WithPipelineCache(""))
	assert.Empty(t, off.PipelineCacheDir())
	var nilDevice *Device
	assert.Empty(t, nilDevice.PipelineCacheDir())
}
