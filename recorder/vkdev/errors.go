package vkdev

import (
	"errors"
	"strings"

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
	{vk.ErrOutOfDeviceMemory, errs.OutOfMemory},
	{vk.ErrClosed, errs.Closed},
	{vk.ErrBadSPIRV, errs.BadSPIRV},
	{vk.ErrNoLoader, errs.NoLoader},
	{vk.ErrNoDevice, errs.NoDevice},
	{vk.ErrBadAdoption, errs.BadAdoption},
	{vk.ErrUnsupported, errs.Unsupported},
}

// vkError is a vk error as the recorder sees it: vk's chain (a *vk.Error
// in it keeps the call and its VkResult for errors.As), matching vkc's
// sentinel with errors.Is, and read as the sentinel's message followed by
// what vk adds to its failure's own.
type vkError struct {
	sentinel error
	failure  vk.Failure
	err      error
}

// Error is the sentinel's message, then vk's detail: vk's message less
// the failure's own words where it starts with them, so they are not
// said twice.
func (e *vkError) Error() string {
	detail := strings.TrimPrefix(strings.TrimPrefix(e.err.Error(), e.failure.Error()), ": ")
	if detail == "" {
		return e.sentinel.Error()
	}
	return e.sentinel.Error() + ": " + detail
}

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
			return &vkError{sentinel: m.to, failure: m.failure, err: err}
		}
	}
	return err
}
