package vkdev

import (
	"errors"

	"github.com/vkcompute/vkc/recorder"
	"github.com/vkcompute/vkc/vk"
)

// sentinels maps each vk failure onto the recorder's sentinel for it. It is the
// only place below the root where a vk failure is named again. Order
// matters where a chain holds two: the first listed wins.
var sentinels = [...]struct {
	failure vk.Failure
	to      error
}{
	{vk.ErrOutOfDate, recorder.ErrOutOfDate},
	{vk.ErrNoPresentation, recorder.ErrNoPresentation},
	{vk.ErrDeviceLost, recorder.ErrDeviceLost},
	{vk.ErrOutOfDeviceMemory, recorder.ErrOutOfDeviceMemory},
	{vk.ErrClosed, recorder.ErrClosed},
	{vk.ErrBadSPIRV, recorder.ErrBadSPIRV},
	{vk.ErrNoLoader, recorder.ErrNoLoader},
	{vk.ErrNoDevice, recorder.ErrNoDevice},
	{vk.ErrBadAdoption, recorder.ErrBadAdoption},
	{vk.ErrUnsupported, recorder.ErrUnsupported},
}

// vkError is a vk error as the recorder sees it: vk's message and chain,
// matching the recorder's sentinel with errors.Is.
type vkError struct {
	sentinel error
	err      error
}

func (e *vkError) Error() string        { return e.err.Error() }
func (e *vkError) Unwrap() error        { return e.err }
func (e *vkError) Is(target error) bool { return target == e.sentinel }

// fromVK lowers an error of package vk onto the recorder's sentinels; an
// error that is none of vk's failures passes as it is.
func fromVK(err error) error {
	if err == nil {
		return nil
	}
	for _, m := range sentinels {
		if errors.Is(err, m.failure) {
			return &vkError{sentinel: m.to, err: err}
		}
	}
	return err
}
