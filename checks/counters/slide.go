package counters

import (
	"slices"
	"time"
)

// SlideSteps is how many window starts a Slide keeps per window: a start
// every window/SlideSteps, so a judged window covers at least its unit and
// at most 1/SlideSteps more (an hour's window is judged over 60 to 65
// minutes of reads, never less).
const SlideSteps = 12

// MaxSlideStarts bounds a Slide's starts, whatever a state file says.
const MaxSlideStarts = 2*SlideSteps + 2

// Slide is a velocity window that slides along readings that come far
// apart (the far end's, a [farEnd] interval apart): at each reading it is
// judged by the same rule as the local counters' windows (over), from the
// newest start that is at least a full window old, so a per-second rule
// is judged over the real time between two reads, a per-minute one over
// at least a minute and a per-hour one only once an hour of reads exists,
// and then at every read over the last hour (a burst that straddles two
// consecutive windows is still seen in one). It is bounded (MaxSlideStarts)
// and made to be persisted: a restart resumes it.
type Slide struct {
	Starts []CounterSnapshot `json:"starts,omitempty"`
	// JudgedTo is the reading that ended the last judged window (zero
	// before the first). A window never starts after it: the judged
	// windows leave no gap between them, so errors that fell while a
	// window was not yet full are always in the next one judged.
	JudgedTo time.Time `json:"judgedTo,omitempty"`
}

// Verdict is a Slide's judgement of one reading.
type Verdict struct {
	// Judged says a full window was there to judge; the rest is valid
	// only then.
	Judged bool
	// Delta is the increase over Elapsed; Rate is per window (the
	// definition's unit), PerSec per second.
	Delta   uint64
	Elapsed time.Duration
	Rate    float64
	PerSec  float64
	Breach  bool
}

// Judge takes one reading (value at now) and judges the window that ends
// with it against threshold per window. A value below the newest start
// (the counter was cleared) or a clock stepped back restarts the slide
// from this reading, unjudged.
func (s *Slide) Judge(window time.Duration, threshold float64, now time.Time, value uint64) Verdict {
	n := len(s.Starts)
	if n == 0 || value < s.Starts[n-1].Value || now.Before(s.Starts[n-1].Timestamp) || window <= 0 {
		s.Restart(now, value)
		return Verdict{}
	}
	// The newest start a full window old that leaves no gap after the
	// last judged window (before the first, the oldest start): the least
	// diluted full window that misses nothing.
	i := -1
	for j := n - 1; j >= 0; j-- {
		st := s.Starts[j].Timestamp
		if now.Sub(st) >= window && (j == 0 || !s.JudgedTo.IsZero() && !st.After(s.JudgedTo)) {
			i = j
			break
		}
	}
	var v Verdict
	if i >= 0 {
		m, w := over(window, threshold, s.Starts[i], now, value)
		if w == windowJudged {
			v = Verdict{Judged: true, Delta: m.delta, Elapsed: m.elapsed, Rate: m.rate, PerSec: m.perSec, Breach: m.breach}
			s.JudgedTo = now
		}
		// Starts older than the one judged can no longer start a
		// window: the window slides past them.
		s.Starts = slices.Delete(s.Starts, 0, i)
	}
	if last := s.Starts[len(s.Starts)-1]; now.Sub(last.Timestamp) >= window/SlideSteps && now.After(last.Timestamp) {
		s.Starts = append(s.Starts, CounterSnapshot{Value: value, Timestamp: now})
	}
	if len(s.Starts) > MaxSlideStarts {
		s.Starts = slices.Delete(s.Starts, 0, len(s.Starts)-MaxSlideStarts)
	}
	return v
}

// Restart starts the slide over from one reading: a new baseline (a new
// peer, a cleared counter, an acknowledgement).
func (s *Slide) Restart(now time.Time, value uint64) {
	s.Starts = append(s.Starts[:0], CounterSnapshot{Value: value, Timestamp: now})
	s.JudgedTo = time.Time{}
}

// Valid reports whether a Slide read back from a state file could have
// been written by Judge: bounded, every start timed, in time order, never
// decreasing.
func (s *Slide) Valid() bool {
	if len(s.Starts) > MaxSlideStarts {
		return false
	}
	for i, st := range s.Starts {
		if st.Timestamp.IsZero() {
			return false
		}
		if i > 0 && (st.Timestamp.Before(s.Starts[i-1].Timestamp) || st.Value < s.Starts[i-1].Value) {
			return false
		}
	}
	return true
}
