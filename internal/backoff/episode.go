package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Episode is one run of consecutive failures of one kind. Min is the
// first wait and Max the cap; the zero Episode with them set is ready.
type Episode struct {
	Min, Max time.Duration
	next     time.Duration
	fails    uint64
	start    time.Time
}

// Fail records one failure; first reports whether it opened the episode,
// wait is how long to back off before the next attempt.
func (e *Episode) Fail() (first bool, wait time.Duration) {
	if e.fails == 0 {
		e.start = time.Now()
		e.next = e.Min
	}
	e.fails++
	base := e.next
	e.next = min(2*e.next, e.Max)
	// Jitter keeps a fleet of nodes from retrying in lockstep when a
	// shared connector comes back.
	return e.fails == 1, base/2 + time.Duration(rand.Int64N(int64(base)))
}

// Recovered closes the episode; fails is 0 when there was none.
func (e *Episode) Recovered() (fails uint64, lasted time.Duration) {
	fails, e.fails = e.fails, 0
	if fails == 0 {
		return 0, 0
	}
	return fails, time.Since(e.start).Round(time.Millisecond)
}

// Fails is the number of failures of the open episode (0: none open).
func (e *Episode) Fails() uint64 { return e.fails }

// Start is when the open episode began.
func (e *Episode) Start() time.Time { return e.start }

// Sleep waits d or until ctx is done; false means stop.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
