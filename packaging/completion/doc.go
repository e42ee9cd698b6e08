// Package completion holds the bash and zsh completions of nichealthctl.
// It has no code: its test runs the bash completion in a real bash and
// checks what it offers where (packaging/mangen's test checks that the
// offered names are exactly the documented ones).
package completion
