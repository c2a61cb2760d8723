package capture

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
)

// lifecycleModel is the smallest statement of DESIGN §4 the fuzzer checks
// StreamCapture against: plain slices with linear deduplication, no reuse.
type lifecycleModel struct {
	state    State
	owner    uint64
	recorded []Binding
	steps    [][]Binding // each Record call's bindings, as given
	host     []alloc.Claim
	failure  error
}

func (m *lifecycleModel) drop() {
	m.recorded, m.steps, m.host, m.failure = nil, nil, nil, nil
}

func (m *lifecycleModel) close() {
	m.state, m.owner = Idle, 0
}

func (m *lifecycleModel) prepare(owner uint64) bool {
	if m.state != Idle {
		return false
	}
	m.drop()
	m.state, m.owner = Prepared, owner
	return true
}

func (m *lifecycleModel) begin() bool {
	if m.state != Prepared {
		return false
	}
	m.state = Recording
	return true
}

// end returns what End must return and whether it must succeed.
func (m *lifecycleModel) end(caller uint64) (CaptureEnd, bool) {
	end := CaptureEnd{Owner: m.owner, Owned: m.owner == caller}
	switch m.state {
	case Recording:
		m.close()
		return end, true
	case Prepared:
		m.drop()
		m.close()
		return end, false
	}
	return CaptureEnd{}, false
}

func (m *lifecycleModel) abort() bool {
	if m.state == Idle {
		return false
	}
	m.drop()
	m.close()
	return true
}

func (m *lifecycleModel) record(bindings []Binding) {
	if m.state != Recording {
		return
	}
	m.steps = append(m.steps, append([]Binding(nil), bindings...))
next:
	for _, b := range bindings {
		for i := range m.recorded {
			if m.recorded[i].Claim == b.Claim {
				m.recorded[i].Write = m.recorded[i].Write || b.Write
				continue next
			}
		}
		m.recorded = append(m.recorded, Binding{Claim: b.Claim, Write: b.Write})
	}
}

func (m *lifecycleModel) fail(err error) {
	if m.state == Recording && m.failure == nil {
		m.failure = err
	}
}

func (m *lifecycleModel) retainHost(staging alloc.Claim) {
	if m.state != Recording {
		return
	}
	for _, h := range m.host {
		if h == staging {
			return
		}
	}
	m.host = append(m.host, staging)
}

func (m *lifecycleModel) takeRecorded() []Binding {
	if m.state != Idle {
		return nil
	}
	taken := m.recorded
	m.recorded, m.steps = nil, nil
	return taken
}

// readWriteCount is how many of bs are both read and written.
func readWriteCount(bs []Binding) int {
	n := 0
	for _, b := range bs {
		if b.Write && b.Read {
			n++
		}
	}
	return n
}

// writeCount is how many of bs are written.
func writeCount(bs []Binding) int {
	n := 0
	for _, b := range bs {
		if b.Write {
			n++
		}
	}
	return n
}

// takeSteps derives Sealed's Steps and Inputs from the raw Record calls by
// definition: indexes into recorded (binding order of first sight); a step
// reads its unwritten and read-write bindings before writing; its
// ReadExtents and Extents are nil unless a read, or a write, is dynamic,
// else one per read, or per write (the zero Extent for the whole claim);
// an input is a claim whose first step reads it.
func (m *lifecycleModel) takeSteps(recorded []Binding) ([]Step, []alloc.Claim) {
	at := func(c alloc.Claim) int32 {
		for i, b := range recorded {
			if b.Claim == c {
				return int32(i)
			}
		}
		panic("claim not recorded")
	}
	var steps []Step
	first := map[alloc.Claim]bool{} // claim -> its first step reads it
	for _, bs := range m.steps {
		st := Step{Reads: []int32{}, Writes: []int32{}}
		reads := map[alloc.Claim]bool{}
		for _, b := range bs {
			if !b.Write || b.Read {
				st.Reads = append(st.Reads, at(b.Claim))
				reads[b.Claim] = true
				if b.Extent.Dynamic() {
					if st.ReadExtents == nil {
						st.ReadExtents = make([]Extent, len(bs)-writeCount(bs)+readWriteCount(bs))
					}
					st.ReadExtents[len(st.Reads)-1] = b.Extent
				}
			}
		}
		for j, b := range bs {
			if !b.Write {
				continue
			}
			st.Writes = append(st.Writes, at(b.Claim))
			if b.Extent.Dynamic() {
				if st.Extents == nil {
					st.Extents = make([]Extent, writeCount(bs))
				}
				st.Extents[len(st.Writes)-1] = bs[j].Extent
			}
		}
		for _, b := range bs {
			if _, seen := first[b.Claim]; !seen {
				first[b.Claim] = reads[b.Claim]
			}
		}
		steps = append(steps, st)
	}
	m.steps = nil
	var inputs []alloc.Claim
	for _, b := range recorded {
		if first[b.Claim] {
			inputs = append(inputs, b.Claim)
		}
	}
	return steps, inputs
}

func (m *lifecycleModel) takeHost() []alloc.Claim {
	if m.state != Idle {
		return nil
	}
	taken := m.host
	m.host = nil
	return taken
}

func (m *lifecycleModel) takeFailure() error {
	if m.state != Idle {
		return nil
	}
	err := m.failure
	m.failure = nil
	return err
}

// fuzzBytes hands out the fuzzer's bytes one at a time, then zeros.
type fuzzBytes struct{ data []byte }

func (f *fuzzBytes) next() byte {
	if len(f.data) == 0 {
		return 0
	}
	b := f.data[0]
	f.data = f.data[1:]
	return b
}

// claim draws from a tiny pool (two pages, four adjacent ranges each) so that
// repeats and same-page neighbours are frequent.
func (f *fuzzBytes) claim() alloc.Claim {
	return claimFromByte(f.next())
}

// binding is a claim from the pool plus write and read bits from the same
// byte, and with bit 5 a dynamic Extent whose length parameter (one of four,
// on a page of its own) and scale come from the top two bits, so that steps
// and sealed graphs carry extents that differ from one write to the next.
func (f *fuzzBytes) binding() Binding {
	b := f.next()
	binding := Binding{Claim: claimFromByte(b), Write: b&8 != 0, Read: b&16 != 0}
	if b&32 != 0 {
		k := uint64(b >> 6)
		binding.Extent = Extent{Param: alloc.Claim{Page: 2, Offset: 4 * k, Size: 4}, Scale: 4 << k}
	}
	return binding
}

func claimFromByte(b byte) alloc.Claim {
	return alloc.Claim{Page: alloc.PageID(b & 1), Offset: uint64(b>>1&3) * 16, Size: 16}
}

var fuzzFailures = []error{nil, errors.New("fuzz failure A"), errors.New("fuzz failure B")}

const (
	opPrepare = iota
	opBegin
	opEnd
	opAbort
	opRecord
	opFail
	opRetainHost
	opTakeRecorded
	opTakeFailure
	opTakeRetainedHost
	opSeal
	opAbandon
	numOps
)

func FuzzStreamCapture(f *testing.F) {
	f.Add([]byte{opPrepare, 1, opBegin, opRecord, 2, 0, 9, opEnd, 1, opTakeRecorded})
	f.Add([]byte{opPrepare, 1, opBegin, opRecord, 3, 0, 8, 2, opRetainHost, 5, opFail, 1, opFail, 2, opSeal, 1})
	f.Add([]byte{opPrepare, 0, opBegin, opRecord, 1, 4, opSeal, 2, opPrepare, 2, opSeal, 2, opSeal, 2})
	f.Add([]byte{opEnd, 0, opAbort, opBegin, opPrepare, 1, opPrepare, 2, opEnd, 2, opTakeFailure})
	f.Add([]byte{opAbandon, opPrepare, 1, opAbandon, opBegin, opRecord, 2, 9, 16, opFail, 1, opAbandon, opAbandon, opSeal, 1})
	// Dynamic extents: a step with a dynamic write (bit 5), a whole-claim
	// write and a read carrying an extent bit; a repeat of it (sameAsLast)
	// with other extents; a step with none.
	f.Add([]byte{opPrepare, 1, opBegin, opRecord, 3, 0b01101001, 0b00001010, 0b00100100, opRecord, 3, 0b11101001, 0b00101010, 0b00100100, opRecord, 1, 9, opSeal, 1})
	f.Fuzz(runCallSequence)
}

// runCallSequence decodes data into calls on a fresh StreamCapture and checks
// every result and the state after every step against lifecycleModel.
func runCallSequence(t *testing.T, data []byte) {
	in := &fuzzBytes{data: data}
	var c StreamCapture
	var m lifecycleModel
	for step := 0; len(in.data) > 0; step++ {
		op := in.next() % numOps
		switch op {
		case opPrepare:
			owner := uint64(in.next() % 3)
			checkErr(t, step, m.prepare(owner), c.Prepare(owner))
		case opBegin:
			checkErr(t, step, m.begin(), c.Begin())
		case opEnd:
			caller := uint64(in.next() % 3)
			wantEnd, ok := m.end(caller)
			gotEnd, err := c.End(caller)
			checkErr(t, step, ok, err)
			require.Equal(t, wantEnd, gotEnd, "step %d: End(%d)", step, caller)
		case opAbort:
			checkErr(t, step, m.abort(), c.Abort())
		case opRecord:
			bindings := make([]Binding, in.next()%4)
			for i := range bindings {
				bindings[i] = in.binding()
			}
			m.record(bindings)
			c.Record(bindings...)
		case opFail:
			err := fuzzFailures[int(in.next())%len(fuzzFailures)]
			m.fail(err)
			c.Fail(err)
		case opRetainHost:
			staging := in.claim()
			m.retainHost(staging)
			c.RetainHost(staging)
		case opTakeRecorded:
			require.Equal(t, m.takeRecorded(), c.TakeRecorded(), "step %d: TakeRecorded", step)
		case opTakeFailure:
			require.Equal(t, m.takeFailure(), c.TakeFailure(), "step %d: TakeFailure", step)
		case opTakeRetainedHost:
			require.Equal(t, m.takeHost(), c.TakeRetainedHost(), "step %d: TakeRetainedHost", step)
		case opSeal:
			checkSeal(t, step, &m, &c, uint64(in.next()%3))
		case opAbandon:
			checkAbandon(t, step, &m, &c)
		}
		checkQueries(t, step, &m, &c)
	}
}

func checkErr(t *testing.T, step int, wantOK bool, err error) {
	t.Helper()
	if wantOK {
		require.NoError(t, err, "step %d", step)
		return
	}
	require.ErrorIs(t, err, errs.CaptureState, "step %d", step)
}

// checkSeal derives Seal's contract from the model's End and Take calls.
func checkSeal(t *testing.T, step int, m *lifecycleModel, c *StreamCapture, caller uint64) {
	t.Helper()
	wasPrepared := m.state == Prepared
	end, ok := m.end(caller)
	sealed, err := c.Seal(caller)
	if !ok {
		require.ErrorIs(t, err, errs.CaptureState, "step %d", step)
		want := Sealed{}
		if wasPrepared {
			want.Owner = end.Owner
		}
		require.Equal(t, want, sealed, "step %d", step)
		return
	}
	want := Sealed{Owner: end.Owner, Host: m.takeHost()}
	steps := m.steps
	recorded := m.takeRecorded()
	m.steps = steps
	for _, b := range recorded {
		want.Touched = append(want.Touched, b.Claim)
		if b.Write {
			want.Writes = append(want.Writes, b.Claim)
		}
	}
	want.Steps, want.Inputs = m.takeSteps(recorded)
	failure := m.takeFailure()
	if !end.Owned || failure != nil {
		want.Steps = nil // only a graph needs them
	}
	require.Equal(t, want, sealed, "step %d: Seal(%d)", step, caller)
	switch {
	case end.Owned && failure == nil:
		require.NoError(t, err, "step %d", step)
	case !end.Owned:
		require.ErrorIs(t, err, errs.CaptureState, "step %d", step)
		if failure != nil {
			require.ErrorIs(t, err, failure, "step %d", step)
		}
	default:
		require.ErrorIs(t, err, failure, "step %d", step)
	}
}

// checkAbandon: refused unless Recording, changing nothing; otherwise what
// an owner's Seal would hand back less Steps, plus the failure taken.
func checkAbandon(t *testing.T, step int, m *lifecycleModel, c *StreamCapture) {
	t.Helper()
	sealed, doomed, err := c.Abandon()
	if m.state != Recording {
		require.ErrorIs(t, err, errs.CaptureState, "step %d", step)
		require.Equal(t, Sealed{}, sealed, "step %d", step)
		require.NoError(t, doomed, "step %d", step)
		return
	}
	require.NoError(t, err, "step %d", step)
	want := Sealed{Owner: m.owner}
	m.close()
	want.Host = m.takeHost()
	steps := m.steps
	recorded := m.takeRecorded()
	m.steps = steps
	for _, b := range recorded {
		want.Touched = append(want.Touched, b.Claim)
		if b.Write {
			want.Writes = append(want.Writes, b.Claim)
		}
	}
	_, want.Inputs = m.takeSteps(recorded)
	require.Equal(t, m.takeFailure(), doomed, "step %d: Abandon", step)
	require.Equal(t, want, sealed, "step %d: Abandon", step)
}

// observation is what the queries report, comparable so the check after
// every step costs nanoseconds and testify only formats a mismatch.
type observation struct {
	State     State
	Recording bool
	Active    bool
	Owner     uint64
	HasOwner  bool
	Mode      CacheMode
	Failure   error
}

func (m *lifecycleModel) observe() observation {
	o := observation{State: m.state, Recording: m.state == Recording, Active: m.state != Idle, Mode: CacheLRU, Failure: m.failure}
	if m.state != Idle {
		o.Owner, o.HasOwner, o.Mode = m.owner, true, CachePinned
	}
	return o
}

func observe(c *StreamCapture) observation {
	o := observation{State: c.State(), Recording: c.IsRecording(), Active: c.IsActive(), Mode: c.CacheMode(), Failure: c.failure}
	o.Owner, o.HasOwner = c.Owner()
	return o
}

// checkQueries compares every query and the held recording with the model,
// and checks that the deduplication indexes agree with the slices they index.
func checkQueries(t *testing.T, step int, m *lifecycleModel, c *StreamCapture) {
	t.Helper()
	if want, got := m.observe(), observe(c); want != got {
		require.Equal(t, want, got, "step %d", step)
	}
	if !slices.Equal(m.recorded, c.recorded) {
		require.Equal(t, m.recorded, c.recorded, "step %d: recording", step)
	}
	if !slices.Equal(m.host, c.host) {
		require.Equal(t, m.host, c.host, "step %d: retained host", step)
	}
	if len(c.recordedAt) != len(c.recorded) || len(c.hostAt) != len(c.host) {
		require.Fail(t, "index size differs from what it indexes", "step %d: %d/%d recorded, %d/%d host",
			step, len(c.recordedAt), len(c.recorded), len(c.hostAt), len(c.host))
	}
	for i, b := range c.recorded {
		if at, ok := c.recordedAt[b.Claim.Key()]; !ok || at != i {
			require.Fail(t, "recording index is stale", "step %d: %v at %d, index says %d (%v)", step, b.Claim, i, at, ok)
		}
	}
	for _, h := range c.host {
		if _, ok := c.hostAt[h.Key()]; !ok {
			require.Fail(t, "host index is stale", "step %d: %v missing", step, h)
		}
	}
}
