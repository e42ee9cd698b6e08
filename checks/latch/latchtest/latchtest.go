// Package latchtest is test support for the checks' state-file sections:
// it pins that a section as an earlier build wrote it still loads and
// saves unchanged, so an upgrade neither re-announces nor forgets what a
// check raised.
package latchtest

import "testing"

// Section is a check's part of the state file, as checks.Memory has it.
type Section interface {
	Restore(raw []byte) (dropped []string)
	Marshal() ([]byte, error)
}

// LoadsAndSavesUnchanged restores written (a section as a build wrote
// it, compact JSON) into m and fails unless nothing is dropped and m
// saves it again byte for byte.
func LoadsAndSavesUnchanged(t testing.TB, m Section, written string) {
	t.Helper()
	if dropped := m.Restore([]byte(written)); len(dropped) != 0 {
		t.Fatalf("dropped %q from a section an earlier build wrote", dropped)
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != written {
		t.Fatalf("saved\n%s\nwant\n%s", out, written)
	}
}

// Drops restores written into m and fails unless it drops exactly want,
// in the order Restore lists them: what no check could have written goes,
// each entry named, and nothing else.
func Drops(t testing.TB, m Section, written string, want ...string) {
	t.Helper()
	dropped := m.Restore([]byte(written))
	if len(dropped) != len(want) {
		t.Fatalf("dropped %q, want %q", dropped, want)
	}
	for i := range want {
		if dropped[i] != want[i] {
			t.Fatalf("dropped %q, want %q", dropped, want)
		}
	}
}
