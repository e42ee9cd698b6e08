package repeats

import (
	"sync"
	"time"
)

// Limiter is safe for concurrent use; the zero value never suppresses.
type Limiter struct {
	// Window is how long repeats of a kind are only counted.
	Window time.Duration

	mu   sync.Mutex
	seen map[string]*repeat
}

type repeat struct {
	at time.Time
	n  int
}

// Note reports whether a line of kind key should be logged now, and how
// many were suppressed since the last one that was.
func (r *Limiter) Note(key string, now time.Time) (log bool, suppressed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]*repeat{}
	}
	e := r.seen[key]
	if e != nil && now.Sub(e.at) < r.Window {
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
			if now.Sub(v.at) >= r.Window {
				delete(r.seen, k)
			}
		}
	}
	r.seen[key] = &repeat{at: now}
	return true, suppressed
}
