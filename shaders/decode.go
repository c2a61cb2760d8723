package shaders

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/vkcompute/vkc/internal/errs"
)

// A SPIR-V module is little-endian 32-bit words: a header of five (magic
// number, version, generator, id bound, schema), then instructions, each a
// first word holding its length in words (high half) and its opcode (low
// half), followed by its operands.
const (
	spirvMagic  = 0x07230203
	headerWords = 5
)

// instruction is one decoded instruction. operands holds at least the
// minimum the SPIR-V specification gives its opcode when the reader
// interprets that opcode (minOperands), so later stages index it freely.
type instruction struct {
	op       uint32
	operands []uint32
	at       int // word offset in the module, for error messages
}

// need refuses an instruction with fewer than n operands; it is for the
// operands an instruction has only in some of its forms (a decoration's
// literal, LocalSize's three sizes).
func (in instruction) need(n int) error {
	if len(in.operands) < n {
		return fmt.Errorf("%w: opcode %d at word %d has %d operands, want at least %d", errs.BadSPIRV, in.op, in.at, len(in.operands), n)
	}
	return nil
}

// minOperands is, for every opcode the reader interprets, the fewest
// operands the specification allows it.
var minOperands = map[uint32]int{
	opEntryPoint:            3, // execution model, function, name
	opExecutionMode:         2, // entry point, mode
	opExecutionModeID:       2, // entry point, mode
	opTypeInt:               3, // result, width, signedness
	opTypeFloat:             2, // result, width
	opTypeVector:            3, // result, component type, count
	opTypeMatrix:            3, // result, column type, column count
	opTypeArray:             3, // result, element type, length constant
	opTypeRuntimeArray:      2, // result, element type
	opTypeStruct:            1, // result
	opTypePointer:           3, // result, storage class, pointee
	opTypeImage:             8, // result, sampled type, dim, depth, arrayed, MS, sampled, format
	opTypeSampler:           1, // result
	opTypeSampledImage:      2, // result, image type
	opConstantTrue:          2, // result type, result
	opConstantFalse:         2, // result type, result
	opSpecConstantTrue:      2, // result type, result
	opSpecConstantFalse:     2, // result type, result
	opConstant:              3, // result type, result, value
	opSpecConstant:          3, // result type, result, value
	opConstantComposite:     2, // result type, result
	opSpecConstantComposite: 2, // result type, result
	opSpecConstantOp:        3, // result type, result, opcode
	opTypeBool:              1, // result
	opFunction:              4, // result type, result, control, function type
	opFunctionCall:          3, // result type, result, function
	opVariable:              3, // result type, result, storage class
	opDecorate:              2, // target, decoration
	opMemberDecorate:        3, // structure, member, decoration
	opLabel:                 1, // result
	// result, component type, scope, rows, columns, use
	opTypeCooperativeMatrixKHR: 6,
}

// decode splits a SPIR-V module into its instructions and checks that it
// is whole: whole little-endian words, the magic number, a complete header,
// instructions that fit in the module and carry the operands their opcodes
// require, functions that open and close in turn, at least one entry point
// (Vulkan builds pipelines only from entry points) and every entry point a
// function with a body, and every function called defined. Drivers do not validate SPIR-V (lavapipe crashed on
// a module cut at an instruction boundary), so this is what stands between
// a user's bytes and the driver; meaning is left to the validation layer.
// Every error wraps errs.BadSPIRV.
func decode(code []byte) ([]instruction, error) {
	words, err := moduleWords(code)
	if err != nil {
		return nil, err
	}
	var insts []instruction
	functions := functionShape{entryBodies: map[uint32]bool{}, defined: map[uint32]bool{}, called: map[uint32]int{}}
	for pos := headerWords; pos < len(words); {
		count, op := int(words[pos]>>16), words[pos]&0xffff
		if count == 0 || count > len(words)-pos {
			return nil, fmt.Errorf("%w: instruction at word %d (opcode %d) of %d words runs past the end of the module (%d words)", errs.BadSPIRV, pos, op, count, len(words))
		}
		in := instruction{op: op, operands: words[pos+1 : pos+count : pos+count], at: pos}
		if err := in.need(minOperands[op]); err != nil {
			return nil, err
		}
		if err := functions.see(in); err != nil {
			return nil, err
		}
		insts = append(insts, in)
		pos += count
	}
	if err := functions.finish(); err != nil {
		return nil, err
	}
	return insts, nil
}

// moduleWords checks the header and returns the module as words.
func moduleWords(code []byte) ([]uint32, error) {
	if len(code) < 4*headerWords || len(code)%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole module (header is %d bytes, size a multiple of 4)%s", errs.BadSPIRV, len(code), 4*headerWords, textHint(code))
	}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	switch words[0] {
	case spirvMagic:
		return words, nil
	case bits.ReverseBytes32(spirvMagic):
		return nil, fmt.Errorf("%w: big-endian module; Vulkan takes SPIR-V in little-endian words", errs.BadSPIRV)
	default:
		return nil, fmt.Errorf("%w: magic number %#08x, want %#08x (little-endian)%s", errs.BadSPIRV, words[0], spirvMagic, textHint(code))
	}
}

// functionShape follows function boundaries through a module to see that
// it is not cut short: a module truncated at an instruction boundary
// otherwise reads as valid words. Functions that open and close in turn do
// not show a cut between two functions; glslang writes main first and the
// functions it calls after it, so such a cut leaves calls to functions the
// module never defines, which is what defined and called catch.
type functionShape struct {
	entryBodies map[uint32]bool // entry point function id -> a body was seen
	defined     map[uint32]bool // every OpFunction's result id
	called      map[uint32]int  // OpFunctionCall callee -> word offset of its first call
	open        uint32          // the function being read
	inFunction  bool
}

func (s *functionShape) see(in instruction) error {
	switch in.op {
	case opEntryPoint:
		if _, ok := s.entryBodies[in.operands[1]]; !ok {
			s.entryBodies[in.operands[1]] = false
		}
	case opFunction:
		if s.inFunction {
			return fmt.Errorf("%w: function %%%d at word %d opens inside function %%%d", errs.BadSPIRV, in.operands[1], in.at, s.open)
		}
		s.open, s.inFunction = in.operands[1], true
		s.defined[in.operands[1]] = true
	case opFunctionCall:
		if _, ok := s.called[in.operands[2]]; !ok {
			s.called[in.operands[2]] = in.at
		}
	case opFunctionEnd:
		if !s.inFunction {
			return fmt.Errorf("%w: OpFunctionEnd at word %d outside a function", errs.BadSPIRV, in.at)
		}
		s.inFunction = false
	case opLabel:
		if _, entry := s.entryBodies[s.open]; entry && s.inFunction {
			s.entryBodies[s.open] = true
		}
	}
	return nil
}

// finish checks what only the end of the module shows.
func (s *functionShape) finish() error {
	if s.inFunction {
		return fmt.Errorf("%w: function %%%d not closed (module truncated?)", errs.BadSPIRV, s.open)
	}
	if len(s.entryBodies) == 0 {
		return fmt.Errorf("%w: no entry point (module truncated?)", errs.BadSPIRV)
	}
	missing, found := uint32(0), false
	for id, body := range s.entryBodies {
		if !body && (!found || id < missing) {
			missing, found = id, true // the lowest, so the message is stable
		}
	}
	if found {
		return fmt.Errorf("%w: entry point %%%d has no function body (module truncated?)", errs.BadSPIRV, missing)
	}
	undefined, at := uint32(0), -1
	for id, pos := range s.called {
		if !s.defined[id] && (at < 0 || pos < at) {
			undefined, at = id, pos // the first call, so the message is stable
		}
	}
	if at >= 0 {
		return fmt.Errorf("%w: function %%%d called at word %d is never defined (module truncated?)", errs.BadSPIRV, undefined, at)
	}
	return nil
}
