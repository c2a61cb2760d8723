package vkdev

import (
	"errors"

	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/vk"
)

// sentinels maps each vk failure onto vkc's sentinel for it (package errs).
// It is the only place where a vk failure is named again. Order
// matters where a chain holds two: the first listed wins.
var sentinels = [...]struct {
	failure vk.Failure
	to      error
}{
	{vk.ErrOutOfDate, errs.OutOfDate},
	{vk.ErrNoPresentation, errs.NoPresentation},
	{vk.ErrDeviceLost, errs.DeviceLost},
	{vk.ErrOutOfDeviceMemory, errs.OutOfDeviceMemory},
	{vk.ErrClosed, errs.Closed},
	{vk.ErrBadSPIRV, errs.BadSPIRV},
	{vk.ErrNoLoader, errs.NoLoader},
	{vk.ErrNoDevice, errs.NoDevice},
	{vk.ErrBadAdoption, errs.BadAdoption},
	{vk.ErrUnsupported, errs.Unsupported},
}

// vkError is a vk error as the recorder sees it: vk's message and chain,
// matching vkc's sentinel with errors.Is.
type vkError struct {
	sentinel error
	err      error
}

func (e *vkError) Error() string        { return e.err.Error() }
func (e *vkError) Unwrap() error        { return e.err }
func (e *vkError) Is(target error) bool { return target == e.sentinel }

// fromVK lowers an error of package vk onto vkc's sentinels; an
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
