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

// over is the one velocity judgement of both ends of a cable (seed 10.4
// step 5, DESIGN.md section 13 "judged as the near end is"): the increase
// since start, over the real time elapsed since start, never before a full
// window has elapsed (Hold) and never extrapolated from less. The local
// counters call it at each 1 s tick with the snapshot of their window in
// progress, the far end at each of its reads (a minute apart) with the
// start a Slide picks.
func over(window time.Duration, threshold float64, start CounterSnapshot, now time.Time, value uint64) (measure, windowState) {
	if window <= 0 {
		return measure{}, windowHeld
	}
	elapsed, w := Hold(window, start.Timestamp, now, false)
	if w == windowHeld || w == windowRestarted {
		return measure{}, w
	}
	delta := value - start.Value
	rate := float64(delta) * float64(window) / float64(elapsed)
	return measure{delta: delta, elapsed: elapsed, rate: rate, perSec: float64(delta) / elapsed.Seconds(), breach: rate > threshold}, windowJudged
}

// velocity judges a velocity counter over its window (seed 10.4 step 5):
// never before the window is full, never extrapolated. Hold decides
// whether the window is full, restarted or to be persisted; over judges it.
func velocity(d *countertable.Definition, ent *memEntry, snap CounterSnapshot, now time.Time, delta uint64) (measure, windowState) {
	window := d.Window()
	_, w := Hold(window, snap.Timestamp, now, !ent.seen)
	if w == windowHeld || w == windowRestarted {
		return measure{}, w
	}
	m, _ := over(window, d.Threshold, CounterSnapshot{Value: snap.Value, Timestamp: snap.Timestamp}, now, snap.Value+delta)
	return m, w
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
