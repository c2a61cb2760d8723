package recorder_test

import (
	"errors"
	"slices"

	"github.com/vkcompute/vkc/alloc"
	"github.com/vkcompute/vkc/internal/errs"
	"github.com/vkcompute/vkc/recorder"
)

// status is what the model knows of a buffer's bytes.
type status uint8

const (
	// clean: the buffer must read exactly its model value.
	clean status = iota
	// atRisk: work that writes it was pending when a fault fired, or it
	// was computed from a buffer at risk: it reads either its model value
	// or as unwritten with one of the causes, never anything else.
	atRisk
	// tainted: it must read as unwritten with one of the causes.
	tainted
)

func (s status) String() string { return [...]string{"clean", "at risk", "tainted"}[s] }

// mbuf is one buffer of the model: its claim and what it must hold.
type mbuf struct {
	name   string
	c      alloc.Claim
	ok     bool // allocated (an allocation may fail under fault injection)
	st     *recorder.Staging
	stg    *mbuf // the persistent staging's model, once it exists
	val    []float32
	status status
	causes []error
}

// staging returns the model of b's persistent staging, once the recorder
// gave b one (nil before).
func (b *mbuf) staging() *mbuf {
	if b.st != nil && b.stg == nil {
		b.stg = newMbuf(b.name+"'", len(b.val))
	}
	return b.stg
}

// refill is what a replay's recorded copy from b's staging does.
func (b *mbuf) refill() {
	stg := b.stg
	apply([]*mbuf{stg}, []*mbuf{b}, func() [][]float32 { return [][]float32{slices.Clone(stg.val)} })
}

func newMbuf(name string, n int) *mbuf {
	return &mbuf{name: name, val: make([]float32, n), status: tainted, causes: []error{errFresh}}
}

// setClean gives b a value every read must return.
func (b *mbuf) setClean(v []float32) {
	b.val, b.status, b.causes = slices.Clone(v), clean, nil
}

// taint makes b unwritten with cause.
func (b *mbuf) taint(causes ...error) {
	b.status, b.causes = tainted, slices.Clone(causes)
}

// risk makes a clean b at risk of cause. A tainted b stays tainted, but
// the failure may now be reported with this cause instead: pending work
// that was to write it failed after its taint was recorded.
func (b *mbuf) risk(causes ...error) {
	if b.status == clean {
		b.status, b.causes = atRisk, slices.Clone(causes)
		return
	}
	b.causes = union(b.causes, causes)
}

func union(a, b []error) []error {
	out := slices.Clone(a)
	for _, e := range b {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// apply is one eager launch or copy in the model, with the recorder's
// rule for taint: if an input is tainted the work is skipped and its
// outputs inherit the failure; if one is at risk the outputs are at risk
// of the same causes; otherwise compute gives the outputs' new values.
func apply(ins, outs []*mbuf, compute func() [][]float32) {
	worst, causes := clean, []error(nil)
	for _, b := range ins {
		if b.status > worst {
			worst = b.status
		}
		if b.status != clean {
			causes = union(causes, b.causes)
		}
	}
	if worst == tainted {
		for _, o := range outs {
			o.taint(causes...)
		}
		return
	}
	vals := compute()
	for i, o := range outs {
		o.setClean(vals[i])
		if worst == atRisk {
			o.risk(causes...)
		}
	}
}

// checkRead says what is wrong with a read of b that returned got, err;
// "" when it is what the model allows.
func checkRead(b *mbuf, got []float32, err error) string {
	unwritten := func() string {
		if !errors.Is(err, errs.Unwritten) {
			return "want ErrUnwritten, got " + errString(err)
		}
		for _, c := range b.causes {
			if errors.Is(err, c) {
				return ""
			}
		}
		return "unwritten with an unexpected cause: " + err.Error()
	}
	equal := func() string {
		if err != nil {
			return "want its value, got " + err.Error()
		}
		if !slices.Equal(got, b.val) {
			return "wrong value without an error"
		}
		return ""
	}
	switch b.status {
	case clean:
		return equal()
	case tainted:
		return unwritten()
	}
	if err == nil {
		return equal()
	}
	return unwritten()
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// Model versions of the kernels.

func splatN(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func modelAxpy(a float32, x, y []float32) []float32 {
	out := slices.Clone(y)
	for i := range out {
		out[i] = a*x[i] + y[i]
	}
	return out
}

func modelAdd(x, y []float32) []float32 {
	out := make([]float32, len(x))
	for i := range out {
		out[i] = x[i] + y[i]
	}
	return out
}

func modelSum(x []float32) []float32 {
	var s float32
	for _, v := range x {
		s += v
	}
	return []float32{s}
}
