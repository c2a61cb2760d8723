package blackbox_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkcompute/vkc"
	"github.com/vkcompute/vkc/internal/gcpressure"
)

// The byte-level views property test: random programs over ViewAs views of
// one allocation as uint8, uint16 and uint32, at every byte offset their
// size allows — host writes, Fill, Copy and Convert between them, reads —
// run against a model of every byte: its value, or unwritten. A read must
// return the model's bytes or fail with ErrUnwritten exactly when the
// model has an unwritten byte in the view; ops whose buffers overlap where
// they must not, or whose types the op does not take, are refused and
// change nothing.

const byteRootLen = 96 // bytes of the allocation

// byteView is one view of the program: its element size and byte range.
type byteView struct {
	size, off, n int // element bytes, first byte, elements
	u8           *vkc.Buffer[uint8]
	u16          *vkc.Buffer[uint16]
	u32          *vkc.Buffer[uint32]
}

func (v *byteView) end() int { return v.off + v.size*v.n }

func (v *byteView) String() string { return fmt.Sprintf("u%d[%d:%d)", 8*v.size, v.off, v.end()) }

func (v *byteView) close() {
	switch v.size {
	case 1:
		_ = v.u8.Close()
	case 2:
		_ = v.u16.Close()
	default:
		_ = v.u32.Close()
	}
}

type byteModel struct {
	t       *testing.T
	r       *rand.Rand
	dev     *vkc.Device
	streams []*vkc.Stream
	root    *vkc.Buffer[uint32]
	val     [byteRootLen]byte
	written [byteRootLen]bool
	history []string
	reads   int
	unwr    int
	refused int
}

// newView is a random view: a random element size, count and offset.
func (m *byteModel) newView() *byteView {
	size := []int{1, 2, 4}[m.r.IntN(3)]
	n := 1 + m.r.IntN(min(24, byteRootLen/size))
	return m.viewAt(size, size*m.r.IntN((byteRootLen-size*n)/size+1), n)
}

func (m *byteModel) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nafter:\n%v", fmt.Sprintf(format, args...), m.history)
}

// read reads v on s and checks it against the model.
func (m *byteModel) read(s *vkc.Stream, v *byteView) {
	m.t.Helper()
	ctx := testCtx(m.t)
	var got []byte
	var err error
	switch v.size {
	case 1:
		var xs []uint8
		xs, err = v.u8.ReadOn(ctx, s)
		got = xs
	case 2:
		var xs []uint16
		xs, err = v.u16.ReadOn(ctx, s)
		for _, x := range xs {
			got = binary.LittleEndian.AppendUint16(got, x)
		}
	default:
		var xs []uint32
		xs, err = v.u32.ReadOn(ctx, s)
		for _, x := range xs {
			got = binary.LittleEndian.AppendUint32(got, x)
		}
	}
	unwritten := false
	for i := v.off; i < v.end(); i++ {
		unwritten = unwritten || !m.written[i]
	}
	m.reads++
	if unwritten {
		m.unwr++
		if !errors.Is(err, vkc.ErrUnwritten) {
			m.fail("read %v: got %v, want ErrUnwritten", v, err)
		}
		return
	}
	if err != nil {
		m.fail("read %v: %v", v, err)
	}
	if string(got) != string(m.val[v.off:v.end()]) {
		m.fail("read %v: got % x, want % x", v, got, m.val[v.off:v.end()])
	}
}

// element is the value of v's element i in bytes src (a model copy).
func element(src []byte, size, i int) uint32 {
	switch size {
	case 1:
		return uint32(src[i])
	case 2:
		return uint32(binary.LittleEndian.Uint16(src[2*i:]))
	}
	return binary.LittleEndian.Uint32(src[4*i:])
}

// put stores x, saturated to size bytes, as element i of dst.
func put(dst []byte, size, i int, x uint32) {
	switch size {
	case 1:
		dst[i] = byte(min(x, 0xff))
	case 2:
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(min(x, 0xffff)))
	default:
		binary.LittleEndian.PutUint32(dst[4*i:], x)
	}
}

func (m *byteModel) write(s *vkc.Stream, v *byteView) error {
	xs := make([]uint32, v.n)
	for i := range xs {
		xs[i] = m.r.Uint32()
	}
	var err error
	switch v.size {
	case 1:
		err = v.u8.WriteOn(s, convertAll[uint8](xs))
	case 2:
		err = v.u16.WriteOn(s, convertAll[uint16](xs))
	default:
		err = v.u32.WriteOn(s, xs)
	}
	if err == nil {
		for i, x := range xs {
			// the host wrote the low bytes (a Go conversion truncates)
			put(m.val[v.off:], v.size, i, x&(uint32(1)<<(8*v.size)-1))
			for b := range v.size {
				m.written[v.off+v.size*i+b] = true
			}
		}
	}
	return err
}

func convertAll[T uint8 | uint16](xs []uint32) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = T(x)
	}
	return out
}

func (m *byteModel) fill(s *vkc.Stream, v *byteView) error {
	x := m.r.Uint32()
	var err error
	switch v.size {
	case 1:
		x &= 0xff
		err = vkc.Fill(s, v.u8, uint8(x))
	case 2:
		x &= 0xffff
		err = vkc.Fill(s, v.u16, uint16(x))
	default:
		err = vkc.Fill(s, v.u32, x)
	}
	if err == nil {
		for i := range v.n {
			put(m.val[v.off:], v.size, i, x)
			for b := range v.size {
				m.written[v.off+v.size*i+b] = true
			}
		}
	}
	return err
}

// convert is Convert (or Copy, when copy and the types agree) of src into
// dst; it reports whether the op was refused. Convert (package ops) takes
// 32-bit integers and refuses 8- and 16-bit ones, changing nothing.
func (m *byteModel) convert(s *vkc.Stream, src, dst *byteView, copyOp bool) (bool, error) {
	overlap := src.off < dst.end() && dst.off < src.end()
	var err error
	switch {
	case !copyOp && (src.size != 4 || dst.size != 4):
		err = m.convertNarrow(s, src, dst)
		if !errors.Is(err, vkc.ErrUnsupported) {
			m.fail("Convert %v into %v: %v, want an error wrapping ErrUnsupported", src, dst, err)
		}
		m.refused++
		return true, nil
	case copyOp && src.size == 1:
		err = vkc.Copy(s, src.u8, dst.u8)
	case copyOp && src.size == 2:
		err = vkc.Copy(s, src.u16, dst.u16)
	case copyOp:
		err = vkc.Copy(s, src.u32, dst.u32)
	default:
		err = opConvert(s, src.u32, dst.u32)
	}
	if overlap {
		if err == nil {
			m.fail("%v into overlapping %v was not refused", src, dst)
		}
		m.refused++
		return true, nil
	}
	if err != nil {
		return false, err
	}
	before := m.val
	anyUnwritten := false
	for i := src.off; i < src.end(); i++ {
		anyUnwritten = anyUnwritten || !m.written[i]
	}
	for i := range dst.n {
		put(m.val[dst.off:], dst.size, i, element(before[src.off:], src.size, i))
	}
	for i := range dst.n * dst.size {
		// A copy or conversion of a source holding an unwritten byte is
		// skipped, its whole output unwritten, as a launch's is.
		m.written[dst.off+i] = !anyUnwritten
	}
	return false, nil
}

// convertNarrow is Convert between views of which one has 8- or 16-bit
// elements.
func (m *byteModel) convertNarrow(s *vkc.Stream, src, dst *byteView) error {
	switch src.size*10 + dst.size {
	case 11:
		return opConvert(s, src.u8, dst.u8)
	case 12:
		return opConvert(s, src.u8, dst.u16)
	case 14:
		return opConvert(s, src.u8, dst.u32)
	case 21:
		return opConvert(s, src.u16, dst.u8)
	case 22:
		return opConvert(s, src.u16, dst.u16)
	case 24:
		return opConvert(s, src.u16, dst.u32)
	case 41:
		return opConvert(s, src.u32, dst.u8)
	}
	return opConvert(s, src.u32, dst.u16)
}

func runByteModel(t *testing.T, seed, steps int) *byteModel {
	dev := openDevice(t)
	need := vkc.FeatureInt8 | vkc.FeatureInt16 | vkc.FeatureStorage8 | vkc.FeatureStorage16
	if dev.Info().Features&need != need {
		t.Skip("no 8- and 16-bit integers here")
	}
	m := &byteModel{t: t, r: rand.New(rand.NewPCG(uint64(seed), 7)), dev: dev}
	m.streams = []*vkc.Stream{dev.StreamWithID(0), dev.StreamWithID(1), dev.StreamWithID(2)}
	m.root = newBuffer[uint32](t, dev, byteRootLen/4)
	for step := range steps {
		s := m.streams[m.r.IntN(len(m.streams))]
		a, b := m.newView(), m.newView()
		var err error
		what := ""
		switch op := m.r.IntN(6); op {
		case 0:
			what, err = "write "+a.String(), m.write(s, a)
		case 1:
			what, err = "fill "+a.String(), m.fill(s, a)
		case 2, 3:
			// Copy (op 2) between views of one type, Convert (op 3) between
			// any two: the same element count, b at its own size.
			size := b.size
			if op == 2 {
				size = a.size
			}
			b.close()
			n := min(a.n, byteRootLen/size)
			if n != a.n {
				a.close()
				a = m.viewAt(a.size, 0, n)
			}
			b = m.viewAt(size, size*m.r.IntN((byteRootLen-size*n)/size+1), n)
			var refused bool
			refused, err = m.convert(s, a, b, op == 2)
			what = fmt.Sprintf("%s %v -> %v (refused %v)", map[bool]string{true: "copy", false: "convert"}[op == 2], a, b, refused)
		default:
			what = "read " + a.String()
			m.read(s, a)
		}
		m.history = append(m.history, fmt.Sprintf("%d s%d %s", step, s.ID(), what))
		if len(m.history) > 30 {
			m.history = m.history[1:]
		}
		if err != nil {
			m.fail("step %d %s: %v", step, what, err)
		}
		if m.r.IntN(4) == 0 {
			m.read(m.streams[m.r.IntN(len(m.streams))], m.newView())
		}
		a.close()
		b.close()
	}
	whole := m.viewAt(1, 0, byteRootLen)
	m.read(m.streams[0], whole)
	whole.close()
	return m
}

// viewAt makes the view of n elements of size bytes at byte off.
func (m *byteModel) viewAt(size, off, n int) *byteView {
	v := &byteView{size: size, off: off, n: n}
	var err error
	switch size {
	case 1:
		v.u8, err = vkc.ViewAs[uint8](m.root, off, n)
	case 2:
		v.u16, err = vkc.ViewAs[uint16](m.root, off, n)
	default:
		v.u32, err = vkc.ViewAs[uint32](m.root, off, n)
	}
	require.NoError(m.t, err, "ViewAs %v", v)
	return v
}

func TestViewBytesMatchTheModel(t *testing.T) {
	steps := gcpressure.Scaled(300, 3000)
	for seed := range 3 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := runByteModel(t, seed, steps)
			t.Logf("%d reads (%d unwritten), %d refused", m.reads, m.unwr, m.refused)
		})
	}
}
