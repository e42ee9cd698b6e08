package rules

import (
	"math/bits"
	"slices"
	"time"
)

// Bucket is how many events (N) happened at one instant (At).
type Bucket struct {
	At time.Time `json:"at"`
	N  uint64    `json:"n"`
}

// Window counts events within a sliding time window as buckets, never one
// timestamp per event: a link_downed jump from 0 to 2^64-1 is one bucket
// holding that number, not 2^64-1 timestamps (which exhausted memory and
// made the state file grow without bound). Only the newest buckets needed
// to reach the threshold are kept: whether "at least threshold events
// within the window" holds depends on nothing older, so a window never
// holds more buckets than its threshold, whatever a counter says.
type Window []Bucket

// Add records n events at t (n == 0 records nothing). Buckets stay in
// time order: an event stamped before the newest bucket (a clock stepped
// back) is counted with the newest one.
func (w *Window) Add(t time.Time, n uint64) {
	if n == 0 {
		return
	}
	if k := len(*w); k > 0 && !t.After((*w)[k-1].At) {
		(*w)[k-1].N = addSat((*w)[k-1].N, n)
		return
	}
	*w = append(*w, Bucket{At: t, N: n})
}

// Trim drops the buckets that left the window at now, and the oldest ones
// that the newer ones already make up threshold without.
func (w *Window) Trim(now time.Time, window time.Duration, threshold int) {
	b := slices.DeleteFunc(*w, func(b Bucket) bool { return now.Sub(b.At) >= window || b.N == 0 })
	need := uint64(max(threshold, 1))
	var newer uint64
	for i := len(b) - 1; i > 0; i-- {
		newer = addSat(newer, b[i].N)
		if newer >= need {
			b = slices.Delete(b, 0, i)
			break
		}
	}
	if len(b) == 0 {
		b = nil
	}
	*w = b
}

// Cap keeps at most n events, the newest: the oldest buckets go first,
// and the oldest one kept is cut to what is left.
func (w *Window) Cap(n uint64) {
	b := *w
	var kept uint64
	for i := len(b) - 1; i >= 0; i-- {
		if kept >= n {
			b = slices.Delete(b, 0, i+1)
			break
		}
		if room := n - kept; b[i].N > room {
			b[i].N = room
		}
		kept += b[i].N
	}
	if len(b) == 0 {
		b = nil
	}
	*w = b
}

// Count is the number of events in the window (saturating at 2^64-1).
func (w Window) Count() uint64 {
	var n uint64
	for _, b := range w {
		n = addSat(n, b.N)
	}
	return n
}

// addSat is a+b, or 2^64-1 when that overflows: counts that come from a
// counter file are bounded by the type, never wrapped.
func addSat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}
