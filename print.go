package vkc

import (
	"fmt"
	"strings"
)

// The String methods of the handles: what fmt.Println prints for each, so
// a log line or a test failure says which device, buffer, stream, kernel
// or graph it is about instead of dumping pointers. Each is safe on nil
// and on a handle already closed, and takes no lock a call in flight
// could hold.

// String names the device as "vkc.Device{name (type), driver …, id
// vendor:device, n streams}", or says that it is nil or closed.
func (d *Device) String() string {
	if d == nil || !d.opened() {
		return "vkc.Device(nil)"
	}
	i := d.info
	closed := ""
	if d.life.closed() {
		closed = ", closed"
	}
	return fmt.Sprintf("vkc.Device{%s, driver %s, id %#04x:%#04x, %d streams%s}",
		i, i.DriverVersion, i.VendorID, i.DeviceID, d.Slots(), closed)
}

// String gives the element type and length, and for a view where in its
// buffer it lies, as "vkc.Buffer[float32]{len 16}" or
// "vkc.Buffer[float32]{len 4, view at byte 16 of 64}".
func (b *Buffer[T]) String() string {
	kind := kindOf[T]()
	if b == nil || b.core == nil || b.core.dev == nil {
		return fmt.Sprintf("vkc.Buffer[%s](nil)", kind)
	}
	c := b.core
	var sb strings.Builder
	fmt.Fprintf(&sb, "vkc.Buffer[%s]{len %d", kind, c.n)
	if o := c.owner; o != nil {
		fmt.Fprintf(&sb, ", view at byte %d of %d", c.claim.Offset-o.claim.Offset, o.claim.Size)
	}
	if c.life.closed() {
		sb.WriteString(", closed")
	}
	sb.WriteString("}")
	return sb.String()
}

// String gives the stream's ID and the slot it runs on, as
// "vkc.Stream{id 5, slot 1}": two streams of one slot are ordered as one.
func (s *Stream) String() string {
	if s == nil || s.dev == nil {
		return "vkc.Stream(nil)"
	}
	if n := s.dev.Slots(); n > 0 {
		return fmt.Sprintf("vkc.Stream{id %d, slot %d}", s.id, s.id%uint64(n))
	}
	return fmt.Sprintf("vkc.Stream{id %d}", s.id)
}

// String gives the kernel's name, how it uses each binding, its push
// constants and workgroup size, as `vkc.Kernel{"affine", bindings [read
// write], push 12 bytes, local 64x1x1}`.
func (k *Kernel) String() string {
	if k == nil || k.dev == nil {
		return "vkc.Kernel(nil)"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "vkc.Kernel{%q, bindings %v, push %d bytes", k.name, k.access, k.push)
	if k.local != [3]uint32{} {
		fmt.Fprintf(&sb, ", local %dx%dx%d", k.local[0], k.local[1], k.local[2])
	}
	if k.life.closed() {
		sb.WriteString(", closed")
	}
	sb.WriteString("}")
	return sb.String()
}

// String gives the graph's launches, the stream that captured it and its
// state, as "vkc.Graph{3 launches, stream 0, profiled}".
func (g *Graph) String() string {
	if g == nil || g.g == nil {
		return "vkc.Graph(nil)"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "vkc.Graph{%d launches, stream %d", g.g.Launches(), g.g.Owner())
	if g.g.Profiled() {
		sb.WriteString(", profiled")
	}
	if g.life.closed() {
		sb.WriteString(", closed")
	}
	sb.WriteString("}")
	return sb.String()
}
