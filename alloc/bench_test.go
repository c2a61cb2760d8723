package alloc

import "testing"

// nopBlock is a block with nothing behind it, so benchmarks time only the
// allocator.
type nopBlock struct{}

func (nopBlock) Release() {}

type nopSource struct{}

func (nopSource) NewBlock(Kind, uint64) (nopBlock, error) { return nopBlock{}, nil }

func newBenchAllocator(b *testing.B) *Allocator[nopBlock] {
	a, err := New[nopBlock](nopSource{}, Config{})
	if err != nil {
		b.Fatal(err)
	}
	// Some live claims around, as in a real working set.
	for i := range 64 {
		if _, err := a.Alloc(DeviceLocal, uint64(i+1)*4096); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

func BenchmarkAllocFree(b *testing.B) {
	a := newBenchAllocator(b)
	b.ReportAllocs()
	for b.Loop() {
		c, err := a.Alloc(DeviceLocal, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Free(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAllocFreeMixed(b *testing.B) {
	a := newBenchAllocator(b)
	sizes := make([]uint64, 1024)
	for i := range sizes {
		sizes[i] = uint64(i*2654435761%(4<<20)) + 1
	}
	ring := make([]Claim, 32)
	for i := range ring {
		ring[i], _ = a.Alloc(DeviceLocal, sizes[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		slot := i % len(ring)
		if err := a.Free(ring[slot]); err != nil {
			b.Fatal(err)
		}
		c, err := a.Alloc(DeviceLocal, sizes[i%len(sizes)])
		if err != nil {
			b.Fatal(err)
		}
		ring[slot] = c
		i++
	}
}

func BenchmarkLedgerCheckClean(b *testing.B) {
	l := NewLedger()
	claims := []Claim{{Page: 0, Offset: 0, Size: 256}, {Page: 1, Offset: 512, Size: 256}}
	b.ReportAllocs()
	for b.Loop() {
		if l.Check(claims) != nil {
			b.Fatal("clean ledger reported a taint")
		}
		l.Written(claims)
	}
}

func BenchmarkLedgerTaintWritten(b *testing.B) {
	l := NewLedger()
	// Other taints stay around, so the clean fast path does not apply.
	l.Taint([]Claim{{Page: 0, Offset: 4096, Size: 256}, {Page: 2, Offset: 0, Size: 64}}, errSubmit)
	claims := []Claim{{Page: 0, Offset: 0, Size: 256}, {Page: 0, Offset: 256, Size: 256}}
	b.ReportAllocs()
	for b.Loop() {
		l.Taint(claims, errSubmit)
		if l.Check(claims) == nil {
			b.Fatal("taint not seen")
		}
		l.Written(claims)
	}
}
