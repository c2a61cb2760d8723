package wgsl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vkcompute/vkc/shaders"
)

// testSources are the WGSL kernels of this package's tests, the seeds of
// its fuzz targets.
var testSources = []string{accessSrc, namedEntrySrc, overrideSrc, zeroingSrc, nestedSrc, scaleSrc, uniformSrc}

// repairAll applies every rewrite to a decoded module, as compile does
// with zeroing dropped.
func repairAll(m *module) {
	uniformsToStorage(m)
	dropDeadStorageLoads(m)
	fixStorageAccess(m)
	stripWorkgroupZeroing(m)
}

// Any bytes: the rewriter refuses or rewrites without panicking; what it
// writes decodes again, a second rewrite changes nothing, and a module
// vkc's reader accepted before is accepted after, with the same entry
// points, bindings and workgroup size, and never less access than the
// code has (a binding only loses read or write where the code does none).
func FuzzRepair(f *testing.F) {
	for _, src := range testSources {
		spec, err := Compile(src, Options{Name: "seed", Entry: firstEntry(src)})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(spec.SPIRV)
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		m, err := decodeModule(code)
		if err != nil {
			return
		}
		repairAll(m)
		out, err := m.encode()
		if err != nil {
			t.Fatalf("encode after repair: %v", err)
		}
		again, err := decodeModule(out)
		if err != nil {
			t.Fatalf("repaired module does not decode: %v", err)
		}
		repairAll(again)
		twice, err := again.encode()
		if err != nil || !bytes.Equal(out, twice) {
			t.Fatalf("a second repair changed the module (err %v)", err)
		}
		before, err := shaders.Inspect(code)
		if err != nil {
			return
		}
		after, err := shaders.Inspect(out)
		if err != nil {
			t.Fatalf("vkc's reader accepted the module but not its repair: %v", err)
		}
		if len(before.Bindings) != len(after.Bindings) || before.LocalSize != after.LocalSize || strings.Join(before.EntryPoints, ",") != strings.Join(after.EntryPoints, ",") {
			t.Fatalf("repair changed the interface: %+v -> %+v", before, after)
		}
		if memberAccessDecorations(again) {
			return // the repair rewrites decorations on variables only, as the translator puts them
		}
		done := codeAccess(again)
		for _, b := range after.Bindings {
			a, ok := done[[2]uint32{b.Set, b.Binding}]
			if !ok || b.Kind != shaders.StorageBuffer {
				continue
			}
			if (a.reads && !b.Access.Reads()) || (a.writes && !b.Access.Writes()) {
				t.Fatalf("set %d binding %d: code reads %v writes %v, repaired module says %v", b.Set, b.Binding, a.reads, a.writes, b.Access)
			}
		}
	})
}

// memberAccessDecorations reports whether a struct member is decorated
// NonWritable or NonReadable.
func memberAccessDecorations(m *module) bool {
	for _, in := range m.insts {
		if in.op == 72 && len(in.operands) >= 3 && (in.operands[2] == decorationNonWritable || in.operands[2] == decorationNonReadable) {
			return true
		}
	}
	return false
}

// codeAccess is what the code does to each (set, binding) of storage
// buffers, over every variable decorated with it.
func codeAccess(m *module) map[[2]uint32]access {
	vars := storageAccess(m)
	set, binding := map[uint32]uint32{}, map[uint32]uint32{}
	hasBinding := map[uint32]bool{}
	for _, in := range m.insts {
		if in.op != opDecorate || len(in.operands) < 3 {
			continue
		}
		switch in.operands[1] {
		case 34: // DescriptorSet
			set[in.operands[0]] = in.operands[2]
		case decorationBinding:
			binding[in.operands[0]] = in.operands[2]
			hasBinding[in.operands[0]] = true
		}
	}
	out := map[[2]uint32]access{}
	for id, a := range vars {
		if !hasBinding[id] {
			continue
		}
		k := [2]uint32{set[id], binding[id]}
		prev := out[k]
		out[k] = access{reads: prev.reads || a.reads, writes: prev.writes || a.writes}
	}
	return out
}

// firstEntry is the name of the first function marked @compute in src.
func firstEntry(src string) string {
	_, rest, ok := strings.Cut(src, "@compute")
	if !ok {
		return ""
	}
	_, rest, _ = strings.Cut(rest, "fn ")
	name, _, _ := strings.Cut(rest, "(")
	return strings.TrimSpace(name)
}

// Any source: Compile never panics (a translator panic is an error), every
// error is an *Error whose text starts with "vkc:", and every module it
// returns is one vkc's reader accepts.
func FuzzCompile(f *testing.F) {
	for _, src := range testSources {
		f.Add(src, firstEntry(src))
	}
	f.Add("fn main( {", "")
	f.Fuzz(func(t *testing.T, src, entry string) {
		k, err := compile(src, Options{Name: "fuzz", Entry: entry})
		if err != nil {
			e, ok := err.(*Error)
			if !ok || !strings.HasPrefix(e.Error(), "vkc: ") {
				t.Fatalf("error %T %q", err, err)
			}
			return
		}
		if _, err := shaders.InspectEntry(k.code, k.entry); err != nil {
			t.Fatalf("compiled module refused by vkc's reader: %v", err)
		}
	})
}
