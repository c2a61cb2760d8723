package shaders

// Opcodes the access tracer follows.
const (
	opNop                    = 0
	opLine                   = 8
	opExtInst                = 12
	opFunctionParameter      = 55
	opImageTexelPointer      = 60
	opLoad                   = 61
	opStore                  = 62
	opCopyMemory             = 63
	opCopyMemorySized        = 64
	opAccessChain            = 65
	opInBoundsAccessChain    = 66
	opPtrAccessChain         = 67
	opArrayLength            = 68
	opInBoundsPtrAccessChain = 70
	opVectorShuffle          = 79
	opCompositeInsert        = 82
	opCopyObject             = 83
	opSampledImage           = 86
	opImageSampleImplicitLod = 87
	opImageSparseRead        = 320
	opImageFetch             = 95
	opImageRead              = 98
	opImageWrite             = 99
	opImage                  = 100
	opImageQuerySizeLod      = 103
	opImageQuerySamples      = 107
	opAtomicLoad             = 227
	opAtomicStore            = 228
	opAtomicExchange         = 229
	opAtomicXor              = 242
	opPhi                    = 245
	opLoopMerge              = 246
	opSelectionMerge         = 247
	opBranch                 = 249
	opBranchConditional      = 250
	opSwitch                 = 251
	opKill                   = 252
	opReturn                 = 253
	opUnreachable            = 255
	opNoLine                 = 317
	opAtomicFlagTestAndSet   = 318
	opAtomicFlagClear        = 319
	opAtomicFMinEXT          = 5614
	opAtomicFMaxEXT          = 5615
	opAtomicFAddEXT          = 6035
	maxTraceRounds           = 64
	atomicPointer            = 2 // the pointer operand of every atomic with a result
)

// function is one OpFunction of a module: its parameters in order and
// the instructions of its body.
type function struct {
	params []uint32
	body   []instruction
}

// tracer follows pointers (and image handles) from descriptor variables
// through the code of an entry point and the functions it calls, noting
// per slot what the code loads, stores, and whether a pointer went where
// the tracer does not follow it (escaped).
type tracer struct {
	roots   map[uint32][]int // id -> the slots it points into (sorted, no repeats)
	handles []bool           // per slot: loading the variable yields a handle, not data
	loads   []bool
	stores  []bool
	escaped []bool
	changed bool
}

// traceAccess sets Loads, Stores and Traced of each binding from the code
// of entry (a function id) and the functions it calls, and, where traced,
// Access from the code: loads only ReadOnly, stores only WriteOnly, both
// ReadWrite, neither ReadOnly (a binding the code never touches is not
// written). Kinds no shader writes stay ReadOnly.
func traceAccess(insts []instruction, d *declarations, entry uint32, bindings []ModuleBinding) {
	if len(bindings) == 0 {
		return
	}
	functions := splitFunctions(insts)
	if _, ok := functions[entry]; !ok {
		return
	}
	t := newTracer(d, bindings)
	reach := reachable(functions, entry)
	converged := false
	for round := 0; round < maxTraceRounds && !converged; round++ {
		t.changed = false
		for _, fn := range reach {
			for _, in := range functions[fn].body {
				t.step(in, functions)
			}
		}
		converged = !t.changed
	}
	for i := range bindings {
		b := &bindings[i]
		b.Loads, b.Stores = t.loads[i], t.stores[i]
		b.Traced = converged && !t.escaped[i]
		if b.Traced {
			b.Access = tracedAccess(*b)
		}
	}
}

// newTracer starts a tracer with one slot per binding, each descriptor
// variable of d pointing into its binding's slot, so tracing begins from
// the variables the bindings were read from.
func newTracer(d *declarations, bindings []ModuleBinding) *tracer {
	t := &tracer{roots: map[uint32][]int{}, handles: make([]bool, len(bindings)),
		loads: make([]bool, len(bindings)), stores: make([]bool, len(bindings)), escaped: make([]bool, len(bindings))}
	slot := map[[2]uint32]int{}
	for i, b := range bindings {
		slot[[2]uint32{b.Set, b.Binding}] = i
		t.handles[i] = b.Kind != StorageBuffer && b.Kind != UniformBuffer
	}
	for _, v := range d.variables {
		vd := d.decorations[v.id]
		if vd == nil || vd.binding == nil {
			continue
		}
		var set uint32
		if vd.set != nil {
			set = *vd.set
		}
		if i, ok := slot[[2]uint32{set, *vd.binding}]; ok {
			t.add(v.id, []int{i})
		}
	}
	return t
}

// tracedAccess is the access of a traced binding from what its code does:
// for the kinds a shader writes, loads only ReadOnly, stores only
// WriteOnly, both ReadWrite, neither ReadOnly; other kinds keep theirs.
func tracedAccess(b ModuleBinding) Access {
	switch b.Kind {
	case StorageBuffer, StorageTexelBuffer, StorageImage:
		switch {
		case b.Stores && b.Loads:
			return ReadWrite
		case b.Stores:
			return WriteOnly
		default:
			return ReadOnly
		}
	}
	return b.Access
}

// splitFunctions indexes a module's functions by result id; decode has
// checked that each opens and closes in turn.
func splitFunctions(insts []instruction) map[uint32]*function {
	out := map[uint32]*function{}
	var open *function
	for _, in := range insts {
		switch {
		case in.op == opFunction:
			open = &function{}
			out[in.operands[1]] = open
		case in.op == opFunctionEnd:
			open = nil
		case open != nil && in.op == opFunctionParameter && len(in.operands) >= 2:
			open.params = append(open.params, in.operands[1])
		case open != nil:
			open.body = append(open.body, in)
		}
	}
	return out
}

// reachable lists entry and every function it calls, directly or not,
// each once, in the order found.
func reachable(functions map[uint32]*function, entry uint32) []uint32 {
	seen := map[uint32]bool{entry: true}
	order := []uint32{entry}
	for i := 0; i < len(order); i++ {
		for _, in := range functions[order[i]].body {
			if in.op != opFunctionCall {
				continue
			}
			callee := in.operands[2]
			if _, ok := functions[callee]; ok && !seen[callee] {
				seen[callee] = true
				order = append(order, callee)
			}
		}
	}
	return order
}

// add makes id point into slots as well as where it did.
func (t *tracer) add(id uint32, slots []int) {
	have := t.roots[id]
	for _, s := range slots {
		found := false
		for _, h := range have {
			found = found || h == s
		}
		if !found {
			have = append(have, s)
			t.changed = true
		}
	}
	t.roots[id] = have
}

func (t *tracer) mark(slots []int, flags []bool) {
	for _, s := range slots {
		flags[s] = true
	}
}

// operand is the operand at i, or 0 (never an id) past the end.
func operand(in instruction, i int) uint32 {
	if i < len(in.operands) {
		return in.operands[i]
	}
	return 0
}

// pointerUse groups the opcodes the tracer treats alike by what they do
// with the pointers and handles among their operands, so step reads as one
// case per kind of use rather than one long condition per opcode.
type pointerUse int

const (
	useOther        pointerUse = iota // a use the tracer does not follow: the pointer escapes
	useDerive                         // the result points where operand 2 does
	useSelect                         // the result points where either choice does
	usePhi                            // the result points where any incoming value does
	useLoad                           // loads data, or a handle from a handle variable
	useStore                          // stores through operand 0; a pointer stored escapes
	useCopyMemory                     // stores through operand 0, loads through operand 1
	useImageWrite                     // stores through the image in operand 0
	useImageRead                      // reads, samples, gathers through operand 2
	useAtomicStore                    // stores through operand 0
	useAtomicLoad                     // loads through operand 2
	useAtomicUpdate                   // loads and stores through the pointer operand
	useCall                           // passes pointers on to the callee's parameters
	useNone                           // sizes, control flow, debug lines: no pointer's use
)

// pointerUseOf classifies op for step; opcodes named one by one here,
// numbered ranges in rangedPointerUse.
func pointerUseOf(op uint32) pointerUse {
	switch op {
	case opAccessChain, opInBoundsAccessChain, opPtrAccessChain, opInBoundsPtrAccessChain,
		opCopyObject, opImageTexelPointer, opSampledImage, opImage:
		return useDerive
	case opSelect:
		return useSelect
	case opPhi:
		return usePhi
	case opLoad:
		return useLoad
	case opStore:
		return useStore
	case opCopyMemory, opCopyMemorySized:
		return useCopyMemory
	case opImageWrite:
		return useImageWrite
	case opImageRead, opImageFetch, opImageSparseRead:
		return useImageRead
	case opAtomicStore, opAtomicFlagClear:
		return useAtomicStore
	case opAtomicLoad:
		return useAtomicLoad
	case opAtomicFlagTestAndSet, opAtomicFMinEXT, opAtomicFMaxEXT, opAtomicFAddEXT:
		return useAtomicUpdate
	case opFunctionCall:
		return useCall
	case opArrayLength, opNop, opLine, opNoLine, opLoopMerge, opSelectionMerge,
		opBranch, opBranchConditional, opSwitch, opKill, opReturn, opUnreachable, opLabel:
		return useNone // sizes, not contents; control flow and debug lines: literals
	}
	return rangedPointerUse(op)
}

// rangedPointerUse classifies the opcodes SPIR-V numbers in runs: the
// image samples and gathers, the image queries and the atomic
// read-modify-writes; any other opcode is useOther.
func rangedPointerUse(op uint32) pointerUse {
	switch {
	case op >= opImageSampleImplicitLod && op < opImageFetch || op > opImageFetch && op < opImageRead:
		return useImageRead // samples, gathers
	case op >= opImageQuerySizeLod && op <= opImageQuerySamples:
		return useNone // sizes, not contents
	case op >= opAtomicExchange && op <= opAtomicXor:
		return useAtomicUpdate
	}
	return useOther
}

// step applies one instruction of a function body.
func (t *tracer) step(in instruction, functions map[uint32]*function) {
	src := func(i int) []int { return t.roots[operand(in, i)] }
	switch pointerUseOf(in.op) {
	case useDerive:
		if r := src(2); len(r) > 0 {
			t.add(operand(in, 1), r)
		}
	case useSelect:
		t.add(operand(in, 1), src(3))
		t.add(operand(in, 1), src(4))
		t.dropEmpty(operand(in, 1))
	case usePhi:
		for i := 2; i < len(in.operands); i += 2 {
			t.add(operand(in, 1), src(i))
		}
		t.dropEmpty(operand(in, 1))
	case useLoad:
		t.load(operand(in, 1), src(2))
	case useStore:
		t.mark(src(0), t.stores)
		t.mark(src(1), t.escaped) // a pointer stored somewhere
	case useCopyMemory:
		t.mark(src(0), t.stores)
		t.mark(src(1), t.loads)
	case useImageWrite, useAtomicStore:
		t.mark(src(0), t.stores)
	case useImageRead, useAtomicLoad:
		t.mark(src(2), t.loads)
	case useAtomicUpdate:
		t.mark(src(atomicPointer), t.loads)
		t.mark(src(atomicPointer), t.stores)
	case useCall:
		t.call(in, functions[operand(in, 2)])
	case useNone:
	default:
		t.escape(in)
	}
}

// load applies an OpLoad with result id through a pointer into slots:
// loading a handle variable yields the handle (id then points into the
// slot), loading anything else reads the binding's data.
func (t *tracer) load(id uint32, slots []int) {
	for _, s := range slots {
		if t.handles[s] {
			t.add(id, []int{s}) // an image or sampler handle
		} else {
			t.loads[s] = true
		}
	}
}

// call passes the pointers among an OpFunctionCall's arguments on to the
// callee's parameters; where there is no such parameter (or no callee in
// the module) the pointer escapes.
func (t *tracer) call(in instruction, callee *function) {
	for i := 3; i < len(in.operands); i++ {
		r := t.roots[in.operands[i]]
		if len(r) == 0 {
			continue
		}
		if callee == nil || i-3 >= len(callee.params) {
			t.mark(r, t.escaped)
			continue
		}
		t.add(callee.params[i-3], r)
	}
}

// escape marks every slot that an id operand of in points into as
// escaped. Any other use of a pointer or handle (a bitcast, a conversion
// to an integer, an extended instruction taking it) is one the tracer
// does not follow: the binding's access falls back on its decorations.
func (t *tracer) escape(in instruction) {
	for i, w := range in.operands {
		if isLiteral(in.op, i) {
			continue // a number, not an id, whatever id it happens to equal
		}
		t.mark(t.roots[w], t.escaped)
	}
}

// isLiteral reports whether operand i of an instruction with opcode op is a
// literal number rather than an id, for the instructions of function
// bodies that carry literals beside ids: an extended instruction's number,
// the indices of a composite extract or insert, a shuffle's components.
func isLiteral(op uint32, i int) bool {
	switch op {
	case opExtInst:
		return i == 3
	case opCompositeExtract:
		return i >= 3
	case opCompositeInsert, opVectorShuffle:
		return i >= 4
	}
	return false
}

// dropEmpty forgets an id that points nowhere yet, so the map holds only
// pointers into slots.
func (t *tracer) dropEmpty(id uint32) {
	if r, ok := t.roots[id]; ok && len(r) == 0 {
		delete(t.roots, id)
	}
}
