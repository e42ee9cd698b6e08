package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// A failed black-box test prints the last 50 lines of the daemon's log
// and keeps the whole of it in a file it names.
func TestHarness_FailureShowsTheLogTailAndKeepsTheRest(t *testing.T) {
	var b syncBuffer
	for i := 1; i <= 120; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	tail := b.Tail()
	lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
	if len(lines) != 51 || lines[1] != "line 71" || lines[50] != "line 120" {
		t.Fatalf("tail has %d lines (%q ... %q)", len(lines), lines[1], lines[len(lines)-1])
	}
	m := regexp.MustCompile(`^\.\.\. 70 earlier lines of the daemon's log, the whole of it in (\S+)$`).FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("first line %q", lines[0])
	}
	full, err := os.ReadFile(m[1])
	if err != nil || string(full) != b.String() {
		t.Fatalf("kept log %s: %v", m[1], err)
	}
	os.Remove(m[1])
	var short syncBuffer
	short.Write([]byte("one\ntwo\n"))
	if short.Tail() != "one\ntwo\n" {
		t.Fatalf("a short log is shown whole: %q", short.Tail())
	}
}
