package daemon

import (
	"sync"
	"time"
)

// repeats collapses a log line that keeps coming back (the same reload
// a thousand times, the same refusal): the first of a kind is logged, the
// repeats within window are only counted, and the first one after the
// window is logged again with that count.
type repeats struct {
	window time.Duration

	mu   sync.Mutex
	seen map[string]*repeat
}

type repeat struct {
	at time.Time
	n  int
}

// note reports whether a line of kind key should be logged now, and how
// many were suppressed since the last one that was.
func (r *repeats) note(key string, now time.Time) (log bool, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]*repeat{}
	}
	e := r.seen[key]
	if e != nil && now.Sub(e.at) < r.window {
		e.n++
		return false, 0
	}
	if e != nil {
		suppressed = e.n
	}
	if len(r.seen) > 256 {
		// Keys are error texts; a flood of distinct ones must not grow
		// the map for ever.
		for k, v := range r.seen {
			if now.Sub(v.at) >= r.window {
				delete(r.seen, k)
			}
		}
	}
	r.seen[key] = &repeat{at: now}
	return true, suppressed
}
