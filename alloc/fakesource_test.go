package alloc

import "fmt"

// fakeBlock stands for one device allocation and counts its releases.
type fakeBlock struct {
	serial   int
	kind     Kind
	size     uint64
	releases int
	src      *fakeSource
}

func (b *fakeBlock) Release() {
	b.releases++
	b.src.released = append(b.src.released, b)
	if b.src.frozen || b.src.kept {
		b.src.violations = append(b.src.violations, fmt.Sprintf("block %d released while growth is locked or pages kept", b.serial))
	}
}

// fakeSource hands out fakeBlocks, fails on demand and records misuse: a
// call while the test says growth is locked, or a double release.
type fakeSource struct {
	made       []*fakeBlock
	released   []*fakeBlock
	fail       error
	frozen     bool // the test locked growth: no NewBlock, no Release
	growing    bool // ...but the current request may grow (AllocOutsideWindow)
	kept       bool // the test keeps pages: no Release
	violations []string
}

func (s *fakeSource) NewBlock(kind Kind, size uint64) (*fakeBlock, error) {
	if s.frozen && !s.growing {
		s.violations = append(s.violations, fmt.Sprintf("NewBlock(%s, %d) while growth is locked", kind, size))
	}
	if s.fail != nil {
		return nil, s.fail
	}
	b := &fakeBlock{serial: len(s.made), kind: kind, size: size, src: s}
	s.made = append(s.made, b)
	return b, nil
}

func (s *fakeSource) live() int {
	n := 0
	for _, b := range s.made {
		if b.releases == 0 {
			n++
		}
	}
	return n
}
