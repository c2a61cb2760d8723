package vkc

import (
	"errors"
	"fmt"

	"github.com/vkcompute/vkc/capture"
	"github.com/vkcompute/vkc/recorder"
)

// prefix is one binding of a launch used only in part: its first per
// elements for each unit of the length param's value.
type prefix struct {
	binding int
	per     int
}

// Prefix is g with binding (an index into LaunchIndirect's args) used
// only up to n*perUnit elements, n the value of g's length param when the
// launch runs: the launch checks (if the kernel reads the binding) and
// marks written (if it writes it) just those elements, so that a buffer
// whose first rows a kernel fills, one row of perUnit elements per unit
// of n, reads as written up to there and, where no other work wrote it,
// as ErrUnwritten past it — on every replay of a graph, as package ops'
// dynamic tensors do — and an input whose rows past n were never written
// does not make the launch skip. Without Prefix every buffer counts as
// used whole.
//
// The kernel must not write past the prefix: what it wrote there would
// not count as written. The binding must hold n*perUnit elements for the
// param's value when the launch is recorded, and while a graph that
// recorded it lives, Param.Set refuses a larger value. Prefix needs
// GroupsOf (GroupsFrom's counts are unknown at record time); a Param's
// own binding takes none, and a view bound with one must start at an
// offset storage bindings take (see View). Prefix may be given for
// several bindings, once each.
func (g Groups) Prefix(binding, perUnit int) Groups {
	if g.nPrefixes < len(g.prefixes) {
		g.prefixes[g.nPrefixes] = prefix{binding: binding, per: perUnit}
	}
	g.nPrefixes++ // past the array: more prefixes than bindings, refused at launch
	return g
}

// errPrefixFromDevice refuses Prefix on GroupsFrom.
var errPrefixFromDevice = errors.New("Prefix needs GroupsOf: GroupsFrom's counts are not known when the launch is recorded")

// extents is the extent of each of cores (the launch's bindings) that g's
// prefixes give for the length param c, now n, and the limits they put on
// the param: nil, nil when g has none.
func (g Groups) extents(cores []*bufferCore, c *paramCore, n uint32) ([]capture.Extent, []recorder.Limit, error) {
	if g.nPrefixes == 0 {
		return nil, nil, nil
	}
	if g.fromDevice {
		return nil, nil, errPrefixFromDevice
	}
	if g.nPrefixes > len(cores) {
		return nil, nil, fmt.Errorf("%d prefixes for %d bindings", g.nPrefixes, len(cores))
	}
	ext := make([]capture.Extent, len(cores))
	lims := make([]recorder.Limit, 0, g.nPrefixes)
	for _, p := range g.prefixes[:g.nPrefixes] {
		switch {
		case p.binding < 0 || p.binding >= len(cores):
			return nil, nil, fmt.Errorf("Prefix of binding %d of %d", p.binding, len(cores))
		case p.per <= 0:
			return nil, nil, fmt.Errorf("Prefix of binding %d: %d elements per unit (want at least 1)", p.binding, p.per)
		case cores[p.binding].param:
			return nil, nil, fmt.Errorf("Prefix of binding %d, a Param: a param is read whole", p.binding)
		case ext[p.binding].Dynamic():
			return nil, nil, fmt.Errorf("Prefix of binding %d given twice", p.binding)
		}
		core := cores[p.binding]
		most := core.n / p.per
		if uint64(n) > uint64(most) {
			return nil, nil, fmt.Errorf("Prefix of binding %d: length %d needs %d elements of %d each, the buffer holds %d", p.binding, n, n, p.per, core.n)
		}
		ext[p.binding] = capture.Extent{Param: c.buf.claim, Scale: uint64(p.per) * core.elem.size(), Elements: uint64(core.n) * core.elem.size()}
		lims = append(lims, recorder.Limit{Param: c.buf.claim, Max: uint32(min(most, 1<<32-1))})
	}
	return ext, lims, nil
}
