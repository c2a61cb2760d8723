package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
)

// isTerminal reports whether f is an interactive terminal. Progress lines
// rewrite themselves with carriage returns, which is noise in a log file or
// a CI transcript, so they are shown only on a terminal.
func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// progress prints one status line that each update overwrites in place, so a
// long run shows which suite it is in without scrolling the results away.
// A disabled progress prints nothing; all methods are safe for concurrent use.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	width   int // runes on the line now, to blank out a longer previous one
}

// newProgress returns a printer on stderr that is enabled only when stderr is
// a terminal.
func newProgress() *progress {
	return newProgressTo(os.Stderr, isTerminal(os.Stderr))
}

// newProgressTo returns a printer on w; enabled decides whether it prints.
func newProgressTo(w io.Writer, enabled bool) *progress {
	return &progress{w: w, enabled: enabled}
}

// Printf replaces the status line with the formatted message. Newlines in
// the message are flattened, since they would break the overwrite.
func (p *progress) Printf(format string, args ...any) {
	if p == nil || !p.enabled {
		return
	}
	msg := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
	p.mu.Lock()
	defer p.mu.Unlock()
	n := utf8.RuneCountInString(msg)
	pad := max(p.width-n, 0)
	fmt.Fprintf(p.w, "\r%s%s", msg, strings.Repeat(" ", pad))
	p.width = n
}

// Done blanks the status line so that what is printed next starts clean.
func (p *progress) Done() {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}
