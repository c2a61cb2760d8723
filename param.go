package vkc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/internal/lockrank"
	"github.com/vkcompute/vkc/recorder"
)

var errNilParam = errors.New("vkc: nil param (use NewParam)")

// ErrParamWritten reports a Param bound to a user kernel at a binding the
// kernel writes (WriteOnly or ReadWrite). A Param's value is set by the
// host: the host keeps what it set, and a launch sized by a length param
// computes from that value, when it is recorded, which prefix of its
// buffers it writes. A kernel changing the value on the device would make
// both wrong (a later op would mark as written elements the device never
// wrote), so Launch and LaunchIndirect refuse the binding instead. A kernel
// that computes a value for later launches writes it into a Buffer.
var ErrParamWritten = errs.ParamWritten

// Param is a scalar that lives in device memory and is set from the host:
// every launch that reads it, eager or replayed, reads the value current
// when it runs. A graph that recorded launches reading a Param therefore
// changes behaviour with Set, with no re-capture: a learning rate, a time
// step, or — as the row count of package ops' dynamic tensors, or the
// group counts of a LaunchIndirect — how much work a replay does.
//
// A Param binds to a user kernel like a one-element read-only buffer (it
// is an Arg), and GroupsOf turns one into group counts for
// Kernel.LaunchIndirect. Only the host sets it: a binding the kernel writes
// refuses a Param (ErrParamWritten), because the extents of launches sized
// by it are computed from the value the host set.
//
// Set never races work issued before it: it waits for pending work that
// reads the value (none in the common loop — replay, read the results,
// Set, replay — since reading waits for the replay). Set is not recorded
// by a capture window: inside one it takes effect at once, and every
// replay reads the value current when it runs. Close makes later Sets fail
// with ErrClosed; a graph that recorded the param keeps its memory (and
// its last value) until the graph closes.
type Param[T Element] struct{ core *paramCore }

// paramCore is the untyped part of a param: its value in host-visible
// memory, and the device values derived from it when it is a length.
type paramCore struct {
	buf *bufferCore // the value: one element of host-visible memory

	mu     lockrank.Mutex
	bits   uint64 // the value's bits as last set, zero-extended
	length bool   // some op took it as a length: 0 is refused
	views  []*lengthView
	// claims, data and scratch are what Set hands to SetHost: the value's
	// claim and every view's, and their bytes. They change only when a view
	// is added, so Set allocates nothing.
	claims  []alloc.Claim
	data    [][]byte
	scratch []byte
}

// lengthView is a device value derived from a length param that an op
// reads: the length divided (rounding up) by the product of the spans of a
// reduction's earlier passes (the element count of a later pass:
// ceil(ceil(n/a)/b) = ceil(n/(a*b))), or the group counts that cover it.
type lengthView struct {
	buf    *bufferCore
	div    uint64 // value = ceil(n / div); 0 and 1 are n itself
	groups bool   // the view holds indirect group counts (3 words) for the value
	local  uint32 // groups: elements one group covers in x, or in y when fixedX is set
	fixedX uint32 // groups: 2-D, x groups fixed and y = ceil(value / local)
	spread bool   // groups: past the device's x limit, spread over y (the catalogue kernels fold y back)
}

func (v *lengthView) same(o lengthView) bool {
	return max(v.div, 1) == max(o.div, 1) && v.groups == o.groups && v.local == o.local && v.fixedX == o.fixedX && v.spread == o.spread
}

// bitsOf is v's bits, zero-extended: a param's value and a constant's.
func bitsOf[T Element](v T) uint64 { return bits64Of(v) }

// valueOf is the element whose bits bitsOf returned.
func valueOf[T Element](bits uint64) T { return valueOf64[T](bits) }

// NewParam makes a device scalar holding v.
func NewParam[T Element](d *Device, v T) (*Param[T], error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	buf, err := newCore(d, 1, kindOf[T](), alloc.Upload)
	if err != nil {
		return nil, err
	}
	buf.param = true
	c := &paramCore{buf: buf, bits: bitsOf(v)}
	c.mu.SetRank(lockrank.Param, 0)
	c.rebuild()
	c.fill(c.bits, d.info.Limits.MaxComputeWorkGroupCount)
	if err := d.rec.SetHost(c.claims, c.data); err != nil {
		_ = buf.close()
		return nil, publicOp("NewParam", err)
	}
	return &Param[T]{core: c}, nil
}

func (p *Param[T]) valid() error {
	if p == nil || p.core == nil {
		return errNilParam
	}
	return nil
}

// Value is the value last set (the zero value for a nil Param).
func (p *Param[T]) Value() T {
	if p.valid() != nil {
		return 0
	}
	p.core.mu.Lock()
	defer p.core.mu.Unlock()
	return valueOf[T](p.core.bits)
}

// Device is the device the param lives on.
func (p *Param[T]) Device() *Device {
	if p.valid() != nil {
		return nil
	}
	return p.core.buf.dev
}

// Set changes the value that launches and replays issued from now on read.
// It waits for pending work issued earlier that reads the param. For a
// param used as a length it refuses 0 and any value above what the
// buffers of every live graph, and of launches a capture window recording
// now recorded, sized by it hold (the error says which limit), so a replay
// never runs past its buffers. It allocates nothing.
func (p *Param[T]) Set(v T) error {
	if err := p.valid(); err != nil {
		return err
	}
	c := p.core
	d := c.buf.dev
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if !c.buf.life.enter() {
		return closedError("param")
	}
	defer c.buf.life.leave()
	c.mu.Lock()
	defer c.mu.Unlock()
	bits := bitsOf(v)
	if c.length {
		if err := c.checkLength(uint32(bits)); err != nil {
			return err
		}
	}
	c.fill(bits, d.info.Limits.MaxComputeWorkGroupCount)
	var err error
	if c.length {
		err = d.rec.SetLength(c.claims, c.data, uint32(bits))
	} else {
		err = d.rec.SetHost(c.claims, c.data)
	}
	if err != nil {
		c.fill(c.bits, d.info.Limits.MaxComputeWorkGroupCount)
		var over *recorder.LengthLimitError
		if errors.As(err, &over) {
			return fmt.Errorf("vkc: length %d above %d, what the buffers of a live graph or a recording window sized by this param hold", over.Length, over.Max)
		}
		return publicOp("Param.Set", err)
	}
	c.bits = bits
	return nil
}

// checkLength refuses a length the param's uses cannot take on any
// device; what live graphs and recording windows hold, SetLength checks
// while no launch can record.
func (c *paramCore) checkLength(n uint32) error {
	if n == 0 {
		return fmt.Errorf("vkc: length 0: a length param sizes work and must be at least 1")
	}
	maxX := c.buf.dev.info.Limits.MaxComputeWorkGroupCount[0]
	for _, v := range c.views {
		if v.groups && !v.spread && v.fixedX == 0 && groupsFor(n, v.div, v.local) > uint64(maxX) {
			return fmt.Errorf("vkc: length %d needs %d groups of %d, above the device's %d", n, groupsFor(n, v.div, v.local), v.local, maxX)
		}
	}
	return nil
}

// Close frees the param. A graph that recorded launches reading it keeps
// its memory and last value until the graph closes; Set after Close
// returns ErrClosed. Idempotent.
func (p *Param[T]) Close() error {
	if p.valid() != nil {
		return nil
	}
	c := p.core
	// The param closes before its views are collected: view refuses a
	// closed param under c.mu, so a view made by a call racing this Close
	// is either refused or in the list freed here.
	err := c.buf.close()
	c.mu.Lock()
	views := c.views
	c.views = nil
	c.mu.Unlock()
	for _, v := range views {
		if verr := v.buf.close(); verr != nil && err == nil {
			err = verr
		}
	}
	return err
}

// arg binds the param to a user kernel like a one-element buffer.
func (p *Param[T]) arg() *bufferCore {
	if p == nil || p.core == nil {
		return nil
	}
	return p.core.buf
}

// divide is ceil(n / div) (n itself for a div of 0 or 1).
func divide(n uint32, div uint64) uint64 {
	div = max(div, 1)
	return (uint64(n) + div - 1) / div
}

func groupsFor(n uint32, div uint64, local uint32) uint64 {
	return (divide(n, div) + uint64(local) - 1) / uint64(local)
}

// rebuild lays out claims, data and scratch for the value and every view.
func (c *paramCore) rebuild() {
	c.claims = append(c.claims[:0], c.buf.claim)
	size := 4
	for _, v := range c.views {
		c.claims = append(c.claims, v.buf.claim)
		size += 4 * v.buf.n
	}
	value := int(c.buf.claim.Size) // the element, padded to whole words
	size += value - 4
	c.scratch = make([]byte, size)
	c.data = c.data[:0]
	c.data = append(c.data, c.scratch[:value:value])
	at := value
	for _, v := range c.views {
		n := 4 * v.buf.n
		c.data = append(c.data, c.scratch[at:at+n:at+n])
		at += n
	}
}

// fill writes the bytes of the value n and of every view into scratch.
func (c *paramCore) fill(bits uint64, maxGroups [3]uint32) {
	var value [8]byte
	binary.LittleEndian.PutUint64(value[:], bits)
	copy(c.data[0], value[:])
	for i, v := range c.views {
		v.encode(c.data[i+1], uint32(bits), maxGroups) // views derive from lengths, which are uint32
	}
}

// encode writes the view's bytes for the length n.
func (v *lengthView) encode(out []byte, n uint32, maxGroups [3]uint32) {
	if !v.groups {
		binary.LittleEndian.PutUint32(out, uint32(divide(n, v.div)))
		return
	}
	var g [3]uint64
	switch {
	case v.fixedX != 0:
		g = [3]uint64{uint64(v.fixedX), groupsFor(n, v.div, v.local), 1}
	case v.spread:
		g = spread(groupsFor(n, v.div, v.local), uint64(maxGroups[0]))
	default:
		g = [3]uint64{groupsFor(n, v.div, v.local), 1, 1}
	}
	for i, x := range g {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(min(x, uint64(maxGroups[i]))))
	}
}

// spread lays g groups over x and, past maxX, y, as the catalogue's 1-D
// kernels expect (they fold y back into the element index).
func spread(g, maxX uint64) [3]uint64 {
	if g <= maxX {
		return [3]uint64{g, 1, 1}
	}
	gy := (g + maxX - 1) / maxX
	return [3]uint64{(g + gy - 1) / gy, gy, 1}
}

// view returns the device value an op on s needs, making it on first use
// (from the current length) and keeping it up to date on every Set. A new
// view is allocated as s's own work (as an op's temporary is), so a param
// made before another slot's window never needs a page in that window's
// name. The caller has entered the device.
func (c *paramCore) view(s *Stream, want lengthView) (*bufferCore, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf.life.closed() {
		return nil, closedError("param") // Close frees the views; a new one would outlive it
	}
	if want.div <= 1 && !want.groups {
		return c.buf, nil
	}
	for _, v := range c.views {
		if v.same(want) {
			return v.buf, nil
		}
	}
	d := c.buf.dev
	words := 1
	if want.groups {
		words = 3
	}
	buf, err := newCoreOn(d, s, words, elemUint, alloc.Upload)
	if err != nil {
		return nil, err
	}
	v := want
	v.buf = buf
	data := make([]byte, 4*words)
	v.encode(data, uint32(c.bits), d.info.Limits.MaxComputeWorkGroupCount)
	if err := d.rec.SetHost([]alloc.Claim{buf.claim}, [][]byte{data}); err != nil {
		_ = buf.close()
		return nil, public(err)
	}
	c.views = append(c.views, &v)
	c.rebuild()
	c.fill(c.bits, d.info.Limits.MaxComputeWorkGroupCount)
	return buf, nil
}
