package metrics

import (
	"sync/atomic"
	"time"
)

// pollBounds are the upper bounds of the poll-duration buckets. A poll of
// a 13-port node reads a few hundred small sysfs files and takes around a
// millisecond; the top buckets are there to show reads that hang in the
// kernel until their deadline.
const numBounds = 12

func pollBounds() [numBounds]time.Duration {
	return [numBounds]time.Duration{
		500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
		5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
		50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
		500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	}
}

// Metrics holds the only state the endpoint owns: the poll-duration
// histogram and when the last poll cycle completed. Everything else is
// read from the Source at scrape time. The zero value is not ready; use New.
type Metrics struct {
	bounds [numBounds]time.Duration
	// counts[i] counts observations in bucket i alone; counts[numBounds]
	// those above the last bound. Cumulated at scrape time.
	counts   [numBounds + 1]atomic.Uint64
	sumNanos atomic.Uint64
	lastDone atomic.Int64 // unix ns of the last ObservePoll; 0 = none yet
	now      func() time.Time
}

// New returns an empty Metrics.
func New() *Metrics {
	return &Metrics{bounds: pollBounds(), now: time.Now}
}

// ObservePoll records one completed poll cycle that took d. The poll loop
// calls it after every cycle; it is lock-free and does not allocate, so
// it never delays the loop whatever a scraper does. A negative d (which
// only a caller's arithmetic error can produce) counts as zero.
func (m *Metrics) ObservePoll(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := 0
	for i < numBounds && d > m.bounds[i] {
		i++
	}
	m.counts[i].Add(1)
	m.sumNanos.Add(uint64(d))
	m.lastDone.Store(m.now().UnixNano())
}

// lastPoll is when ObservePoll was last called (zero time if never).
func (m *Metrics) lastPoll() time.Time {
	ns := m.lastDone.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// histogramSnapshot reads the buckets. The reads are not one atomic step:
// an observation landing mid-read may show in the buckets but not yet in
// the sum (or the reverse). Because _count is derived from the buckets it
// always equals the +Inf bucket, which is the invariant scrapers check;
// the sum is off by at most one poll.
func (m *Metrics) histogramSnapshot(counts *[numBounds + 1]uint64) (bounds [numBounds]float64, sum float64) {
	for i := range m.counts {
		counts[i] = m.counts[i].Load()
	}
	for i, b := range m.bounds {
		bounds[i] = b.Seconds()
	}
	return bounds, float64(m.sumNanos.Load()) / 1e9
}
