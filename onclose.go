package vkc

import "errors"

// OnClose registers f to run once when the device closes, before the
// device's objects are destroyed and after every call in flight on it has
// returned. A library that keeps state per device (kernels it loaded,
// params it made) forgets it there, so that nothing of a closed device
// stays reachable from a cache that outlives it. The functions run in the
// reverse order of registration, like deferred calls, on the goroutine
// that calls Close; they must not call the device's methods, which the
// closing device refuses with ErrClosed (closing a Kernel or a Buffer of
// the device is allowed and does nothing: Close frees them anyway).
//
// A device that is closing or closed refuses the registration with
// ErrClosed, so a caller knows f will never run and must not keep the
// state it meant f to clean.
func (d *Device) OnClose(f func()) error {
	if f == nil {
		return errors.New("vkc: OnClose of a nil function")
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	d.mu.Lock()
	d.onClose = append(d.onClose, f)
	d.mu.Unlock()
	return nil
}

// runOnClose runs the functions OnClose registered, the last first, once.
// Close calls it after no call can enter the device any more.
func (d *Device) runOnClose() {
	d.mu.Lock()
	fs := d.onClose
	d.onClose = nil
	d.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
