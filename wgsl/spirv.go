package wgsl

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The translator's SPIR-V is patched after it is emitted, as words: a
// module is a five-word header and a list of instructions, each a first
// word holding its word count (high half) and opcode (low half), then its
// operands. The rewriter decodes that list, drops or patches instructions
// and encodes it again; it understands only the handful of opcodes the
// fixes below need and leaves every other instruction as it was.

// errMalformed is wrapped by every refusal of words that are not a
// SPIR-V module the rewriter can walk.
var errMalformed = errors.New("malformed SPIR-V")

// SPIR-V opcodes, decorations and enumerants the fixes use.
const (
	spirvMagic = 0x07230203

	opLine                = 8
	opConstantNull        = 46
	opFunction            = 54
	opFunctionEnd         = 56
	opVariable            = 59
	opLoad                = 61
	opStore               = 62
	opCopyMemory          = 63
	opCopyMemorySized     = 64
	opAccessChain         = 65
	opInBoundsAccessChain = 66
	opPtrAccessChain      = 67
	opArrayLength         = 68
	opDecorate            = 71
	opVectorShuffle       = 79
	opCompositeExtract    = 81
	opCompositeInsert     = 82
	opCopyObject          = 83
	opControlBarrier      = 224
	opAtomicLoad          = 227
	opAtomicStore         = 228
	opLoopMerge           = 246
	opSelectionMerge      = 247
	opLabel               = 248
	opBranch              = 249
	opBranchConditional   = 250
	opSwitch              = 251

	decorationNonWritable   = 24
	decorationNonReadable   = 25
	decorationBinding       = 33
	decorationDescriptorSet = 34

	storageClassWorkgroup     = 4
	storageClassStorageBuffer = 12
)

// instruction is one decoded instruction: its opcode and its operands
// (the words after the first).
type instruction struct {
	op       uint32
	operands []uint32
}

// module is a decoded SPIR-V module.
type module struct {
	header [5]uint32
	insts  []instruction
}

// decodeModule splits little-endian words into a header and instructions.
// It refuses (never panics on) bytes that are not whole words, a wrong
// magic number, a short header, an instruction of zero words or one that
// runs past the end.
func decodeModule(code []byte) (*module, error) {
	if len(code)%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole number of words", errMalformed, len(code))
	}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	if len(words) < 5 {
		return nil, fmt.Errorf("%w: %d words, shorter than the header", errMalformed, len(words))
	}
	if words[0] != spirvMagic {
		return nil, fmt.Errorf("%w: magic number %#x", errMalformed, words[0])
	}
	m := &module{}
	copy(m.header[:], words)
	for at := 5; at < len(words); {
		count := int(words[at] >> 16)
		if count == 0 || at+count > len(words) {
			return nil, fmt.Errorf("%w: instruction at word %d has word count %d, %d words left", errMalformed, at, count, len(words)-at)
		}
		m.insts = append(m.insts, instruction{op: words[at] & 0xffff, operands: words[at+1 : at+count : at+count]})
		at += count
	}
	return m, nil
}

// encode writes the module back as little-endian words. An instruction
// too long for its word count is refused.
func (m *module) encode() ([]byte, error) {
	size := 5
	for _, in := range m.insts {
		size += 1 + len(in.operands)
	}
	out := make([]byte, 0, 4*size)
	for _, w := range m.header {
		out = binary.LittleEndian.AppendUint32(out, w)
	}
	for _, in := range m.insts {
		count := 1 + len(in.operands)
		if count > 0xffff || in.op > 0xffff {
			return nil, fmt.Errorf("%w: opcode %d with %d words does not fit one instruction", errMalformed, in.op, count)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(count)<<16|in.op)
		for _, w := range in.operands {
			out = binary.LittleEndian.AppendUint32(out, w)
		}
	}
	return out, nil
}

// access is what a function body does through a variable: loads, stores.
type access struct{ reads, writes bool }

// storageAccess works out, for every storage-buffer variable, whether the
// module's code reads it and whether it writes it, following the pointers
// derived from it (access chains, copies). A load whose value nothing uses
// is no read: the translator loads the element it is about to store to
// (y[i] = v loads y[i] first) and never uses the value. A use of such a
// pointer the rewriter does not understand (passed to a function, an
// atomic read-modify-write, anything else) counts as both, so the answer
// never says less than the code does.
func storageAccess(m *module) map[uint32]*access {
	tr := accessTracer{dead: deadLoads(m), vars: map[uint32]*access{}, root: map[uint32]uint32{}}
	for _, in := range m.insts {
		if in.op == opVariable && len(in.operands) >= 3 && in.operands[2] == storageClassStorageBuffer {
			tr.vars[in.operands[1]] = &access{}
			tr.root[in.operands[1]] = in.operands[1]
		}
	}
	inFunction := false
	for _, in := range m.insts {
		switch in.op {
		case opFunction:
			inFunction = true
		case opFunctionEnd:
			inFunction = false
		default:
			if inFunction && !tr.follow(in) {
				markUnknown(tr.vars, tr.root, idOperands(in))
			}
		}
	}
	return tr.vars
}

// accessTracer follows pointers into storage buffers through a function
// body, recording what the code does through them.
type accessTracer struct {
	dead map[uint32]bool    // loads whose value nothing uses
	vars map[uint32]*access // storage-buffer variable -> what the code does
	root map[uint32]uint32  // pointer id -> the variable it points into
}

// follow records what in does through a storage-buffer pointer and
// reports whether it understood the instruction; one it does not
// understand is left to markUnknown.
func (tr *accessTracer) follow(in instruction) bool {
	ops := in.operands
	pointer := func(at int) (uint32, bool) {
		if at >= len(ops) {
			return 0, false
		}
		v, ok := tr.root[ops[at]]
		return v, ok
	}
	switch in.op {
	case opAccessChain, opInBoundsAccessChain, opPtrAccessChain, opCopyObject:
		v, ok := pointer(2)
		if ok {
			tr.root[ops[1]] = v
		}
		return ok
	case opArrayLength:
		_, ok := pointer(2) // the length is the binding's size, not its contents
		return ok
	case opLoad, opAtomicLoad:
		v, ok := pointer(2)
		if ok && !(in.op == opLoad && tr.dead[ops[1]]) {
			tr.vars[v].reads = true
		}
		return ok
	case opStore, opAtomicStore:
		v, ok := pointer(0)
		if ok && len(ops) >= 2 {
			tr.vars[v].writes = true
		}
		return ok && len(ops) >= 2
	case opCopyMemory, opCopyMemorySized:
		if len(ops) < 2 {
			return false
		}
		if v, ok := pointer(0); ok {
			tr.vars[v].writes = true
		}
		if v, ok := pointer(1); ok {
			tr.vars[v].reads = true
		}
		return true
	}
	return false
}

// markUnknown counts every word of ops naming a pointer into a storage
// buffer as a read and a write of it: a use the rewriter does not model.
func markUnknown(vars map[uint32]*access, root map[uint32]uint32, ops []uint32) {
	for _, w := range ops {
		if v, ok := root[w]; ok {
			vars[v].reads, vars[v].writes = true, true
		}
	}
}

// idOperands are the operands of in that may be ids, for markUnknown: an
// instruction of a function body that carries literals (a switch's case
// values, a composite's indices, a line number, a merge's control mask)
// or only labels gives just its id operands, so a literal equal to a
// pointer's id is no use of the pointer.
func idOperands(in instruction) []uint32 {
	ops := in.operands
	upTo := func(n int) []uint32 { return ops[:min(n, len(ops))] }
	switch in.op {
	case opLine, opLoopMerge, opSelectionMerge, opBranch:
		return nil // a file name, numbers, labels and masks
	case opBranchConditional, opSwitch:
		return upTo(1) // the condition or selector; then labels and literals
	case opCompositeExtract:
		return upTo(3) // result type, result, composite; then indices
	case opVectorShuffle, opCompositeInsert:
		return upTo(4) // result type, result, two ids; then literals
	}
	return ops
}

// fixStorageAccess makes each storage buffer's NonWritable and NonReadable
// decorations say what the code does: a buffer the code writes loses a
// NonWritable the translator put on it (it decorates WGSL's
// var<storage, write> NonWritable), a buffer the code only stores to gains
// NonReadable, one it only loads gains NonWritable. vkc derives a
// binding's access from these decorations and refuses ones the code
// contradicts.
func fixStorageAccess(m *module) {
	vars := storageAccess(m)
	has := map[[2]uint32]bool{}
	var kept []instruction
	for _, in := range m.insts {
		if in.op == opDecorate && len(in.operands) == 2 {
			if a, ok := vars[in.operands[0]]; ok {
				d := in.operands[1]
				if (d == decorationNonWritable && a.writes) || (d == decorationNonReadable && a.reads) {
					continue
				}
				has[[2]uint32{in.operands[0], d}] = true
			}
		}
		kept = append(kept, in)
	}
	m.insts = kept
	// New decorations go right after the variable's Binding decoration,
	// among the annotations where SPIR-V's layout wants them.
	var out []instruction
	for _, in := range m.insts {
		out = append(out, in)
		if in.op != opDecorate || len(in.operands) != 3 || in.operands[1] != decorationBinding {
			continue
		}
		id := in.operands[0]
		a, ok := vars[id]
		if !ok {
			continue
		}
		if a.writes && !a.reads && !has[[2]uint32{id, decorationNonReadable}] {
			out = append(out, instruction{op: opDecorate, operands: []uint32{id, decorationNonReadable}})
			has[[2]uint32{id, decorationNonReadable}] = true
		}
		if a.reads && !a.writes && !has[[2]uint32{id, decorationNonWritable}] {
			out = append(out, instruction{op: opDecorate, operands: []uint32{id, decorationNonWritable}})
			has[[2]uint32{id, decorationNonWritable}] = true
		}
	}
	m.insts = out
}

// stripWorkgroupZeroing drops the translator's zero-initialisation of
// workgroup memory: the stores of a null constant into workgroup
// variables, which one invocation does for the whole group, and the
// barrier after them, which then orders nothing (on a CPU driver a
// barrier suspends and resumes every invocation of the group). It
// returns how many stores it dropped. Only the translator's pattern is
// dropped: a block of nothing but such stores branching to a merge block
// that starts with the barrier, and only the first such block of each
// function (the translator emits its zeroing before the function's own
// code). The same stores anywhere else are the source's (total = f32())
// and stay.
func stripWorkgroupZeroing(m *module) int {
	workgroup, null := map[uint32]bool{}, map[uint32]bool{}
	for _, in := range m.insts {
		switch {
		case in.op == opVariable && len(in.operands) >= 3 && in.operands[2] == storageClassWorkgroup:
			workgroup[in.operands[1]] = true
		case in.op == opConstantNull && len(in.operands) >= 2:
			null[in.operands[1]] = true
		}
	}
	zeroing := func(in instruction) bool {
		return in.op == opStore && len(in.operands) >= 2 && workgroup[in.operands[0]] && null[in.operands[1]]
	}
	dropped := 0
	first := false // no zeroing block seen yet in the current function
	kept := m.insts[:0:0]
	for i := 0; i < len(m.insts); i++ {
		in := m.insts[i]
		kept = append(kept, in)
		switch {
		case in.op == opFunction:
			first = true
		case in.op != opLabel || !first:
			continue
		}
		if end, ok := zeroingBlock(m.insts, i, zeroing); ok {
			dropped += end - (i + 1)
			kept = append(kept, m.insts[end], m.insts[end+1]) // the branch and the merge label
			i = end + 2                                       // the barrier is skipped
			first = false
		}
	}
	m.insts = kept
	return dropped
}

// zeroingBlock reports whether the block whose label is insts[label] is
// the translator's zeroing block: zeroing stores only, then OpBranch to
// the next block, which starts with OpControlBarrier. end is the index of
// the branch.
func zeroingBlock(insts []instruction, label int, zeroing func(instruction) bool) (end int, ok bool) {
	end = label + 1
	for end < len(insts) && zeroing(insts[end]) {
		end++
	}
	if end == label+1 || end+2 >= len(insts) {
		return 0, false
	}
	br, merge, barrier := insts[end], insts[end+1], insts[end+2]
	ok = br.op == opBranch && len(br.operands) == 1 && merge.op == opLabel && len(merge.operands) == 1 &&
		merge.operands[0] == br.operands[0] && barrier.op == opControlBarrier
	return end, ok
}

// deadLoads are the result ids of the loads in function bodies whose value
// no instruction of a function body uses. An operand word that is a
// literal equal to the id counts as a use, which only keeps a load alive.
func deadLoads(m *module) map[uint32]bool {
	loads := map[uint32]bool{}
	for _, in := range m.insts {
		if in.op == opLoad && len(in.operands) >= 3 {
			loads[in.operands[1]] = true
		}
	}
	inFunction := false
	for _, in := range m.insts {
		switch in.op {
		case opFunction:
			inFunction = true
		case opFunctionEnd:
			inFunction = false
		}
		if !inFunction {
			continue // declarations' literals (Offset is 35) are no uses
		}
		for i, w := range in.operands {
			if in.op == opLoad && i == 1 {
				continue // the load's own result
			}
			delete(loads, w)
		}
	}
	return loads
}

// dropDeadStorageLoads removes the loads through storage-buffer pointers
// whose value nothing uses: a load from a binding the repair declares
// NonReadable must not stay in the code, and a load without a use has no
// effect.
func dropDeadStorageLoads(m *module) {
	dead := deadLoads(m)
	pointers := map[uint32]bool{}
	for _, in := range m.insts {
		ops := in.operands
		switch {
		case in.op == opVariable && len(ops) >= 3 && ops[2] == storageClassStorageBuffer:
			pointers[ops[1]] = true
		case (in.op == opAccessChain || in.op == opInBoundsAccessChain || in.op == opPtrAccessChain || in.op == opCopyObject) && len(ops) >= 3 && pointers[ops[2]]:
			pointers[ops[1]] = true
		}
	}
	kept := m.insts[:0:0]
	for _, in := range m.insts {
		if in.op == opLoad && len(in.operands) >= 3 && dead[in.operands[1]] && pointers[in.operands[2]] {
			continue
		}
		kept = append(kept, in)
	}
	m.insts = kept
}

// bindingsWritten are the (set, binding) slots of the storage buffers the
// code stores to.
func bindingsWritten(m *module) map[[2]uint32]bool {
	vars := storageAccess(m)
	set, binding := map[uint32]uint32{}, map[uint32]uint32{}
	for _, in := range m.insts {
		if in.op != opDecorate || len(in.operands) < 3 {
			continue
		}
		switch in.operands[1] {
		case decorationDescriptorSet:
			set[in.operands[0]] = in.operands[2]
		case decorationBinding:
			binding[in.operands[0]] = in.operands[2]
		}
	}
	written := map[[2]uint32]bool{}
	for id, a := range vars {
		if b, ok := binding[id]; ok && a.writes {
			written[[2]uint32{set[id], b}] = true
		}
	}
	return written
}
