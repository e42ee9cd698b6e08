package counters

import (
	"time"

	"github.com/nichealth/nichealthd/config/countertable"
)

// measure is a judged reading: how much the counter moved, over what time,
// its rate in the definition's unit and per second, and the verdict.
type measure struct {
	delta        uint64
	elapsed      time.Duration
	rate, perSec float64
	breach       bool
}

// windowState is WindowState inside the package.
type windowState = WindowState

const (
	windowJudged    = WindowJudged
	windowPersisted = WindowPersisted
	windowHeld      = WindowHeld
	windowRestarted = WindowRestarted
)

// velocity judges a velocity counter over its window (seed 10.4 step 5):
// never before the window is full, never extrapolated.
func velocity(d *countertable.Definition, ent *memEntry, snap CounterSnapshot, now time.Time, delta uint64) (measure, windowState) {
	window := d.Window()
	elapsed, w := Hold(window, snap.Timestamp, now, !ent.seen)
	if w == windowHeld || w == windowRestarted {
		return measure{}, w
	}
	rate := float64(delta) * float64(window) / float64(elapsed)
	return measure{delta: delta, elapsed: elapsed, rate: rate, perSec: float64(delta) / elapsed.Seconds(), breach: rate > d.Threshold}, w
}

// deltaOver judges a delta counter: the change since the last reading
// against the threshold, its rate over the last tick (Since) for the
// message.
func deltaOver(d *countertable.Definition, s *Sample, snap CounterSnapshot, now time.Time, delta uint64) measure {
	elapsed := now.Sub(snap.Timestamp)
	if s.Since.After(snap.Timestamp) && !s.Since.After(now) {
		elapsed = now.Sub(s.Since)
	}
	m := measure{delta: delta, elapsed: elapsed, breach: float64(delta) > d.Threshold}
	if elapsed > 0 {
		m.perSec = float64(delta) / elapsed.Seconds()
	}
	m.rate = m.perSec
	return m
}
