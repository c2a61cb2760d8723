package vkc

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openTest opens the default device with the validation layer on (sync
// validation too when asked) and, at cleanup, closes it and fails the test
// on any validation message or any Vulkan object left alive.
func openTest(t testing.TB, opts ...Option) *Device {
	t.Helper()
	_, bench := t.(*testing.B)
	all := append([]Option{WithValidation(!bench)}, opts...)
	dev, err := Open(all...)
	require.NoError(t, err)
	t.Cleanup(func() { closeAndCheck(t, dev) })
	return dev
}

// closeAndCheck closes dev and checks it leaked nothing and the layer was silent.
func closeAndCheck(t testing.TB, dev *Device) {
	t.Helper()
	assert.NoError(t, dev.Close())
	assert.Empty(t, dev.LiveObjects(), "Vulkan objects alive after Close")
	errs, warns, recent := dev.ValidationMessages()
	assert.Zero(t, errs+warns, "validation messages: %q", recent)
}

// syncValidation reports whether tests should also turn on synchronization
// validation (VKC_SYNC_VALIDATION=0 turns it off where it is too slow).
func syncValidation() bool { return os.Getenv("VKC_SYNC_VALIDATION") != "0" }

// readAll reads a buffer on the default stream, failing the test on error.
func readAll[T Element](t testing.TB, b *Buffer[T]) []T {
	t.Helper()
	out, err := b.Read(context.Background())
	require.NoError(t, err)
	return out
}
