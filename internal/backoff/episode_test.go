package backoff

import (
	"testing"
	"time"
)

// An episode opens once, doubles its wait up to the cap (each wait within
// half and one and a half of its base, for the jitter), and closes with the
// number of failures it counted; the next one starts from the minimum.
func TestEpisode_BacksOffToTheCapAndCloses(t *testing.T) {
	e := Episode{Min: 100 * time.Millisecond, Max: 400 * time.Millisecond}
	bases := []time.Duration{100, 200, 400, 400}
	for i, b := range bases {
		base := b * time.Millisecond
		first, wait := e.Fail()
		if first != (i == 0) {
			t.Fatalf("failure %d: first %v", i+1, first)
		}
		if wait < base/2 || wait >= base/2+base {
			t.Fatalf("failure %d: wait %v outside [%v, %v)", i+1, wait, base/2, base/2+base)
		}
	}
	if n, _ := e.Recovered(); n != 4 {
		t.Fatalf("recovered after %d failures, want 4", n)
	}
	if n, _ := e.Recovered(); n != 0 {
		t.Fatalf("a closed episode recovered again: %d", n)
	}
	if first, wait := e.Fail(); !first || wait >= 150*time.Millisecond {
		t.Fatalf("a new episode: first %v, wait %v (want the minimum's)", first, wait)
	}
}
