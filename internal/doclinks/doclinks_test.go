package doclinks

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two levels above this package.
const repoRoot = "../.."

var (
	// markdownLink matches [text](target) and ![alt](target), with an
	// optional "title" after the target.
	markdownLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	codeSpan     = regexp.MustCompile("`[^`]*`")
	heading      = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// documents are the Markdown files whose links are checked, relative to
// the root: README.md and everything under docs/.
func documents(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// prose is a Markdown file's lines outside fenced code blocks, with code
// spans blanked, so that code that looks like a link is not read as one.
func prose(text string) []string {
	lines := unfenced(text)
	for i, line := range lines {
		lines[i] = codeSpan.ReplaceAllString(line, "``")
	}
	return lines
}

// unfenced is a Markdown file's lines, those of fenced code blocks blank.
func unfenced(text string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines = append(lines, "")
			continue
		}
		if fenced {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// anchors are the fragments GitHub gives a Markdown file's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range unfenced(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugify is GitHub's heading anchor: lower case, spaces to hyphens,
// punctuation other than hyphens and underscores dropped.
func slugify(title string) string {
	title = strings.ReplaceAll(title, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Every relative link in README.md and docs/**/*.md leads to a file that
// exists, and every fragment of a link to a Markdown file names one of
// its headings.
func TestDocumentationLinksResolve(t *testing.T) {
	checked := 0
	for _, doc := range documents(t) {
		data, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(data)) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, fragment, _ := strings.Cut(target, "#")
				resolved := doc
				if file != "" {
					resolved = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
				}
				text, err := os.ReadFile(filepath.Join(repoRoot, resolved))
				if err != nil {
					if info, statErr := os.Stat(filepath.Join(repoRoot, resolved)); statErr == nil && info.IsDir() && fragment == "" {
						continue
					}
					t.Errorf("%s:%d: link %q: %s does not exist", doc, n+1, target, resolved)
					continue
				}
				if fragment != "" && strings.HasSuffix(resolved, ".md") && !anchors(string(text))[fragment] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", doc, n+1, target, resolved, fragment)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the documents moved, or the link pattern broke")
	}
}

// The pattern and the anchors read links and headings as GitHub does.
func TestLinkPatternAndAnchors(t *testing.T) {
	lines := prose("see [a](guide/a.md#x-y) and ![img](p.png \"t\")\n```\n[not](a link)\n```\n`[nor](this)`")
	var got []string
	for _, line := range lines {
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			got = append(got, m[1])
		}
	}
	if strings.Join(got, " ") != "guide/a.md#x-y p.png" {
		t.Errorf("links %q, want guide/a.md#x-y and p.png", got)
	}
	a := anchors("# Timing a graph's launches\n## Reads that don't block\n## `Param` and views\n## Reads that don't block")
	for _, want := range []string{"timing-a-graphs-launches", "reads-that-dont-block", "param-and-views", "reads-that-dont-block-1"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
}
