package vkc

import (
	"encoding/binary"
	"fmt"

	"github.com/vkcompute/vkc/recorder"
)

// Groups are group counts decided on the device when a launch runs: by a
// length param (GroupsOf) or by earlier work (GroupsFrom); see
// Kernel.LaunchIndirect.
type Groups struct {
	n   *Param[uint32]
	per uint32
	// fromDevice: GroupsFrom's counts, at countsOffset of counts, bounded by max.
	fromDevice   bool
	counts       *Buffer[uint32]
	countsOffset int
	max          [3]uint32
	// prefixes[:nPrefixes]: bindings used only up to a multiple of n
	// (Prefix); an array, so that Groups stays comparable.
	prefixes  [recorder.MaxBindings]prefix
	nPrefixes int
}

// GroupsOf is ceil(n/perGroup) groups in x (one in y and z), recomputed
// on every n.Set: a user kernel launched with LaunchIndirect then covers n
// elements with perGroup per group, on every replay the n current then.
// Set refuses an n that would need more groups than the device's x limit.
func GroupsOf(n *Param[uint32], perGroup uint32) Groups { return Groups{n: n, per: perGroup} }

// LaunchIndirect is Launch with group counts taken from device memory when
// the launch runs (vkCmdDispatchIndirect), so a graph that recorded it does
// more or less work as its length param changes, with no re-capture. The
// kernel reads the length itself if it needs it: bind the same param as
// one of args, at a binding it only reads (a param bound where it writes is
// ErrParamWritten, as in Launch). Every buffer the kernel writes counts as
// written whole, but those Groups.Prefix names, which count up to the
// length. With GroupsFrom the counts are those earlier device work
// wrote; counts that no executed work wrote (never written, or tainted by
// a failure) are not an error of the call: LaunchIndirect returns nil, the
// launch is skipped, and every buffer it writes reads as ErrUnwritten with
// the counts' cause.
func (k *Kernel) LaunchIndirect(s *Stream, g Groups, push []byte, args ...Arg) error {
	if k == nil || k.rk == nil {
		return errNilKernel
	}
	if g.fromDevice {
		if g.nPrefixes > 0 {
			return fmt.Errorf("vkc: kernel %q: %w", k.name, errPrefixFromDevice)
		}
		return k.launchIndirectFrom(s, g, push, args...)
	}
	if g.per == 0 || g.n.valid() != nil {
		return fmt.Errorf("vkc: kernel %q: LaunchIndirect needs GroupsOf(a *Param[uint32], perGroup > 0) or GroupsFrom", k.name)
	}
	if err := k.enter(s); err != nil {
		return err
	}
	defer k.leave(s)
	var bound [recorder.MaxBindings]*bufferCore
	nb, err := k.bind(&bound, push, args)
	if err != nil {
		return err
	}
	cores := bound[:nb]
	if g.n.core.buf.dev != s.dev {
		return fmt.Errorf("vkc: kernel %q: group-count param of another device", k.name)
	}
	maxX := s.dev.info.Limits.MaxComputeWorkGroupCount[0]
	c := g.n.core
	// The param is held for the launch: it records a limit on the param's
	// claim, which must not be freed and claimed again meanwhile.
	if !c.buf.life.enter() {
		return closedError("length param")
	}
	defer c.buf.life.leave()
	c.mu.Lock()
	n := uint32(c.bits)    // a length is a Param[uint32]
	err = c.checkLength(n) // under c.mu, as in Set: it reads c.views
	if err == nil {
		c.length = true
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("vkc: kernel %q: %w", k.name, err)
	}
	if groupsFor(n, 0, g.per) > uint64(maxX) {
		return fmt.Errorf("vkc: kernel %q: length %d needs more than the device's %d groups of %d", k.name, n, maxX, g.per)
	}
	view, err := c.view(s, lengthView{groups: true, local: g.per})
	if err != nil {
		return err
	}
	limit := uint64(g.per) * uint64(maxX)
	spec := launchSpec{push: push, limits: []recorder.Limit{{Param: c.buf.claim, Max: uint32(min(limit, 1<<32-1))}}}
	extents, limits, err := g.extents(cores, c, n)
	if err != nil {
		return fmt.Errorf("vkc: kernel %q: %w", k.name, err)
	}
	spec.extents = extents
	spec.limits = append(spec.limits, limits...)
	return k.launchWith(s, cores, view, &spec)
}

// GroupsFrom is group counts that earlier work on the device wrote: the
// three uint32 (x, y, z, as VkDispatchIndirectCommand) at element offset
// of counts, read when a LaunchIndirect runs, so one kernel can size the
// next (compaction, top-k, variable-length batches) with no host round
// trip, eagerly and in graphs alike.
//
// The counts are bounded on the device: before the launch a one-invocation
// catalogue kernel (clamp_groups) copies them into scratch memory as
// min(count, max[i], the device's maxComputeWorkGroupCount[i]) (a zero
// max[i] means the device limit alone), and the dispatch reads that copy,
// so the driver is never handed a count above the device's limit however
// wrong the kernel that wrote them. Both are ordered after earlier work
// on the stream that writes counts, like any read; if no executed work
// wrote the counts, the launch is skipped and its outputs read as
// ErrUnwritten with the counts' cause. A count of zero runs no group.
func GroupsFrom(counts *Buffer[uint32], offset int, max [3]uint32) Groups {
	return Groups{counts: counts, countsOffset: offset, max: max, fromDevice: true}
}

// launchIndirectFrom is LaunchIndirect with counts from device memory (see
// GroupsFrom). What the kernel writes is unknown at record time, so every
// buffer it may write (its write and read-write bindings) counts as
// written whole, as for any user launch: the bytes no group wrote keep
// what they held, and the caller knows from the counts how much holds
// new results.
func (k *Kernel) launchIndirectFrom(s *Stream, g Groups, push []byte, args ...Arg) error {
	if g.counts == nil || g.counts.core == nil {
		return fmt.Errorf("vkc: kernel %q: GroupsFrom: the counts buffer is nil", k.name)
	}
	if g.countsOffset < 0 || g.countsOffset > g.counts.core.n-3 {
		return fmt.Errorf("vkc: kernel %q: GroupsFrom: counts at element %d of a buffer of %d (three needed)", k.name, g.countsOffset, g.counts.core.n)
	}
	if err := k.enter(s); err != nil {
		return err
	}
	defer k.leave(s)
	var bound [recorder.MaxBindings]*bufferCore
	nb, err := k.bind(&bound, push, args)
	if err != nil {
		return err
	}
	d := s.dev
	if g.counts.core.dev != d {
		return fmt.Errorf("vkc: kernel %q: group counts in a buffer of another device", k.name)
	}
	clamp, err := d.builtin("clamp_groups")
	if err != nil {
		return err
	}
	var words [16]byte
	binary.LittleEndian.PutUint32(words[0:], uint32(g.countsOffset))
	for i, lim := range d.info.Limits.MaxComputeWorkGroupCount {
		if g.max[i] != 0 {
			lim = min(lim, g.max[i])
		}
		binary.LittleEndian.PutUint32(words[4+4*i:], lim)
	}
	clamped, err := d.temp(s, 3, elemFloat)
	if err != nil {
		return err
	}
	defer func() { _ = d.rec.Drop(s.id, clamped.claim) }()
	if err := clamp.launchWith(s, []*bufferCore{g.counts.core, clamped}, nil, &launchSpec{groups: [3]uint32{1, 1, 1}, push: words[:]}); err != nil {
		return err
	}
	return k.launchWith(s, bound[:nb], clamped, &launchSpec{push: push})
}
