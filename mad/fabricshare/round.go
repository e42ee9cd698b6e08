package fabricshare

import (
	"slices"
	"time"
)

// order is the list as a round reads it: the port asked longest ago
// first (one never asked before any), ties in list order. A round that a
// changed list ends early starts again from the ports still waiting, not
// from the list's first: under a list rewritten every few hundred
// milliseconds every port is still read within about an interval.
func (r *ShareReader) order() []Entry {
	type waiting struct {
		tried time.Time
		e     Entry
	}
	w := make([]waiting, len(r.list))
	for i, e := range r.list {
		w[i] = waiting{r.tried[portKey{e.SwitchGUID, e.Port}], e}
	}
	slices.SortStableFunc(w, func(a, b waiting) int { return a.tried.Compare(b.tried) })
	out := make([]Entry, len(w))
	for i := range w {
		out[i] = w[i].e
	}
	return out
}

// failure is one switch's failed reads in a round: how many, and the
// first one's reason.
type failure struct {
	ports  int
	reason string
}

// logFailures says, per switch, how many of its ports failed this round
// and why (rate-limited: a switch that stays unreadable is said hourly,
// with the count of the lines held back).
func (r *ShareReader) logFailures(failed map[string]*failure) {
	for guid, f := range failed {
		if ok, sup := r.logs.Note("switch "+guid, time.Now()); ok {
			r.loop.Log().Warn("fabric switch ports not read", "switch", guid, "failedPorts", f.ports, "reason", f.reason, "suppressed", sup)
		}
	}
}

// due is when the i-th of n reads of a round is due: evenly spaced over
// the interval, the first at its start, the last one gap before its end.
func due(start time.Time, i, n int, interval time.Duration) time.Time {
	return start.Add(time.Duration(int64(interval) / int64(n) * int64(i)))
}
