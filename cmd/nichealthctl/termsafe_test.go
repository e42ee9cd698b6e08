package main

import (
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// Issue 22 row 9: every string of a view, however deep, is printed with
// its control characters escaped, and the caller's value is left as it
// was.
func TestBounded_9_TermSafeEscapesEveryString(t *testing.T) {
	pv := dbusapi.PortView{Device: "mlx5_0", GPUs: "GPU0 (\x1b[2J)", Message: "a\x07b",
		Sanity: []string{"\x1b]0;x\x07"}, Counters: []dbusapi.CounterView{{Name: "c\u009b1m"}}}
	got := termSafe(pv)
	if got.GPUs != `GPU0 (\x1b[2J)` || got.Message != `a\x07b` || got.Sanity[0] != `\x1b]0;x\x07` || got.Counters[0].Name != `c\u009b1m` {
		t.Fatalf("%+v", got)
	}
	if pv.Sanity[0] != "\x1b]0;x\x07" || pv.Counters[0].Name != "c\u009b1m" {
		t.Fatal("termSafe modified its argument")
	}
	if s := termSafe("plain é text"); s != "plain é text" {
		t.Fatalf("plain text changed: %q", s)
	}
}
