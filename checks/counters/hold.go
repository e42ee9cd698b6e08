package counters

import "time"

// WindowState says what a reading does to a held window.
type WindowState int

const (
	WindowJudged    WindowState = iota // a full window, judged; the next one starts now
	WindowPersisted                    // judged, and the new window's start must be saved
	WindowHeld                         // not full yet: the window's start holds
	WindowRestarted                    // restarted from this reading, not judged
)

// Hold is the one rule of a held window (seed 10.4 step 5), for the
// counter table's windowed rows and for every other check that judges
// counters over windows (checks/roce): a window that started at start is
// judged only once it is full (elapsed >= window) and never extrapolated.
// fresh says no reading of this window was judged in this process.
//
// It restarts the window, unjudged, when the wall clock was stepped back
// behind its start (holding would freeze it until the clock caught up,
// possibly days), and on the first reading in this process of a short
// window restored from the state file that is long overdue: a short
// window's rollovers are not saved, so its start may be far older than
// the window in progress when the daemon stopped, and averaging over it
// would dilute a burst; a lasting fault shows in the fresh window.
func Hold(window time.Duration, start, now time.Time, fresh bool) (elapsed time.Duration, st WindowState) {
	elapsed = now.Sub(start)
	switch {
	case elapsed < 0:
		return 0, WindowRestarted
	case elapsed < window:
		return elapsed, WindowHeld
	case window < PersistWindowFrom && fresh && elapsed > window+window/2:
		return elapsed, WindowRestarted
	case window >= PersistWindowFrom:
		return elapsed, WindowPersisted
	}
	return elapsed, WindowJudged
}
