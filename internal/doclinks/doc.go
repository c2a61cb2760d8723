// Package doclinks holds the test that keeps the project's documentation
// navigable: every relative link in README.md and docs/**/*.md must lead to
// a file that exists, and every #fragment of a link to a Markdown file to
// one of its headings. It has no code of its own.
package doclinks
