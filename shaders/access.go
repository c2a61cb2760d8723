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
		if !b.Traced {
			continue
		}
		switch b.Kind {
		case StorageBuffer, StorageTexelBuffer, StorageImage:
			switch {
			case b.Stores && b.Loads:
				b.Access = ReadWrite
			case b.Stores:
				b.Access = WriteOnly
			default:
				b.Access = ReadOnly
			}
		}
	}
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

// step applies one instruction of a function body.
func (t *tracer) step(in instruction, functions map[uint32]*function) {
	ops := in.operands
	src := func(i int) []int { return t.roots[operand(in, i)] }
	switch op := in.op; {
	case op == opAccessChain || op == opInBoundsAccessChain || op == opPtrAccessChain || op == opInBoundsPtrAccessChain ||
		op == opCopyObject || op == opImageTexelPointer || op == opSampledImage || op == opImage:
		if r := src(2); len(r) > 0 {
			t.add(operand(in, 1), r)
		}
	case op == opSelect:
		t.add(operand(in, 1), src(3))
		t.add(operand(in, 1), src(4))
		t.dropEmpty(operand(in, 1))
	case op == opPhi:
		for i := 2; i < len(ops); i += 2 {
			t.add(operand(in, 1), src(i))
		}
		t.dropEmpty(operand(in, 1))
	case op == opLoad:
		r := src(2)
		for _, s := range r {
			if t.handles[s] {
				t.add(operand(in, 1), []int{s}) // an image or sampler handle
			} else {
				t.loads[s] = true
			}
		}
	case op == opStore:
		t.mark(src(0), t.stores)
		t.mark(src(1), t.escaped) // a pointer stored somewhere
	case op == opCopyMemory || op == opCopyMemorySized:
		t.mark(src(0), t.stores)
		t.mark(src(1), t.loads)
	case op == opImageWrite:
		t.mark(src(0), t.stores)
	case op == opImageRead || op == opImageFetch || op == opImageSparseRead ||
		op >= opImageSampleImplicitLod && op < opImageFetch || op > opImageFetch && op < opImageRead:
		t.mark(src(2), t.loads) // reads, samples, gathers
	case op >= opImageQuerySizeLod && op <= opImageQuerySamples || op == opArrayLength:
		// sizes, not contents
	case op == opAtomicStore || op == opAtomicFlagClear:
		t.mark(src(0), t.stores)
	case op == opAtomicLoad:
		t.mark(src(2), t.loads)
	case op >= opAtomicExchange && op <= opAtomicXor || op == opAtomicFlagTestAndSet ||
		op == opAtomicFMinEXT || op == opAtomicFMaxEXT || op == opAtomicFAddEXT:
		t.mark(src(atomicPointer), t.loads)
		t.mark(src(atomicPointer), t.stores)
	case op == opFunctionCall:
		callee := functions[operand(in, 2)]
		for i := 3; i < len(ops); i++ {
			r := src(i)
			if len(r) == 0 {
				continue
			}
			if callee == nil || i-3 >= len(callee.params) {
				t.mark(r, t.escaped)
				continue
			}
			t.add(callee.params[i-3], r)
		}
	case op == opNop || op == opLine || op == opNoLine || op == opLoopMerge || op == opSelectionMerge ||
		op == opBranch || op == opBranchConditional || op == opSwitch || op == opKill || op == opReturn ||
		op == opUnreachable || op == opLabel:
		// control flow and debug lines: literals, never a pointer's use
	default:
		// Any other use of a pointer or handle (a bitcast, a conversion to
		// an integer, an extended instruction taking it) is one the tracer
		// does not follow: the binding's access falls back on its
		// decorations.
		for i, w := range ops {
			if isLiteral(in.op, i) {
				continue // a number, not an id, whatever id it happens to equal
			}
			t.mark(t.roots[w], t.escaped)
		}
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
