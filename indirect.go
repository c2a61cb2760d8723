package vkc

import (
	"encoding/binary"
	"fmt"

	"github.com/vkcompute/vkc/recorder"
)

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
