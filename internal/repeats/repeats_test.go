package repeats

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiter_FirstLoggedRepeatsCountedThenLoggedWithCount(t *testing.T) {
	r := Limiter{Window: time.Minute}
	t0 := time.Unix(1_700_000_000, 0)
	if ok, n := r.Note("a", t0); !ok || n != 0 {
		t.Fatalf("first: %v %d", ok, n)
	}
	for i := 1; i <= 999; i++ {
		if ok, _ := r.Note("a", t0.Add(time.Duration(i)*time.Millisecond)); ok {
			t.Fatalf("repeat %d logged within the window", i)
		}
	}
	if ok, _ := r.Note("b", t0.Add(time.Second)); !ok {
		t.Fatal("another kind was suppressed")
	}
	if ok, n := r.Note("a", t0.Add(time.Minute)); !ok || n != 999 {
		t.Fatalf("after the window: %v, %d suppressed (want 999)", ok, n)
	}
}

func TestLimiter_DistinctKeysDoNotGrowForever(t *testing.T) {
	r := Limiter{Window: time.Second}
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 10_000; i++ {
		r.Note(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))
	}
	if r.Len() > 256 {
		t.Fatalf("%d keys kept", r.Len())
	}
}

// TestIssue40Row3_FloodOfDistinctLinesStaysBounded: 200,000 distinct
// lines inside one window (a helper flooding stderr) keep at most 256
// kinds; once the 256 are taken, the rest are one shared kind logged once
// a window, and every line held back is counted when it is next logged.
func TestIssue40Row3_FloodOfDistinctLinesStaysBounded(t *testing.T) {
	r := Limiter{Window: time.Hour}
	t0 := time.Unix(1_700_000_000, 0)
	logged := 0
	for i := 0; i < 200_000; i++ {
		if ok, _ := r.Note(fmt.Sprintf("ibwarn: line %d", i), t0.Add(time.Duration(i)*time.Microsecond)); ok {
			logged++
		}
	}
	if r.Len() != 256 {
		t.Errorf("%d kinds kept after 200,000 distinct lines, want the cap of 256", r.Len())
	}
	if len(r.slots) > 256 {
		t.Errorf("%d slots allocated, want at most 256", len(r.slots))
	}
	// 256 kinds of their own, then one line of the shared kind.
	if logged != 257 {
		t.Errorf("%d lines logged, want 257 (256 kinds and one 'other lines')", logged)
	}
	// After the window, the next line past the cap reports what was held
	// back: 200,000 - 257.
	ok, n := r.Note("ibwarn: yet another", t0.Add(2*time.Hour))
	if !ok {
		t.Fatal("a line after the window was suppressed")
	}
	// The oldest kind's window is over, so it takes that kind's place.
	if n != 0 {
		t.Errorf("a new kind in a freed place reports %d suppressed, want 0", n)
	}
	// Every kept kind is over its window now: a second burst of distinct
	// lines replaces them, and the shared kind reports its count at its
	// next log.
	total := 0
	for i := 0; i < 300; i++ {
		if ok, s := r.Note(fmt.Sprintf("second burst %d", i), t0.Add(2*time.Hour+time.Duration(i)*time.Microsecond)); ok {
			total += s
		}
	}
	if total != 200_000-257 {
		t.Errorf("the shared kind reported %d held-back lines, want %d", total, 200_000-257)
	}
}

// TestIssue40Row3_ForgottenKindHandsItsCountToTheShared: a kind pushed
// out with repeats unreported hands them on, so they are still counted.
func TestIssue40Row3_ForgottenKindHandsItsCountToTheShared(t *testing.T) {
	r := Limiter{Window: time.Minute, Keys: 2}
	t0 := time.Unix(1_700_000_000, 0)
	r.Note("a", t0)
	r.Note("a", t0.Add(time.Second)) // held back
	r.Note("a", t0.Add(2*time.Second))
	r.Note("b", t0.Add(3*time.Second))
	// c: a and b are inside their windows, so c is the shared kind.
	if ok, n := r.Note("c", t0.Add(4*time.Second)); !ok || n != 0 {
		t.Fatalf("c: %v %d", ok, n)
	}
	if ok, _ := r.Note("d", t0.Add(5*time.Second)); ok {
		t.Fatal("a second line past the cap within the window was logged")
	}
	// After a's window: e takes a's place, a's two repeats go to the
	// shared count.
	if ok, n := r.Note("e", t0.Add(61*time.Second)); !ok || n != 0 {
		t.Fatalf("e: %v %d", ok, n)
	}
	if ok, _ := r.Note("b", t0.Add(64*time.Second)); !ok {
		t.Fatal("b after its window was suppressed")
	}
	// f: a's place is taken by e, b's by b; the shared kind's window is
	// over: it logs with d and a's two repeats.
	if ok, n := r.Note("f", t0.Add(70*time.Second)); !ok || n != 3 {
		t.Fatalf("f: %v, %d suppressed, want true, 3 (d and a's two)", ok, n)
	}
}

// TestIssue40Row3_LongKeysShareAKind: lines alike in their first 256
// bytes are one kind, so long distinct lines cannot grow the set.
func TestIssue40Row3_LongKeysShareAKind(t *testing.T) {
	r := Limiter{Window: time.Minute}
	t0 := time.Unix(1_700_000_000, 0)
	long := string(make([]byte, 300))
	r.Note(long+"1", t0)
	if ok, _ := r.Note(long+"2", t0.Add(time.Second)); ok {
		t.Fatal("a line differing past byte 256 was a new kind")
	}
}

// BenchmarkIssue40Row3_DistinctLines: the cost of one line of a flood of
// distinct lines (the set full, every kind inside its window).
func BenchmarkIssue40Row3_DistinctLines(b *testing.B) {
	r := Limiter{Window: time.Hour}
	t0 := time.Unix(1_700_000_000, 0)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("ibwarn: [1234] mad_rpc: _do_madrpc failed; dport (Lid %d)", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Note(keys[i&(len(keys)-1)], t0.Add(time.Duration(i)))
		i++
	}
}

// BenchmarkIssue40Row3_DistinctLinesChurn: distinct lines each past its
// window, so every line forgets the oldest kind and takes its place.
func BenchmarkIssue40Row3_DistinctLinesChurn(b *testing.B) {
	r := Limiter{Window: time.Millisecond}
	t0 := time.Unix(1_700_000_000, 0)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("ibwarn: [1234] mad_rpc: _do_madrpc failed; dport (Lid %d)", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Note(keys[i&(len(keys)-1)], t0.Add(time.Duration(i)*time.Millisecond))
		i++
	}
}
