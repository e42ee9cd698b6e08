package counters

import (
	"testing"
	"time"
)

// Seed 10.4 step 5 for readings far apart (Slide): never judged before a
// full window, never extrapolated, judged over the real elapsed time; a
// counter that went back or a clock stepped back restarts it; its starts
// stay bounded however long it runs.
func TestSeed_10_4_SlideWindow(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var s Slide
	if v := s.Judge(time.Hour, 120, t0, 0); v.Judged {
		t.Fatal("a baseline judged")
	}
	if v := s.Judge(time.Hour, 120, t0.Add(59*time.Minute), 100); v.Judged {
		t.Fatalf("judged 59 minutes as an hour: %+v", v)
	}
	v := s.Judge(time.Hour, 120, t0.Add(90*time.Minute), 180)
	if !v.Judged || v.Delta != 180 || v.Elapsed != 90*time.Minute || v.Rate != 120 || v.Breach {
		t.Fatalf("180 over 90 minutes is 120/hour, not over: %+v", v)
	}
	if v := s.Judge(time.Hour, 120, t0.Add(80*time.Minute), 200); v.Judged || len(s.Starts) != 1 {
		t.Fatalf("a clock stepped back restarts: %+v %+v", v, s)
	}
	if v := s.Judge(time.Hour, 120, t0.Add(200*time.Minute), 100); v.Judged || len(s.Starts) != 1 || s.Starts[0].Value != 100 {
		t.Fatalf("a counter that went back restarts: %+v %+v", v, s)
	}
	at := t0.Add(200 * time.Minute)
	for i := range 10_000 {
		at = at.Add(time.Second)
		s.Judge(time.Hour, 120, at, uint64(100+i))
		if len(s.Starts) > MaxSlideStarts || !s.Valid() {
			t.Fatalf("read %d: %d starts, valid %v", i, len(s.Starts), s.Valid())
		}
	}
	bad := Slide{Starts: []CounterSnapshot{{Value: 5, Timestamp: t0.Add(time.Minute)}, {Value: 4, Timestamp: t0}}}
	if bad.Valid() {
		t.Fatal("out of order starts accepted")
	}
}

// Seed 6.3 "evaluated only after Δt ≥ window": readings exactly a window
// apart (the far end's 60 s reads, stamped by their round) are each a
// full window, judged over that window alone: 6 link error recoveries in
// one minute are over 5/min, not diluted into the next.
func TestSeed_10_4_SlideWindowExactlyItsUnitApart(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var s Slide
	s.Judge(time.Minute, 5, t0, 0)
	for i, want := range []struct {
		value  uint64
		breach bool
	}{{5, false}, {11, true}, {11, false}} {
		v := s.Judge(time.Minute, 5, t0.Add(time.Duration(i+1)*time.Minute), want.value)
		if !v.Judged || v.Elapsed != time.Minute || v.Breach != want.breach {
			t.Fatalf("minute %d: %+v", i+1, v)
		}
	}
}
