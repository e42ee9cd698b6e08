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
	if len(r.seen) > 300 {
		t.Fatalf("%d keys kept", len(r.seen))
	}
}
