package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsTerminalIsFalseForFilesAndPipes(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w))

	assert.False(t, isTerminal(nil))
}

func TestDisabledProgressPrintsNothing(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressTo(&buf, false)
	p.Printf("dispatch %d/%d", 1, 4)
	p.Done()
	assert.Zero(t, buf.Len())

	var nilProgress *progress
	nilProgress.Printf("ignored")
	nilProgress.Done()
}

func TestProgressOverwritesItsLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressTo(&buf, true)
	long, short := "transfer 64 MiB upload", "matmul"
	p.Printf("%s", long)
	p.Printf("%s\nwith a newline", short)
	out := buf.String()
	assert.NotContains(t, out, "\n")

	updates := strings.Split(out, "\r")[1:]
	require.Len(t, updates, 2)
	assert.Equal(t, long, updates[0])
	assert.Equal(t, len(long), len(updates[1]), "the shorter line blanks the longer one")
	flattened := short + " with a newline"
	assert.True(t, strings.HasPrefix(updates[1], flattened))

	buf.Reset()
	p.Done()
	assert.Equal(t, "\r"+strings.Repeat(" ", len(flattened))+"\r", buf.String())
	buf.Reset()
	p.Done()
	assert.Zero(t, buf.Len(), "nothing left to blank")
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestProgressIsSafeForConcurrentUse(t *testing.T) {
	var out lockedBuffer
	p := newProgressTo(&out, true)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				p.Printf("stream %d step %d", i, j)
			}
		})
	}
	wg.Wait()
	p.Done()
	assert.Equal(t, 8*20+2, strings.Count(out.buf.String(), "\r"), "each update and the final blank start with a carriage return")
	assert.Equal(t, 0, p.width)
}
