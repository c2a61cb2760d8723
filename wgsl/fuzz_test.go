package wgsl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vkcompute/vkc/shaders"
)

// testSources are the WGSL kernels of this package's tests, the seeds of
// its fuzz targets.
var testSources = []string{accessSrc, namedEntrySrc, overrideSrc, zeroingSrc, nestedSrc, scaleSrc, uniformSrc, controlFlowSrc, countSrc, helperStoreSrc, pushSrc}

// repairAll applies every rewrite to a decoded module, as compile does
// with zeroing dropped.
func repairAll(m *module) {
	dropDeadStorageLoads(m)
	fixStorageAccess(m)
	stripWorkgroupZeroing(m)
}

// Any bytes: the rewriter refuses or rewrites without panicking; what it
// writes decodes again, a second rewrite changes nothing, and a module
// vkc's reader accepted before is accepted after, with the same entry
// points, bindings and workgroup size, and no storage buffer keeps an
// access decoration its code contradicts.
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
		checkAccessDecorations(t, again)
	})
}

// checkAccessDecorations fails t where an access decoration left on a
// storage buffer disagrees with what the code does (as the rewriter sees
// it: a use it does not follow counts as a read and a write).
func checkAccessDecorations(t *testing.T, m *module) {
	t.Helper()
	done := storageAccess(m)
	for _, in := range m.insts {
		if in.op != opDecorate || len(in.operands) != 2 {
			continue
		}
		a, ok := done[in.operands[0]]
		if !ok {
			continue
		}
		if (in.operands[1] == decorationNonWritable && a.writes) || (in.operands[1] == decorationNonReadable && a.reads) {
			t.Fatalf("variable %d decorated %d although its code reads %v, writes %v", in.operands[0], in.operands[1], a.reads, a.writes)
		}
	}
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
